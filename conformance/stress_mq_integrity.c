// SPDX-License-Identifier: MIT
/*
 * stress_mq_integrity: N senders and M receivers hammer one POSIX message
 * queue for T seconds; no message may be lost, duplicated or corrupted,
 * each must come with the priority it was sent with, and no one may sleep
 * forever (the stall watchdog turns a lost wakeup into a failure).
 *
 * A message carries a header (magic, sender, sequence number, length,
 * priority, header checksum) and a payload derived from the header.
 * Priorities are drawn from a few values so that queues hold mixed and
 * equal priorities.  Half of the sends and receives use the timed calls with
 * a deadline as long as the stall limit.  Receivers mark (sender, seq) in a
 * shared bitmap: a second mark is a duplicate; at the end every message each
 * sender sent must be marked.  With one receiver, messages of one sender and
 * one priority must also arrive in the order sent (FIFO within a priority).
 *
 * End of stream: once every sender has exited, the parent sends one "done"
 * message per receiver at priority 0.  Being the lowest priority and the
 * last sent, a done message can only be taken once no data message is left.
 *
 * --tolerate-enomem (fault injection): ENOMEM from mq_send (message
 * allocation) or mq_receive is retried and counted.
 */
#include <errno.h>
#include <mqueue.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"
#include "stress.h"

#define MAGIC		0x3e55a9e5u
#define DONE_WRITER	0xffffu
#define NR_PRIOS	5

struct msg_hdr {
	uint32_t magic;
	uint16_t writer;
	uint16_t prio;
	uint32_t len;
	uint32_t seq;
	uint32_t check;
};

static struct stress_opts opts = {
	.duration = 3, .writers = 8, .readers = 4, .stall = 10,
};
static const unsigned int prios[NR_PRIOS] = { 1, 2, 2, 9, 30 };
static struct stress_shared *sh;
static const char *name;
static long msgsize;

static uint32_t hdr_check(const struct msg_hdr *h)
{
	return (uint32_t)ct_hash(h, offsetof(struct msg_hdr, check), 0x3e5);
}

static uint64_t payload_seed(const struct msg_hdr *h)
{
	return ((uint64_t)h->writer << 40) ^ ((uint64_t)h->seq << 8) ^ h->prio ^ opts.seed;
}

static mqd_t open_queue(int flags)
{
	mqd_t q = mq_open(name, flags);

	if (q == (mqd_t)-1)
		stress_fail(sh, "mq_open in a child: %s", ct_errname(errno));
	return q;
}

static int send_one(mqd_t q, const char *buf, size_t len, unsigned int prio, bool timed,
		    int id)
{
	struct timespec ts;
	int ret;

	for (;;) {
		if (timed) {
			ts = ct_deadline_ms((long)(ct_scale(opts.stall) * 1000));
			ret = mq_timedsend(q, buf, len, prio, &ts);
		} else {
			ret = mq_send(q, buf, len, prio);
		}
		if (!ret)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == ENOMEM && opts.tolerate_enomem) {
			atomic_fetch_add(&sh->enomem_retries, 1);
			continue;
		}
		return stress_fail(sh, "sender %d: mq_%ssend: %s%s", id, timed ? "timed" : "",
				   ct_errname(errno), errno == ETIMEDOUT ?
				   " (no room for the whole stall limit)" : "");
	}
}

static int sender(void *arg)
{
	int id = (int)(long)arg;
	uint64_t rng = opts.seed * 131 + id + 1;
	char *buf = malloc(msgsize);
	struct msg_hdr *h = (struct msg_hdr *)buf;
	mqd_t q = open_queue(O_WRONLY);
	uint32_t seq;

	if (!buf || q == (mqd_t)-1)
		return 1;
	for (seq = 0; !atomic_load(&sh->stop); seq++) {
		size_t len = sizeof(*h) + rng_next(&rng) % (msgsize - sizeof(*h) + 1);

		if (seq >= STRESS_SEQ_BITS) {
			atomic_fetch_add(&sh->capped, 1);
			break;
		}
		*h = (struct msg_hdr){ .magic = MAGIC, .writer = id, .len = len, .seq = seq,
				       .prio = prios[rng_next(&rng) % NR_PRIOS] };
		h->check = hdr_check(h);
		ct_pattern_fill(buf + sizeof(*h), len - sizeof(*h), payload_seed(h), 0);
		if (send_one(q, buf, len, h->prio, rng_next(&rng) & 1, id))
			return 1;
		atomic_fetch_add(&sh->sent[id], 1);
		atomic_fetch_add(&sh->bytes_sent, len);
		atomic_fetch_add(&sh->progress, 1);
	}
	free(buf);
	return 0;
}

static int receiver(void *arg)
{
	int id = (int)(long)arg;
	uint64_t rng = opts.seed ^ (0x7ec0 + id);
	/* Last sequence number seen per (sender, priority), for FIFO with one receiver. */
	int64_t *last = malloc(sizeof(*last) * opts.writers * 32);
	char *buf = malloc(msgsize);
	mqd_t q = open_queue(O_RDONLY);
	struct timespec ts;
	unsigned int prio;
	struct msg_hdr h;
	ssize_t n;
	int i;

	if (!buf || !last || q == (mqd_t)-1)
		return 1;
	for (i = 0; i < opts.writers * 32; i++)
		last[i] = -1;
	for (;;) {
		if (rng_next(&rng) & 1) {
			ts = ct_deadline_ms((long)(ct_scale(opts.stall) * 1000));
			n = mq_timedreceive(q, buf, msgsize, &prio, &ts);
		} else {
			n = mq_receive(q, buf, msgsize, &prio);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOMEM && opts.tolerate_enomem) {
				atomic_fetch_add(&sh->enomem_retries, 1);
				continue;
			}
			return stress_fail(sh, "receiver %d: mq_receive: %s", id,
					   ct_errname(errno)), 1;
		}
		if (n < (ssize_t)sizeof(h))
			return stress_fail(sh, "receiver %d: %zd-byte message", id, n), 1;
		memcpy(&h, buf, sizeof(h));
		if (h.magic == MAGIC && h.writer == DONE_WRITER && prio == 0)
			return 0;
		if (h.magic != MAGIC || h.check != hdr_check(&h) || h.writer >= opts.writers ||
		    h.len != n)
			return stress_fail(sh, "receiver %d: corrupt message header (magic %#x "
					   "writer %u len %u, received %zd bytes)", id, h.magic,
					   h.writer, h.len, n), 1;
		if (prio != h.prio)
			return stress_fail(sh, "receiver %d: sender %u message %u sent at priority "
					   "%u, received at %u", id, h.writer, h.seq, h.prio,
					   prio), 1;
		if (ct_pattern_check(buf + sizeof(h), n - sizeof(h), payload_seed(&h), 0) >= 0)
			return stress_fail(sh, "receiver %d: sender %u message %u: payload corrupt",
					   id, h.writer, h.seq), 1;
		if (!stress_mark(sh, h.writer, h.seq))
			return stress_fail(sh, "receiver %d: sender %u message %u received twice",
					   id, h.writer, h.seq), 1;
		if (opts.readers == 1) {
			int64_t *l = &last[h.writer * 32 + h.prio];

			if ((int64_t)h.seq < *l)
				return stress_fail(sh, "sender %u priority %u: message %u after %lld "
						   "(not FIFO within a priority)", h.writer,
						   h.prio, h.seq, (long long)*l), 1;
			*l = h.seq;
		}
		atomic_fetch_add(&sh->received, 1);
		atomic_fetch_add(&sh->bytes_received, n);
		atomic_fetch_add(&sh->progress, 1);
	}
}

static void send_done(void)
{
	struct msg_hdr h = { .magic = MAGIC, .writer = DONE_WRITER, .len = sizeof(h) };
	mqd_t q = mq_open(name, O_WRONLY);
	int i;

	if (q == (mqd_t)-1) {
		stress_fail(sh, "mq_open for the done messages: %s", ct_errname(errno));
		return;
	}
	for (i = 0; i < opts.readers; i++)
		if (send_one(q, (char *)&h, sizeof(h), 0, false, -1))
			break;
	mq_close(q);
}

int main(int argc, char **argv)
{
	struct mq_attr attr;
	pid_t pids[STRESS_MAX_PROCS];
	uint64_t sent;
	long msg_max, size_max;
	int ret;
	mqd_t q;

	opts.record_size = 128;
	stress_parse(argc, argv, &opts, "stress_mq_integrity",
		     "N senders x M receivers on one POSIX message queue; checksummed, "
		     "sequence-numbered messages.");
	ct_require_mqueue();
	if (!opts.seed)
		opts.seed = ct_seed();
	msg_max = ct_sysctl_read("fs/mqueue/msg_max");
	size_max = ct_sysctl_read("fs/mqueue/msgsize_max");
	if (!opts.depth)
		opts.depth = msg_max < 10 ? msg_max : 10;
	msgsize = opts.record_size;
	if (msgsize < (long)sizeof(struct msg_hdr) || msgsize > size_max ||
	    opts.depth > msg_max) {
		fprintf(stderr, "stress_mq_integrity: --record-size must be in [%zu, %ld] and "
			"--depth at most %ld (fs/mqueue limits)\n", sizeof(struct msg_hdr),
			size_max, msg_max);
		return 2;
	}
	ct_watchdog((unsigned int)(opts.duration + 4 * opts.stall + 30), "stress_mq_integrity");
	sh = stress_shared_new(opts.writers);
	name = ct_mq_name("stress");
	attr = (struct mq_attr){ .mq_maxmsg = opts.depth, .mq_msgsize = msgsize };
	q = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &attr);
	if (q == (mqd_t)-1) {
		if (errno == EMFILE || errno == ENOSPC)
			ct_skip("mq_open: %s (RLIMIT_MSGQUEUE or queues_max)", ct_errname(errno));
		ct_fatal("mq_open: %m");
	}
	ct_log("%d senders x %d receivers, %.2f s, depth %ld, messages up to %ld bytes%s",
	       opts.writers, opts.readers, opts.duration, opts.depth, msgsize,
	       opts.tolerate_enomem ? ", ENOMEM tolerated" : "");

	stress_start(&opts, sender, receiver, pids);

	ret = stress_supervise(&opts, sh, pids, opts.writers, opts.readers, send_done);
	sent = stress_check(sh, ret, opts.writers, "sender", "message");
	if (!ct_failed()) {
		struct mq_attr now;

		mq_getattr(q, &now);
		ct_expect(atomic_load(&sh->received) == sent && now.mq_curmsgs == 0,
			  "received %llu of %llu messages, %ld left in the queue",
			  (unsigned long long)atomic_load(&sh->received),
			  (unsigned long long)sent, now.mq_curmsgs);
	}
	ct_log("messages sent %llu, received %llu, bytes %llu; ENOMEM retries %llu, "
	       "senders capped %llu", (unsigned long long)sent,
	       (unsigned long long)atomic_load(&sh->received),
	       (unsigned long long)atomic_load(&sh->bytes_received),
	       (unsigned long long)atomic_load(&sh->enomem_retries),
	       (unsigned long long)atomic_load(&sh->capped));
	mq_close(q);
	mq_unlink(name);
	return ct_result();
}
