// SPDX-License-Identifier: MIT
/*
 * pipe_resize_under_load: F_SETPIPE_SZ, up and down, while a writer and a
 * reader stream through the pipe keeps every byte, in order.
 *
 * A writer streams 16 MiB of a pattern in random-sized writes, a reader
 * checks every byte, and meanwhile the parent resizes the pipe through its
 * own descriptor, cycling from one page to 1 MiB and back.  A shrink below
 * what the pipe holds must fail with EBUSY and change nothing; any other
 * error, a byte out of place or a stream that stops is a failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct.h"

#define STREAM		(16u << 20)

static int fds[2];
static uint64_t seed, rng_w, rng_r;

static int writer(void *arg)
{
	(void)arg;
	close(fds[0]);
	return ct_pattern_write_stream(fds[1], STREAM, seed, rng_w) ? 1 : 0;
}

static int reader(void *arg)
{
	uint64_t len;
	int64_t bad;

	(void)arg;
	close(fds[1]);
	if (ct_pattern_read_stream(fds[0], seed, rng_r, &len, &bad))
		return 1;
	if (bad >= 0) {
		ct_log("byte %lld differs", (long long)bad);
		return 1;
	}
	if (len != STREAM) {
		ct_log("read %llu bytes, want %u", (unsigned long long)len, STREAM);
		return 1;
	}
	return 0;
}

/* Reap @pid if it has ended, and check that it succeeded. */
static void reap(pid_t *pid, const char *who)
{
	int status, rc;

	if (!*pid)
		return;
	rc = ct_try_wait(*pid, &status);
	if (rc < 0)
		ct_fatal("wait for the %s: %s", who, strerror(-rc));
	if (rc == 1) {
		ct_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "%s failed (status %#x)", who, status);
		*pid = 0;
	}
}

int main(void)
{
	long page = sysconf(_SC_PAGESIZE);
	const long sizes[] = { 1, 2, 16, 64, 256, 16, 4, 1 };
	unsigned long resized = 0, busy = 0;
	unsigned int i = 0;
	pid_t w, r;

	ct_watchdog(120, "pipe_resize_under_load: the stream stopped");
	seed = ct_seed();
	rng_w = seed * 3 + 1;
	rng_r = seed * 5 + 7;
	if (pipe(fds))
		ct_fatal("pipe: %m");
	w = ct_spawn(writer, NULL);
	r = ct_spawn(reader, NULL);
	if (w < 0 || r < 0)
		ct_fatal("fork: %s", strerror(w < 0 ? -w : -r));
	close(fds[1]);

	while (w || r) {
		long size = sizes[i++ % (sizeof(sizes) / sizeof(sizes[0]))] * page;

		if (fcntl(fds[0], F_SETPIPE_SZ, size) >= 0)
			resized++;
		else if (errno == EBUSY)
			busy++;
		else
			ct_fatal("F_SETPIPE_SZ %ld: %m", size);
		reap(&w, "writer");
		reap(&r, "reader");
		usleep(50);
	}
	ct_log("%lu resizes, %lu refused with EBUSY", resized, busy);
	ct_expect(resized > 0, "no resize succeeded");
	return ct_result();
}
