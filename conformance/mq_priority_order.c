// SPDX-License-Identifier: MIT
/*
 * mq_priority_order: mq_receive() returns the oldest message of the highest
 * priority: priority order across priorities, FIFO within one (POSIX
 * mq_send(3)/mq_receive(3)), and reports each message's priority.
 *
 * 2000 rounds: fill a 10-message queue with random priorities (drawn from a
 * few values so that ties are common, including 0 and MQ_PRIO_MAX-1), in
 * random batches interleaved with partial drains; a reference model (the
 * list of pending messages) says what each receive must return.
 */
#include <errno.h>
#include <mqueue.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

#define MAXMSG	10
#define ROUNDS	2000

struct msg {
	uint32_t seq;
	uint32_t prio;
};

static struct msg pending[MAXMSG];
static int nr_pending;

/* The model: highest priority first, lowest seq (oldest) among equals. */
static struct msg model_pop(void)
{
	int best = 0, i;
	struct msg m;

	for (i = 1; i < nr_pending; i++)
		if (pending[i].prio > pending[best].prio ||
		    (pending[i].prio == pending[best].prio && pending[i].seq < pending[best].seq))
			best = i;
	m = pending[best];
	pending[best] = pending[--nr_pending];
	return m;
}

int main(void)
{
	static const unsigned int prios[] = { 0, 1, 2, 7, 7, 31, 32767 };
	struct mq_attr attr = { .mq_maxmsg = MAXMSG, .mq_msgsize = sizeof(struct msg) };
	uint64_t rng;
	uint32_t seq = 0;
	const char *name;
	long received = 0;
	mqd_t q;
	int round;

	ct_watchdog(30, "mq_priority_order: a send or receive blocked");
	ct_require_mqueue();
	rng = ct_seed();
	q = ct_mq_create("prio", O_NONBLOCK, &attr, &name);

	for (round = 0; round < ROUNDS && !ct_failed(); round++) {
		int room = MAXMSG - nr_pending;
		int sends = room ? 1 + (int)(rng_next(&rng) % room) : 0;
		int recvs, i;

		for (i = 0; i < sends; i++) {
			struct msg m = { seq++, prios[rng_next(&rng) % 7] };

			if (mq_send(q, (char *)&m, sizeof(m), m.prio))
				ct_fatal("mq_send: %m");
			pending[nr_pending++] = m;
		}
		/* Drain everything every fourth round, part of it otherwise. */
		recvs = round % 4 == 3 ? nr_pending : (int)(rng_next(&rng) % (nr_pending + 1));
		for (i = 0; i < recvs; i++) {
			struct msg got, want = model_pop();
			unsigned int prio = ~0u;
			ssize_t n = mq_receive(q, (char *)&got, sizeof(got), &prio);

			if (n != sizeof(got))
				ct_fatal("mq_receive: %zd (%m)", n);
			if (!ct_expect(got.seq == want.seq && prio == want.prio,
				       "round %d: got message %u (prio %u), want %u (prio %u)",
				       round, got.seq, prio, want.seq, want.prio))
				break;
			ct_expect(got.prio == prio, "reported priority %u, sent with %u",
				  prio, got.prio);
			received++;
		}
	}
	ct_log("%ld messages received in model order", received);
	mq_close(q);
	mq_unlink(name);
	return ct_result();
}
