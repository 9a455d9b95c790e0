// SPDX-License-Identifier: MIT
/*
 * mq_poll_race: a poll() or epoll_wait() on a message queue that starts
 * while the peer makes the queue ready is never left asleep.
 *
 * Round after round, a child waits in poll() (odd rounds) or epoll_wait()
 * (even rounds) for an empty queue to become readable, while the parent
 * sends one message after a short random delay, so that the send lands
 * before, during and after the child queues itself.  Then the same for a
 * full queue (depth 1) to become writable, which the parent empties.  A
 * missed wakeup leaves the child asleep past its deadline (10 s, scaled
 * under emulation), which fails the test.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "ct.h"

#define ROUNDS	3000

static mqd_t q;
static int ack[2];
static uint64_t seed;

static int wait_ready(int ep, short events, bool use_epoll, int timeout_ms)
{
	struct epoll_event ev;
	struct pollfd p = { .fd = (int)q, .events = events };
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
	int timeout = (int)(ct_scale(10) * 1000), ep, r;
	struct epoll_event ev = { .events = out ? EPOLLOUT : EPOLLIN };
	char m = 'm';

	close(ack[0]);
	ep = epoll_create1(0);
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, (int)q, &ev))
		return 2;
	for (r = 0; r < ROUNDS; r++) {
		if (wait_ready(ep, out ? POLLOUT : POLLIN, r & 1, timeout)) {
			ct_log("%s round %d: %s slept past its deadline", out ? "POLLOUT" : "POLLIN",
			       r, r & 1 ? "epoll_wait" : "poll");
			return 1;
		}
		/* Undo what the parent did, then let it start the next round */
		if (out ? mq_send(q, &m, 1, 0) != 0 : mq_receive(q, &m, 1, NULL) != 1)
			return 2;
		if (write(ack[1], "a", 1) != 1)
			return 2;
	}
	return 0;
}

static void run(bool out)
{
	struct mq_attr attr = { .mq_maxmsg = 1, .mq_msgsize = 1 };
	uint64_t rng = (seed + out) | 1;
	const char *name;
	char m = 'm', a;
	pid_t pid;
	int r, status;

	q = ct_mq_create(out ? "pollout" : "pollin", 0, &attr, &name);
	if (pipe(ack))
		ct_fatal("pipe: %m");
	if (out && mq_send(q, &m, 1, 0))
		ct_fatal("fill: %m");
	pid = ct_spawn(poller, out ? "out" : NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	close(ack[1]);
	for (r = 0; r < ROUNDS; r++) {
		/* 0 to about 20 us: before, during or after the poller queues itself */
		uint64_t until = ct_now_ns() + rng_next(&rng) % 20000;

		while (ct_now_ns() < until)
			;
		if (out ? mq_receive(q, &m, 1, NULL) != 1 : mq_send(q, &m, 1, 0) != 0)
			ct_fatal("%s: %m", out ? "mq_receive" : "mq_send");
		if (read(ack[0], &a, 1) != 1)
			break;		/* the poller gave up: its status says why */
	}
	status = ct_wait(pid);
	ct_expect(status == 0, "%s: poller failed (status %#x) after %d rounds",
		  out ? "POLLOUT" : "POLLIN", status, r);
	close(ack[0]);
	mq_close(q);
	mq_unlink(name);
}

int main(void)
{
	ct_require_mqueue();
	ct_watchdog(300, "mq_poll_race: a round never ended");
	seed = ct_seed();
	run(false);
	run(true);
	return ct_result();
}
