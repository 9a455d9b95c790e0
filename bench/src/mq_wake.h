/* SPDX-License-Identifier: MIT */
/*
 * mq_wake.h: mq-latency with a second side (mq_wake.c), a receiver asleep in
 * mq_receive(): the pmqtest shape (one message at a time, its wakeup latency)
 * and the stream shape (a sender filling a queue a receiver drains).
 */
#ifndef IPCBENCH_MQ_WAKE_H
#define IPCBENCH_MQ_WAKE_H

#include <stdbool.h>

#include "ipcbench.h"

struct mq_wake_opts {
	bool process;		/* receiver in a process of its own, else a thread */
	bool stream;		/* stream shape, else one message at a time */
	double interval_us;	/* one at a time: receiver's sleep before it asks again */
	long long depth;	/* stream: queue capacity; 0 = fs.mqueue.msg_default */
	long long msg_size;
	const char *priorities;	/* stream: constant or random */
};

int mq_wake_run(const struct common_opts *c, const struct mq_wake_opts *o,
		struct report *r);

#endif
