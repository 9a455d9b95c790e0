// SPDX-License-Identifier: MIT
/*
 * pipe_tee_integrity: tee(2) duplicates pipe content into a second pipe
 * without consuming it.
 *  - a writer process streams 16 MiB into pipe A with writes of random
 *    sizes; the parent tees A into B with random lengths, then reads exactly
 *    what tee reported from both A and B: both copies must be the stream;
 *  - tee with SPLICE_F_NONBLOCK on an empty pipe is EAGAIN, and tee from an
 *    empty pipe whose writers are gone returns 0;
 *  - tee between the two ends of the same pipe is EINVAL.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

#define TOTAL	(16u << 20)

static uint64_t seed;
static int a[2], b[2];

static int writer(void *arg)
{
	(void)arg;
	close(a[0]);
	close(b[0]);
	close(b[1]);
	return ct_pattern_write_stream(a[1], TOTAL, seed, seed ^ 5) ? 1 : 0;
}

static bool take(int fd, char *buf, size_t n, uint64_t off, const char *which)
{
	int ret = read_full(fd, buf, n);
	ssize_t bad;

	if (!ct_expect(ret == 0, "%s: reading the %zu bytes tee reported: %s", which, n,
		       strerror(-ret)))
		return false;
	bad = ct_pattern_check(buf, n, seed, off);
	return ct_expect(bad < 0, "%s: byte %llu differs", which,
			 (unsigned long long)(off + bad));
}

int main(void)
{
	uint64_t rng, off = 0;
	char *buf;
	int status;
	pid_t pid;

	ct_watchdog(60, "pipe_tee_integrity: transfer stalled");
	seed = ct_seed();
	rng = seed ^ 6;
	buf = malloc(1 << 17);
	if (!buf || pipe(a) || pipe(b))
		ct_fatal("setup: %m");

	ct_expect_errno(tee(a[0], b[1], 4096, SPLICE_F_NONBLOCK), EAGAIN,
			"tee from an empty pipe, SPLICE_F_NONBLOCK");
	ct_expect_errno(tee(a[0], a[1], 4096, SPLICE_F_NONBLOCK), EINVAL,
			"tee from a pipe into itself");

	pid = ct_spawn(writer, NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	close(a[1]);
	for (;;) {
		size_t want = 1 + rng_next(&rng) % (1 << 17);
		ssize_t n = tee(a[0], b[1], want, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ct_fatal("tee: %m");
		if (n == 0)
			break;
		if (!take(a[0], buf, n, off, "source pipe") || !take(b[0], buf, n, off, "tee copy")) {
			/*
			 * Already failed.  Drop the read end so the writer gets
			 * EPIPE now instead of blocking on a full pipe until the
			 * watchdog fires.
			 */
			close(a[0]);
			ct_wait(pid);
			return ct_result();
		}
		off += n;
	}
	status = ct_wait(pid);
	ct_expect(status == 0, "writer status %#x", status);
	ct_expect(off == TOTAL, "tee: %llu of %u bytes duplicated", (unsigned long long)off, TOTAL);
	ct_expect(tee(a[0], b[1], 4096, 0) == 0, "tee from a drained pipe with no writer: %m");
	return ct_result();
}
