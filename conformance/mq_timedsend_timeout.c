// SPDX-License-Identifier: MIT
/*
 * mq_timedsend_timeout: mq_timedsend() on a full queue waits until its
 * absolute CLOCK_REALTIME deadline and fails with ETIMEDOUT, sending
 * nothing; a deadline already past fails at once; an invalid timespec on a
 * full queue is EINVAL; and a sender waiting with a far deadline is woken
 * as soon as a receiver makes room (mq_send(3)).
 *
 * Timing tolerances are generous (the lab runs this under emulation): the
 * call must not return before its deadline minus 20 ms, and must return
 * within 5 s (times CT_WATCHDOG_SCALE) after it.
 */
#include <errno.h>
#include <mqueue.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

static mqd_t q;

static int delayed_receive(void *arg)
{
	char buf[16];

	(void)arg;
	ct_sleep_ms(150);
	return mq_receive(q, buf, sizeof(buf), NULL) == 1 ? 0 : 1;
}

int main(void)
{
	struct mq_attr attr = { .mq_maxmsg = 1, .mq_msgsize = 16 }, now;
	double late_ms = ct_scale(5) * 1000;
	struct timespec ts;
	const char *name;
	uint64_t t0, ms;
	int status;
	pid_t pid;

	ct_watchdog(60, "mq_timedsend_timeout: mq_timedsend never returned");
	ct_require_mqueue();
	q = ct_mq_create("tsend", 0, &attr, &name);
	if (mq_send(q, "a", 1, 0))
		ct_fatal("mq_send: %m");

	/* Full: wait out a 300 ms deadline. */
	ts = ct_deadline_ms(300);
	t0 = ct_now_ns();
	ct_expect_errno(mq_timedsend(q, "b", 1, 0, &ts), ETIMEDOUT, "full queue, 300 ms");
	ms = (ct_now_ns() - t0) / 1000000;
	ct_expect(ms >= 280, "timed out after %llu ms, before the 300 ms deadline",
		  (unsigned long long)ms);
	ct_expect(ms <= 300 + late_ms, "timed out after %llu ms, deadline 300 ms",
		  (unsigned long long)ms);
	mq_getattr(q, &now);
	ct_expect(now.mq_curmsgs == 1, "a timed-out send left %ld messages", now.mq_curmsgs);

	/* A deadline in the past: at once. */
	ts = ct_deadline_ms(-1000);
	t0 = ct_now_ns();
	ct_expect_errno(mq_timedsend(q, "c", 1, 0, &ts), ETIMEDOUT, "deadline already past");
	ms = (ct_now_ns() - t0) / 1000000;
	ct_expect(ms <= late_ms, "past deadline took %llu ms", (unsigned long long)ms);

	/* Invalid timespecs, queue full. */
	ts = ct_deadline_ms(1000);
	ts.tv_nsec = 1000000000L;
	ct_expect_errno(mq_timedsend(q, "d", 1, 0, &ts), EINVAL, "tv_nsec = 1e9");
	ts.tv_nsec = -1;
	ct_expect_errno(mq_timedsend(q, "d", 1, 0, &ts), EINVAL, "tv_nsec = -1");

	/* A far deadline, room made by another process after 150 ms: woken early. */
	pid = ct_spawn(delayed_receive, NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	ts = ct_deadline_ms((long)(ct_scale(20) * 1000));
	t0 = ct_now_ns();
	ct_expect(mq_timedsend(q, "e", 1, 0, &ts) == 0, "send after room was made: %m");
	ms = (ct_now_ns() - t0) / 1000000;
	ct_expect(ms <= 150 + late_ms, "sender woke %llu ms after start; room came at 150 ms",
		  (unsigned long long)ms);
	status = ct_wait(pid);
	ct_expect(status == 0, "receiver status %#x", status);

	mq_close(q);
	mq_unlink(name);
	return ct_result();
}
