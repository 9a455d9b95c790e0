// SPDX-License-Identifier: MIT
/*
 * pipe_nonblock_eagain: with O_NONBLOCK, reading an empty pipe and writing
 * a full one fail with EAGAIN at once and move no data; an empty pipe with
 * no writer left reads as EOF (0), not EAGAIN.
 *
 * Checked for pipe2(O_NONBLOCK) and for O_NONBLOCK set later with fcntl.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ct.h"

static int queued(int fd)
{
	int n = -1;

	if (ioctl(fd, FIONREAD, &n) < 0)
		ct_fatal("FIONREAD: %m");
	return n;
}

static void check(bool use_pipe2)
{
	const char *how = use_pipe2 ? "pipe2(O_NONBLOCK)" : "fcntl(O_NONBLOCK)";
	static char buf[1 << 16];
	long total = 0;
	int fds[2], size;
	ssize_t n;

	if (use_pipe2) {
		if (pipe2(fds, O_NONBLOCK))
			ct_fatal("pipe2: %m");
	} else {
		if (pipe(fds))
			ct_fatal("pipe: %m");
		if (fcntl(fds[0], F_SETFL, O_NONBLOCK) || fcntl(fds[1], F_SETFL, O_NONBLOCK))
			ct_fatal("F_SETFL: %m");
	}
	size = fcntl(fds[0], F_GETPIPE_SZ);

	ct_expect_errno(read(fds[0], buf, 1), EAGAIN, how);
	ct_expect_errno(read(fds[0], buf, sizeof(buf)), EAGAIN, how);

	/* Fill it with one-byte writes: every one must succeed, then EAGAIN. */
	for (;;) {
		n = write(fds[1], "z", 1);
		if (n != 1)
			break;
		total++;
		if (total > size) {
			ct_expect(0, "%s: %ld bytes fit into a %d-byte pipe", how, total, size);
			break;
		}
	}
	ct_expect(n == -1 && errno == EAGAIN, "%s: filling stopped with %zd/%s",
		  how, n, ct_errname(errno));
	ct_expect(total == size, "%s: %ld one-byte writes fit, pipe size %d", how, total, size);
	ct_expect_errno(write(fds[1], buf, 1), EAGAIN, how);
	ct_expect_errno(write(fds[1], buf, sizeof(buf)), EAGAIN, how);
	ct_expect(queued(fds[0]) == total, "%s: EAGAIN writes changed the content (%d, want %ld)",
		  how, queued(fds[0]), total);

	/* Drain; empty again gives EAGAIN, and EOF once the writer is gone. */
	while ((n = read(fds[0], buf, sizeof(buf))) > 0)
		total -= n;
	ct_expect(n == -1 && errno == EAGAIN && total == 0,
		  "%s: draining ended with %zd/%s, %ld bytes missing", how, n,
		  ct_errname(errno), total);
	close(fds[1]);
	n = read(fds[0], buf, 1);
	ct_expect(n == 0, "%s: read with no writer: %zd/%s, want 0 (EOF)", how, n,
		  n < 0 ? ct_errname(errno) : "-");
	close(fds[0]);
}

int main(void)
{
	ct_watchdog(30, "pipe_nonblock_eagain: a non-blocking call blocked");
	check(true);
	check(false);
	return ct_result();
}
