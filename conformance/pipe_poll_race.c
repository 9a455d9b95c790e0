// SPDX-License-Identifier: MIT
/*
 * pipe_poll_race: a poll() or epoll_wait() that starts while the peer makes
 * the pipe ready is never left asleep.
 *
 * Round after round, a child waits in poll() (odd rounds) or epoll_wait()
 * (even rounds) for the read end to become readable, while the parent
 * writes one byte after a short random delay, so that the write lands
 * before, during and after the child queues itself.  Then the same for the
 * write end of a full one-page pipe, which the parent drains.  A wakeup
 * that finds no waiter has to be matched by a waiter that sees the new
 * state; a missed one leaves the child asleep past its deadline (10 s,
 * scaled under emulation), which fails the test.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "ct.h"

#define ROUNDS	5000

static int data[2], ack[2];
static long page;
static uint64_t seed;

/* Wait until @fd has @events, by poll() or epoll; 0, or 1 if the wait timed out. */
static int wait_ready(int ep, int fd, short events, bool use_epoll, int timeout_ms)
{
	struct epoll_event ev;
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	do {
		n = use_epoll ? epoll_wait(ep, &ev, 1, timeout_ms) : poll(&p, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		ct_fatal("%s: %m", use_epoll ? "epoll_wait" : "poll");
	return n == 0;
}

static int poller(void *arg)
{
	bool out = arg != NULL;
	int fd = out ? data[1] : data[0], timeout = (int)(ct_scale(10) * 1000), ep, r;
	struct epoll_event ev = { .events = out ? EPOLLOUT : EPOLLIN };
	static char buf[1 << 16];

	close(out ? data[0] : data[1]);
	close(ack[0]);
	ep = epoll_create1(0);
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		return 2;
	for (r = 0; r < ROUNDS; r++) {
		if (wait_ready(ep, fd, out ? POLLOUT : POLLIN, r & 1, timeout)) {
			ct_log("%s round %d: %s slept past its deadline", out ? "POLLOUT" : "POLLIN",
			       r, r & 1 ? "epoll_wait" : "poll");
			return 1;
		}
		/* Undo what the parent did, then let it start the next round */
		if ((out ? write(fd, buf, page) : read(fd, buf, 1)) != (out ? page : 1))
			return 2;
		if (write(ack[1], "a", 1) != 1)
			return 2;
	}
	return 0;
}

static void run(bool out)
{
	static char buf[1 << 16];
	uint64_t rng = (seed + out) | 1;
	pid_t pid;
	int r, status;
	char a;

	if (pipe(data) || pipe(ack))
		ct_fatal("pipe: %m");
	if (out) {
		if (fcntl(data[1], F_SETPIPE_SZ, page) < 0)
			ct_fatal("F_SETPIPE_SZ: %m");
		if (write(data[1], buf, page) != page)
			ct_fatal("fill: %m");
	}
	pid = ct_spawn(poller, out ? "out" : NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	close(out ? data[1] : data[0]);
	close(ack[1]);
	for (r = 0; r < ROUNDS; r++) {
		/* 0 to about 20 us: before, during or after the poller queues itself */
		uint64_t until = ct_now_ns() + rng_next(&rng) % 20000;

		while (ct_now_ns() < until)
			;
		if ((out ? read(data[0], buf, page) : write(data[1], "d", 1)) != (out ? page : 1))
			ct_fatal("%s: %m", out ? "read" : "write");
		if (read(ack[0], &a, 1) != 1)
			break;		/* the poller gave up: its status says why */
	}
	status = ct_wait(pid);
	ct_expect(status == 0, "%s: poller failed (status %#x) after %d rounds",
		  out ? "POLLOUT" : "POLLIN", status, r);
	close(out ? data[0] : data[1]);
	close(ack[0]);
}

int main(void)
{
	page = sysconf(_SC_PAGESIZE);
	ct_watchdog(300, "pipe_poll_race: a round never ended");
	seed = ct_seed();
	run(false);
	run(true);
	return ct_result();
}
