// SPDX-License-Identifier: MIT
/*
 * pipe_vmsplice_integrity: vmsplice(2) moves user memory through a pipe
 * intact, in both directions.
 *  - user pages -> pipe -> read(): a child vmsplices 16 MiB of page-aligned
 *    buffers (iovecs of several segments, partial transfers resumed), the
 *    parent reads and checks every byte.  The buffers are never written
 *    again after being spliced: vmsplice without SPLICE_F_GIFT hands the
 *    pages themselves to the pipe, so reuse would be our bug, not the
 *    kernel's;
 *  - user pages -> pipe -> splice() -> file: the zero-copy path of the
 *    fast-pipes experiment; the file must equal the buffers;
 *  - write() -> pipe -> vmsplice() into user memory (the read direction,
 *    which copies).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ct.h"

#define TOTAL	(16u << 20)

static uint64_t seed;
static int p[2];
static char *src;

/* vmsplice all of [buf, buf+len) as three iovec segments, resuming partials. */
static int vmsplice_all(int fd, char *buf, size_t len)
{
	size_t third = len / 3;
	struct iovec iov[3] = {
		{ buf, third }, { buf + third, third }, { buf + 2 * third, len - 2 * third },
	};
	struct iovec *v = iov;
	int nr = 3;

	while (nr) {
		ssize_t n = vmsplice(fd, v, nr, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		while (n && nr) {
			size_t k = (size_t)n < v->iov_len ? (size_t)n : v->iov_len;

			v->iov_base = (char *)v->iov_base + k;
			v->iov_len -= k;
			n -= k;
			if (!v->iov_len) {
				v++;
				nr--;
			}
		}
	}
	return 0;
}

static int gifting_writer(void *arg)
{
	uint64_t rng = seed ^ 7, off = 0;

	(void)arg;
	close(p[0]);
	while (off < TOTAL) {
		size_t n = 4096 * (1 + rng_next(&rng) % 64) + rng_next(&rng) % 4096;

		if (n > TOTAL - off)
			n = TOTAL - off;
		if (vmsplice_all(p[1], src + off, n))
			return 1;
		off += n;
	}
	return 0;
}

/* A fresh pipe that @fn, in a child, writes into; we keep the read end. */
static pid_t start_writer(int (*fn)(void *))
{
	pid_t pid;

	if (pipe(p))
		ct_fatal("setup: %m");
	pid = ct_spawn(fn, NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	close(p[1]);
	return pid;
}

/*
 * Close the read end and reap the writer: its wait status.  Each run checks
 * the status itself, so that a failure names the run's line.
 */
static int reap_writer(pid_t pid)
{
	close(p[0]);
	return ct_wait(pid);
}

static void to_reader(void)
{
	uint64_t off;
	int status, ret;
	int64_t bad;
	pid_t pid;

	pid = start_writer(gifting_writer);
	ret = ct_pattern_read_stream(p[0], seed, seed ^ 8, &off, &bad);
	if (ret)
		ct_fatal("setup: %s", strerror(-ret));
	ct_expect(bad < 0, "vmsplice->read: byte %llu differs", (unsigned long long)bad);
	status = reap_writer(pid);
	ct_expect(status == 0, "vmsplice writer status %#x", status);
	ct_expect(off == TOTAL, "vmsplice->read: %llu of %u bytes", (unsigned long long)off,
		  TOTAL);
}

static void to_file(void)
{
	int out = ct_tmpfile(), status;
	char *buf = malloc(1 << 20);
	loff_t off = 0;
	pid_t pid;

	if (!buf || out < 0)
		ct_fatal("setup: %m");
	pid = start_writer(gifting_writer);
	for (;;) {
		ssize_t n = splice(p[0], NULL, out, &off, 1 << 20, SPLICE_F_MOVE);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ct_fatal("splice pipe->file: %m");
		if (n == 0)
			break;
	}
	status = reap_writer(pid);
	ct_expect(status == 0, "vmsplice writer status %#x", status);
	ct_expect(off == TOTAL, "vmsplice->splice->file: %lld of %u bytes", (long long)off,
		  TOTAL);
	for (off = 0; off < TOTAL; off += 1 << 20) {
		if (pread(out, buf, 1 << 20, off) != 1 << 20)
			ct_fatal("pread: %m");
		if (!ct_expect(ct_pattern_check(buf, 1 << 20, seed, off) < 0,
			       "vmsplice->splice->file: MiB at %lld differs", (long long)off))
			break;
	}
	close(out);
	free(buf);
}

static int plain_writer(void *arg)
{
	(void)arg;
	close(p[0]);
	return write_full(p[1], src, TOTAL) ? 1 : 0;
}

static void from_pipe(void)
{
	char *dst = aligned_alloc(4096, TOTAL);
	uint64_t off = 0;
	int status;
	pid_t pid;

	if (!dst)
		ct_fatal("setup: %m");
	memset(dst, 0, TOTAL);
	pid = start_writer(plain_writer);
	while (off < TOTAL) {
		struct iovec iov = { dst + off, TOTAL - off };
		ssize_t n = vmsplice(p[0], &iov, 1, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ct_fatal("vmsplice from the read end: %m");
		if (n == 0)
			break;
		off += n;
	}
	status = reap_writer(pid);
	ct_expect(status == 0, "writer status %#x", status);
	ct_expect(off == TOTAL, "pipe->vmsplice: %llu of %u bytes", (unsigned long long)off,
		  TOTAL);
	ct_expect(ct_pattern_check(dst, TOTAL, seed, 0) < 0, "pipe->vmsplice: data differs");
	free(dst);
}

int main(void)
{
	ct_watchdog(60, "pipe_vmsplice_integrity: transfer stalled");
	seed = ct_seed();
	src = aligned_alloc(4096, TOTAL);
	if (!src)
		ct_fatal("aligned_alloc");
	ct_pattern_fill(src, TOTAL, seed, 0);
	to_reader();
	to_file();
	from_pipe();
	return ct_result();
}
