// SPDX-License-Identifier: MIT
/*
 * mq_timedreceive_timeout: mq_timedreceive() on an empty queue waits until
 * its absolute CLOCK_REALTIME deadline and fails with ETIMEDOUT; a deadline
 * already past fails at once; an invalid timespec on an empty queue is
 * EINVAL; and a receiver waiting with a far deadline is woken as soon as a
 * message arrives, and gets it (mq_receive(3)).
 *
 * Tolerances as in mq_timedsend_timeout: not before the deadline minus
 * 20 ms, not later than 5 s (times CT_WATCHDOG_SCALE) after it.
 */
#include <errno.h>
#include <mqueue.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

static mqd_t q;

static int delayed_send(void *arg)
{
	(void)arg;
	ct_sleep_ms(150);
	return mq_send(q, "m", 1, 3) == 0 ? 0 : 1;
}

int main(void)
{
	struct mq_attr attr = { .mq_maxmsg = 2, .mq_msgsize = 16 };
	double late_ms = ct_scale(5) * 1000;
	unsigned int prio = 0;
	struct timespec ts;
	const char *name;
	uint64_t t0, ms;
	char buf[16];
	int status;
	ssize_t n;
	pid_t pid;

	ct_watchdog(60, "mq_timedreceive_timeout: mq_timedreceive never returned");
	ct_require_mqueue();
	q = ct_mq_create("trecv", 0, &attr, &name);

	ts = ct_deadline_ms(300);
	t0 = ct_now_ns();
	ct_expect_errno(mq_timedreceive(q, buf, sizeof(buf), NULL, &ts), ETIMEDOUT,
			"empty queue, 300 ms");
	ms = (ct_now_ns() - t0) / 1000000;
	ct_expect(ms >= 280, "timed out after %llu ms, before the 300 ms deadline",
		  (unsigned long long)ms);
	ct_expect(ms <= 300 + late_ms, "timed out after %llu ms, deadline 300 ms",
		  (unsigned long long)ms);

	ts = ct_deadline_ms(-1000);
	t0 = ct_now_ns();
	ct_expect_errno(mq_timedreceive(q, buf, sizeof(buf), NULL, &ts), ETIMEDOUT,
			"deadline already past");
	ms = (ct_now_ns() - t0) / 1000000;
	ct_expect(ms <= late_ms, "past deadline took %llu ms", (unsigned long long)ms);

	ts = ct_deadline_ms(1000);
	ts.tv_nsec = 1000000000L;
	ct_expect_errno(mq_timedreceive(q, buf, sizeof(buf), NULL, &ts), EINVAL, "tv_nsec = 1e9");
	ts.tv_nsec = -1;
	ct_expect_errno(mq_timedreceive(q, buf, sizeof(buf), NULL, &ts), EINVAL, "tv_nsec = -1");

	pid = ct_spawn(delayed_send, NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	ts = ct_deadline_ms((long)(ct_scale(20) * 1000));
	t0 = ct_now_ns();
	n = mq_timedreceive(q, buf, sizeof(buf), &prio, &ts);
	ms = (ct_now_ns() - t0) / 1000000;
	ct_expect(n == 1 && buf[0] == 'm' && prio == 3,
		  "receive after a send: %zd (%s), prio %u", n, n < 0 ? ct_errname(errno) : "-",
		  prio);
	ct_expect(ms <= 150 + late_ms, "receiver woke %llu ms after start; the message came "
		  "at 150 ms", (unsigned long long)ms);
	status = ct_wait(pid);
	ct_expect(status == 0, "sender status %#x", status);

	mq_close(q);
	mq_unlink(name);
	return ct_result();
}
