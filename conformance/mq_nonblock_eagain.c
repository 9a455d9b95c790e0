// SPDX-License-Identifier: MIT
/*
 * mq_nonblock_eagain: on a descriptor with O_NONBLOCK, mq_send() to a full
 * queue and mq_receive() from an empty one fail with EAGAIN at once and
 * change nothing; mq_setattr() turns O_NONBLOCK on and off and changes no
 * other attribute; and the flag belongs to the descriptor, not the queue.
 */
#include <errno.h>
#include <mqueue.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

#define MAXMSG 4

static long curmsgs(mqd_t q)
{
	struct mq_attr a;

	if (mq_getattr(q, &a))
		ct_fatal("mq_getattr: %m");
	return a.mq_curmsgs;
}

int main(void)
{
	struct mq_attr attr = { .mq_maxmsg = MAXMSG, .mq_msgsize = 32 }, set, old, got;
	const char *name;
	char buf[32];
	mqd_t q, q2;
	int i;

	ct_watchdog(30, "mq_nonblock_eagain: a non-blocking call blocked");
	ct_require_mqueue();
	q = ct_mq_create("nb", O_NONBLOCK, &attr, &name);
	/* A second, blocking descriptor for the same queue. */
	q2 = mq_open(name, O_RDWR);
	if (q2 == (mqd_t)-1)
		ct_fatal("mq_open again: %m");

	ct_expect_errno(mq_receive(q, buf, sizeof(buf), NULL), EAGAIN, "receive, empty");
	for (i = 0; i < MAXMSG; i++)
		if (mq_send(q, "x", 1, i))
			ct_fatal("mq_send %d: %m", i);
	ct_expect_errno(mq_send(q, "y", 1, 31), EAGAIN, "send, full (higher priority)");
	ct_expect_errno(mq_send(q, "y", 1, 0), EAGAIN, "send, full");
	ct_expect(curmsgs(q) == MAXMSG, "EAGAIN sends changed the queue: %ld messages",
		  curmsgs(q));

	/* The blocking descriptor does not see O_NONBLOCK. */
	if (mq_getattr(q2, &got))
		ct_fatal("mq_getattr: %m");
	ct_expect(!(got.mq_flags & O_NONBLOCK), "O_NONBLOCK leaked to another descriptor");

	/* Drain, then EAGAIN again. */
	for (i = 0; i < MAXMSG; i++)
		if (mq_receive(q, buf, sizeof(buf), NULL) != 1)
			ct_fatal("mq_receive %d: %m", i);
	ct_expect_errno(mq_receive(q, buf, sizeof(buf), NULL), EAGAIN, "receive, drained");

	/* mq_setattr: clear and set O_NONBLOCK; other fields are ignored. */
	set = (struct mq_attr){ .mq_flags = 0, .mq_maxmsg = 99, .mq_msgsize = 99 };
	if (mq_setattr(q, &set, &old))
		ct_fatal("mq_setattr: %m");
	ct_expect(old.mq_flags & O_NONBLOCK, "old flags lacked O_NONBLOCK");
	mq_getattr(q, &got);
	ct_expect(!(got.mq_flags & O_NONBLOCK), "O_NONBLOCK still set after clearing");
	ct_expect(got.mq_maxmsg == MAXMSG && got.mq_msgsize == 32,
		  "mq_setattr changed maxmsg/msgsize to %ld/%ld", got.mq_maxmsg, got.mq_msgsize);
	set.mq_flags = O_NONBLOCK;
	if (mq_setattr(q2, &set, NULL))
		ct_fatal("mq_setattr: %m");
	ct_expect_errno(mq_receive(q2, buf, sizeof(buf), NULL), EAGAIN,
			"receive, empty, O_NONBLOCK set by mq_setattr");

	mq_close(q);
	mq_close(q2);
	mq_unlink(name);
	return ct_result();
}
