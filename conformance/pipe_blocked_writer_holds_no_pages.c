// SPDX-License-Identifier: MIT
/*
 * pipe_blocked_writer_holds_no_pages: a writer asleep on a full pipe holds
 * no pages for the data it has not written yet.
 *
 * WRITERS pipes are filled, and one child per pipe then blocks in a write
 * to it.  The children are forked first and wait for a start signal, so
 * that what is counted is their writes, not their creation.  The witness
 * is /proc/vmstat pgalloc_* (the page allocator's own count, needs
 * CONFIG_VM_EVENT_COUNTERS) from the start signal to when every writer
 * sleeps, with 1-byte writes (twice: the control) and with 64 KiB writes.
 * A kernel that allocates a write's pages before it looks for room, and
 * keeps them while the writer sleeps, allocates several pages per 64 KiB
 * writer; the test allows half a page per writer more than the controls.
 * The counter is system-wide, and other work only adds to it (a burst of
 * several hundred pages now and then on an idle machine), so each kind runs
 * ROUNDS times, interleaved, and the smallest count of each is compared: a
 * kernel that holds pages does so in every round.  When the two smallest
 * control counts still differ by more than a quarter of a page per writer,
 * the machine is too busy to count on and the test skips.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct.h"

#define WRITERS		64
#define BIG_WRITE	(64 << 10)
#define ROUNDS		4	/* 2 x 4 x WRITERS children: ct_spawn() allows 512 */

static char buf[BIG_WRITE];

struct job {
	int fd;		/* the full pipe to write to */
	int go[2];	/* the start pipe: EOF on go[0] means start */
	size_t size;
};

static int writer(void *arg)
{
	const struct job *j = arg;
	char c;

	close(j->go[1]);
	if (read(j->go[0], &c, 1) != 0)
		return 1;
	/* Blocks until the parent drains the pipe. */
	return write(j->fd, buf, j->size) != (ssize_t)j->size;
}

/*
 * Pages allocated from the start signal until WRITERS writers of @size
 * sleep; *@charged: how much memory.stat "kernel" grew meanwhile, or -1.
 */
static long long run(size_t size, long long *charged)
{
	static char fill[4096];
	struct job jobs[WRITERS];
	pid_t pids[WRITERS];
	int rd[WRITERS], go[2], i;
	long long a0, a1, k0, k1;

	if (pipe(go))
		ct_fatal("pipe: %m");
	for (i = 0; i < WRITERS; i++) {
		int fds[2];

		if (pipe2(fds, O_NONBLOCK))
			ct_fatal("pipe2: %m");
		while (write(fds[1], fill, sizeof(fill)) > 0)
			;
		if (errno != EAGAIN)
			ct_fatal("filling pipe %d: %m", i);
		if (fcntl(fds[1], F_SETFL, 0))
			ct_fatal("fcntl: %m");
		rd[i] = fds[0];
		jobs[i] = (struct job){ .fd = fds[1], .go = { go[0], go[1] }, .size = size };
	}
	for (i = 0; i < WRITERS; i++)
		if ((pids[i] = ct_spawn(writer, &jobs[i])) < 0)
			ct_fatal("spawning writer %d: %s", i, strerror((int)-pids[i]));
	for (i = 0; i < WRITERS; i++)
		if (ct_wait_sleeping(pids[i], ct_scale(10) * 1000))
			ct_fatal("writer %d of %zu bytes never waited for the start", i, size);

	a0 = ct_pgalloc();
	k0 = ct_memcg_stat("kernel");
	close(go[1]);
	for (i = 0; i < WRITERS; i++)
		if (ct_wait_sleeping(pids[i], ct_scale(10) * 1000))
			ct_fatal("writer %d of %zu bytes never slept on its full pipe", i, size);
	a1 = ct_pgalloc();
	k1 = ct_memcg_stat("kernel");
	*charged = k0 < 0 || k1 < 0 ? -1 : k1 - k0;

	/* Drain each pipe until its writer has written all and exited. */
	for (i = 0; i < WRITERS; i++) {
		int st, done;

		while (!(done = ct_try_wait(pids[i], &st)))
			if (read(rd[i], fill, sizeof(fill)) < 0 && errno == EAGAIN)
				ct_sleep_ms(1);
		if (done < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			ct_fatal("writer %d of %zu bytes: wait status %#x", i, size, st);
		close(rd[i]);
		close(jobs[i].fd);
	}
	close(go[0]);
	return a1 - a0;
}

static long long min_ll(long long a, long long b)
{
	return a < b ? a : b;
}

/* The smallest two of the values seen: the control's count and how far it is from the next. */
static void keep_smallest(long long *lo, long long *next, long long v)
{
	if (v < *lo) {
		*next = *lo;
		*lo = v;
	} else if (v < *next) {
		*next = v;
	}
}

int main(void)
{
	long long small = LLONG_MAX, small_next = LLONG_MAX, big = LLONG_MAX;
	long long k_small = -1, k_big = -1, k, noise;
	int i;

	if (ct_pgalloc() < 0)
		ct_skip("no pgalloc counters in /proc/vmstat (CONFIG_VM_EVENT_COUNTERS off)");
	memset(buf, 'x', sizeof(buf));		/* no page faults while counting */
	ct_watchdog(120, "pipe_blocked_writer_holds_no_pages: a writer did not finish");

	for (i = 0; i < ROUNDS; i++) {
		keep_smallest(&small, &small_next, run(1, &k));
		if (!i)
			k_small = k;
		big = min_ll(big, run(BIG_WRITE, &k));
		if (!i)
			k_big = k;
	}
	ct_log("pages allocated until %d writers sleep, smallest of %d rounds: %lld and next %lld (1 byte each), %lld (64 KiB each)",
	       WRITERS, ROUNDS, small, small_next, big);
	/* What stays charged, as the memcg shows it (flushed lazily): a record, not a verdict. */
	if (k_small >= 0 && k_big >= 0)
		ct_log("memory.stat kernel while they sleep: %+lld bytes (1 byte each), %+lld bytes (64 KiB each)",
		       k_small, k_big);
	noise = small_next - small;
	if (noise > WRITERS / 4)
		ct_skip("the two smallest control runs differ by %lld pages: too busy a machine to count on",
			noise);
	ct_expect(big - small < WRITERS / 2,
		  "64 KiB writers allocated %lld pages where 1-byte writers allocated %lld (smallest of %d rounds each, %d writers)",
		  big, small, ROUNDS, WRITERS);
	return ct_result();
}
