// SPDX-License-Identifier: MIT
/*
 * pipe_packet_mode: a pipe opened with O_DIRECT works in packet mode
 * (pipe(2), Linux 3.4+):
 *  - each write() is one packet, and a read() returns at most one packet,
 *    however large the buffer;
 *  - a read() smaller than the packet returns the first bytes and discards
 *    the rest of that packet;
 *  - a write larger than PIPE_BUF is split into PIPE_BUF-sized packets.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

int main(void)
{
	static char in[3 * PIPE_BUF], out[4 * PIPE_BUF];
	static const size_t sizes[] = { 1, 7, 100, 512, PIPE_BUF - 1, PIPE_BUF };
	int fds[2];
	size_t i;
	ssize_t n;

	ct_watchdog(30, "pipe_packet_mode: a read blocked");
	if (pipe2(fds, O_DIRECT)) {
		if (errno == EINVAL)
			ct_skip("pipe2(O_DIRECT) not supported (kernel before 3.4)");
		ct_fatal("pipe2(O_DIRECT): %m");
	}
	ct_expect(fcntl(fds[1], F_GETFL) & O_DIRECT, "O_DIRECT not in F_GETFL");

	/* Packet boundaries survive: one read per write, even with room for more. */
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ct_pattern_fill(in, sizes[i], i, 0);
		if (write(fds[1], in, sizes[i]) != (ssize_t)sizes[i])
			ct_fatal("write %zu: %m", sizes[i]);
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		n = read(fds[0], out, sizeof(out));
		ct_expect(n == (ssize_t)sizes[i], "packet %zu: read returned %zd, want %zu",
			  i, n, sizes[i]);
		if (n > 0)
			ct_expect(ct_pattern_check(out, n, i, 0) < 0, "packet %zu: wrong bytes", i);
	}

	/* A short read takes the head of a packet and drops its tail. */
	ct_pattern_fill(in, 300, 11, 0);
	if (write(fds[1], in, 300) != 300 || write(fds[1], "next", 4) != 4)
		ct_fatal("write: %m");
	n = read(fds[0], out, 10);
	ct_expect(n == 10 && ct_pattern_check(out, 10, 11, 0) < 0,
		  "short read of a 300-byte packet: %zd", n);
	n = read(fds[0], out, sizeof(out));
	ct_expect(n == 4 && !memcmp(out, "next", 4),
		  "after a short read the next read returned %zd bytes, want the next packet (4)",
		  n);

	/* Writes over PIPE_BUF become PIPE_BUF-sized packets. */
	ct_pattern_fill(in, sizeof(in) - 5, 12, 0);
	if (write(fds[1], in, sizeof(in) - 5) != (ssize_t)sizeof(in) - 5)
		ct_fatal("write: %m");
	for (i = 0; i < 3; i++) {
		size_t want = i < 2 ? PIPE_BUF : PIPE_BUF - 5;

		n = read(fds[0], out, sizeof(out));
		ct_expect(n == (ssize_t)want, "large write, packet %zu: %zd bytes, want %zu",
			  i, n, want);
		if (n > 0)
			ct_expect(ct_pattern_check(out, n, 12, i * PIPE_BUF) < 0,
				  "large write, packet %zu: wrong bytes", i);
	}
	fcntl(fds[0], F_SETFL, O_NONBLOCK | O_DIRECT);
	ct_expect_errno(read(fds[0], out, 1), EAGAIN, "pipe should be empty now");
	return ct_result();
}
