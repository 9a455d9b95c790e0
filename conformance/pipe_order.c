// SPDX-License-Identifier: MIT
/*
 * pipe_order: bytes come out of a pipe in the order they went in.
 *
 * A child writes a 16 MiB pattern (each byte a function of its offset) with
 * writes of random sizes, 1 byte to 200 KiB, across small and large pipe
 * sizes; the parent reads with reads of other random sizes and checks every
 * byte against its offset.  A reordered, lost or duplicated byte shows up as
 * the first mismatching offset.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

#define TOTAL		(16u << 20)
#define MAX_CHUNK	(200u << 10)

struct writer_args {
	int fd;
	int rfd;		/* the read end, closed in the writer */
	uint64_t seed;
};

static int writer(void *arg)
{
	struct writer_args *w = arg;
	uint64_t rng = w->seed ^ 0x5157, off = 0;
	char *buf = malloc(MAX_CHUNK);

	close(w->rfd);
	if (!buf)
		return EXIT_FAIL;
	while (off < TOTAL) {
		size_t n = 1 + rng_next(&rng) % MAX_CHUNK;

		/* Mostly small writes, which merge into partly filled pages. */
		if (rng_next(&rng) % 4)
			n = 1 + n % 700;
		if (n > TOTAL - off)
			n = TOTAL - off;
		ct_pattern_fill(buf, n, w->seed, off);
		if (write_full(w->fd, buf, n) < 0)
			return EXIT_FAIL;
		off += n;
	}
	free(buf);
	return EXIT_OK;
}

static int check_one_pipe(long pipe_size, uint64_t seed)
{
	struct writer_args w = { .seed = seed };
	uint64_t rng = seed ^ 0x7ead, off = 0;
	int fds[2], status, ret = 0;
	char *buf;
	pid_t pid;

	buf = malloc(MAX_CHUNK);
	if (!buf)
		ct_fatal("malloc");
	if (pipe(fds))
		ct_fatal("pipe: %m");
	if (pipe_size && fcntl(fds[1], F_SETPIPE_SZ, pipe_size) < 0)
		ct_fatal("F_SETPIPE_SZ %ld: %m", pipe_size);
	w.fd = fds[1];
	w.rfd = fds[0];
	pid = ct_spawn(writer, &w);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	close(fds[1]);

	for (;;) {
		size_t want = 1 + rng_next(&rng) % MAX_CHUNK;
		ssize_t n, bad;

		if (rng_next(&rng) % 3 == 0)
			want = 1 + want % 300;
		n = read(fds[0], buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ct_expect(0, "read: %m");
			ret = -1;
			break;
		}
		if (n == 0)
			break;
		bad = ct_pattern_check(buf, n, seed, off);
		if (!ct_expect(bad < 0, "pipe size %ld: byte at offset %llu out of order",
			       pipe_size, (unsigned long long)(off + bad))) {
			ret = -1;
			break;
		}
		off += n;
	}
	close(fds[0]);
	status = ct_wait(pid);
	if (ret == 0) {
		ct_expect(off == TOTAL, "pipe size %ld: read %llu bytes, wrote %u",
			  pipe_size, (unsigned long long)off, TOTAL);
		ct_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "writer failed (status %#x)", status);
	}
	free(buf);
	return ret;
}

int main(void)
{
	static const long sizes[] = { 0, 4096, 8192, 1 << 20 };
	uint64_t seed = ct_seed();
	size_t i;

	ct_watchdog(60, "pipe_order transfer stalled");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (sizes[i] > ct_sysctl_read("fs/pipe-max-size") && !ct_is_root())
			continue;
		check_one_pipe(sizes[i], seed + i);
	}
	return ct_result();
}
