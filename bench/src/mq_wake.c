// SPDX-License-Identifier: MIT
/*
 * mq_wake.c: mq-latency --receiver thread|process, a sender and a receiver
 * that blocks in mq_receive() on one POSIX queue.  Two shapes:
 *
 *  - one message at a time (rt-tests' pmqtest): the sender reads the clock,
 *    sends the time as the message and waits on a second queue; the
 *    receiver, asleep in mq_receive(), wakes, reads the clock and records
 *    the difference, sleeps --interval microseconds and then sends "ready"
 *    on the second queue.  Both queues hold one message, as pmqtest's do.
 *    The latency is a send, a wakeup of a sleeping task (across CPUs when
 *    the two sides are on different ones) and a receive; with an interval
 *    the CPUs go idle between messages, so it also holds their wakeup from
 *    idle.  Where the mqueue poll-wakeup and wakeup-cost patches show.
 *  - --stream (stress-ng's mq stressor): the sender sends as fast as the
 *    queue takes messages, with constant or random priorities, into a queue
 *    of --depth (default fs.mqueue.msg_default, 10), and the receiver drains
 *    it; ns per message from the first send to the last receive.
 *
 * The receiver is a thread of the sender's process or a process of its own.
 * Everything runs in a child of the engine, so that pinning stays there, and
 * the queues are unlinked as soon as they are open: a run leaves no name.
 * The sender ends the run with a message whose stamp is 0, sent at priority
 * 0 so that it comes out after everything else.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mq_wake.h"

#define MW_DEFAULT_DURATION	2.0
#define MW_MSG_DEFAULT		"/proc/sys/fs/mqueue/msg_default"

/* What the two sides write, in memory shared with the engine. */
struct mw_shared {
	struct hist h;		/* wakeup latency per message, ns */
	uint64_t msgs;		/* messages received (the first, untimed, included) */
	uint64_t start_ns;	/* the sender's first send */
	uint64_t end_ns;	/* the receiver's last receive */
	int err;		/* errno of the call that failed */
	char what[48];		/* which call */
	struct place side[2];	/* sender, receiver */
};

struct mw_ctx {
	const struct mq_wake_opts *o;
	struct mw_shared *sh;
	mqd_t msgq, syncq;	/* syncq: (mqd_t)-1 with --stream */
	size_t msg_size;
	uint64_t count;		/* messages; 0 = until duration_ns */
	uint64_t duration_ns;
	uint64_t interval_ns;
	uint64_t seed;
	int cpu_send, cpu_recv;
};

static const char *const mw_roles[] = { "sender", "receiver" };

static char mw_names[2][64];
static bool mw_cleanup_registered;

/* On every engine exit path, possibly in signal context. */
static void mw_unlink_all(void)
{
	int i;

	for (i = 0; i < 2; i++)
		if (mw_names[i][0])
			mq_unlink(mw_names[i]);
}

static int mw_fail(struct mw_shared *sh, const char *what)
{
	sh->err = errno;
	snprintf(sh->what, sizeof(sh->what), "%s", what);
	return EXIT_FAIL;
}

static int mw_receiver(struct mw_ctx *x)
{
	struct mw_shared *sh = x->sh;
	struct timespec nap = { .tv_sec = x->interval_ns / 1000000000u,
				.tv_nsec = x->interval_ns % 1000000000u };
	char *buf = calloc(1, x->msg_size);
	uint64_t stamp, t = 0;
	int ret;

	if (!buf)
		return mw_fail(sh, "receiver: calloc");
	ret = pin_cpu(x->cpu_recv);
	if (ret < 0) {
		errno = -ret;
		return mw_fail(sh, "receiver: pin");
	}
	place_start(&sh->side[1]);
	for (;;) {
		if (mq_receive(x->msgq, buf, x->msg_size, NULL) != (ssize_t)x->msg_size) {
			free(buf);
			return mw_fail(sh, "receiver: mq_receive");
		}
		t = now_ns();
		memcpy(&stamp, buf, sizeof(stamp));
		if (!stamp)
			break;
		/* the first message also waited for this side to start: not timed */
		if (sh->msgs++ && x->syncq != (mqd_t)-1)
			hist_add(&sh->h, t - stamp);
		if (x->syncq == (mqd_t)-1)
			continue;
		if (x->interval_ns)
			while (clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, &nap) == EINTR)
				;
		if (mq_send(x->syncq, buf, x->msg_size, 1) < 0) {
			free(buf);
			return mw_fail(sh, "receiver: mq_send ready");
		}
	}
	sh->end_ns = t;
	place_end(&sh->side[1]);
	free(buf);
	return EXIT_OK;
}

static int mw_receiver_process(void *arg)
{
	return mw_receiver(arg);
}

static void *mw_receiver_thread(void *arg)
{
	return (void *)(intptr_t)mw_receiver(arg);
}

/* The sender's loop; the receiver is already started.  EXIT_OK or EXIT_FAIL. */
static int mw_send_all(struct mw_ctx *x)
{
	struct mw_shared *sh = x->sh;
	char *msg = calloc(1, x->msg_size), *in = calloc(1, x->msg_size);
	bool random = x->o->priorities && !strcmp(x->o->priorities, "random");
	unsigned int prio_max = (unsigned int)sysconf(_SC_MQ_PRIO_MAX);
	bool sync = x->syncq != (mqd_t)-1;
	uint64_t rng = x->seed ? x->seed : 1, sent = 0, t = 0;
	/* one at a time, the first message is not timed: send one more */
	uint64_t want = x->count ? x->count + sync : 0;
	int ret = EXIT_FAIL;

	if (!msg || !in) {
		mw_fail(sh, "sender: calloc");
		goto out;
	}
	place_start(&sh->side[0]);
	sh->start_ns = now_ns();
	for (;;) {
		unsigned int prio = 1;

		t = now_ns();
		if (want ? sent >= want : t - sh->start_ns >= x->duration_ns && sent > 1)
			break;
		if (!sync && random)
			prio = 1 + rng_next(&rng) % (prio_max - 1);
		memcpy(msg, &t, sizeof(t));
		if (mq_send(x->msgq, msg, x->msg_size, prio) < 0) {
			mw_fail(sh, "sender: mq_send");
			goto out;
		}
		sent++;
		if (sync && mq_receive(x->syncq, in, x->msg_size, NULL) != (ssize_t)x->msg_size) {
			mw_fail(sh, "sender: mq_receive ready");
			goto out;
		}
	}
	place_end(&sh->side[0]);
	memset(msg, 0, x->msg_size);
	if (mq_send(x->msgq, msg, x->msg_size, 0) < 0) {
		mw_fail(sh, "sender: mq_send stop");
		goto out;
	}
	ret = EXIT_OK;
out:
	free(in);
	free(msg);
	return ret;
}

/* The engine's child: start the receiver, send, wait for the receiver. */
static int mw_child(void *arg)
{
	struct mw_ctx *x = arg;
	pthread_t thread;
	void *tret;
	pid_t pid = -1;
	int ret, st;

	if (x->o->process) {
		pid = spawn(mw_receiver_process, x);
		if (pid < 0) {
			errno = -pid;
			return mw_fail(x->sh, "fork receiver");
		}
	} else {
		ret = pthread_create(&thread, NULL, mw_receiver_thread, x);
		if (ret) {
			errno = ret;
			return mw_fail(x->sh, "pthread_create receiver");
		}
	}
	ret = pin_cpu(x->cpu_send);
	if (ret < 0) {
		errno = -ret;
		mw_fail(x->sh, "sender: pin");
	} else {
		ret = mw_send_all(x);
	}
	/* a sender that failed leaves the receiver blocked: end it */
	if (ret != EXIT_OK) {
		if (x->o->process) {
			kill_children();
			return EXIT_FAIL;
		}
		_exit(EXIT_FAIL);
	}
	if (x->o->process) {
		st = reap(pid);
		return st ? EXIT_FAIL : EXIT_OK;
	}
	pthread_join(thread, &tret);
	return (int)(intptr_t)tret;
}

static mqd_t mw_open(int idx, long maxmsg, size_t msgsize)
{
	struct mq_attr attr = { .mq_maxmsg = maxmsg, .mq_msgsize = (long)msgsize };
	mqd_t q;

	q = mq_open(mw_names[idx], O_CREAT | O_EXCL | O_RDWR, 0600, &attr);
	if (q != (mqd_t)-1)
		mq_unlink(mw_names[idx]);
	return q;
}

static int mw_open_error(const char *which, long depth, size_t size)
{
	int err = errno;

	if (err == ENOSYS) {
		skip_reason("POSIX message queues: mq_open: %s", strerror(err));
		return EXIT_SKIP;
	}
	if (err == EINVAL || err == EMFILE) {
		usage_error("--depth %ld / --msg-size %zu: the %s queue is refused (%s)", depth,
			    size, which, strerror(err));
		return EXIT_USAGE;
	}
	fail_reason("mq_open %s queue: %s", which, strerror(err));
	return EXIT_FAIL;
}

static void mw_report(struct report *r, const struct mq_wake_opts *o, const struct mw_ctx *x,
		      const struct common_opts *c, const struct counters *cnt, long depth)
{
	const struct mw_shared *sh = x->sh;

	report_param_str(r, "receiver", o->process ? "process" : "thread");
	report_param_str(r, "shape", o->stream ? "stream" : "one at a time");
	report_param_int(r, "msg_size", (long long)x->msg_size);
	report_param_int(r, "depth", depth);
	report_param_cpus(r, c);
	if (o->stream) {
		double msgs = (double)sh->msgs;
		double ns = sh->end_ns > sh->start_ns ? (double)(sh->end_ns - sh->start_ns) : 0;

		report_param_str(r, "priorities", o->priorities ? o->priorities : "constant");
		report_metric(r, "ns_per_message", msgs > 0 ? ns / msgs : 0, "ns",
			      LOWER_IS_BETTER);
		report_metric(r, "messages_per_s", ns > 0 ? msgs / ns * 1e9 : 0, "messages/s",
			      BETTER_NONE);
		report_metric(r, "messages", msgs, "messages", BETTER_NONE);
	} else {
		report_param_int(r, "interval_us", (long long)o->interval_us);
		report_metric(r, "wake_latency_ns", hist_mean(&sh->h), "ns", LOWER_IS_BETTER);
		report_metric(r, "messages", (double)sh->h.count, "messages", BETTER_NONE);
		report_latency(r, "wake", &sh->h);
		report_note(r, "latency", "from the sender's clock read before mq_send() to the "
			    "receiver's right after mq_receive() returned, every message but the "
			    "first");
	}
	report_counters(r, cnt);
	report_sides(r, mw_roles, 2, sh->side, 2);
}

int mq_wake_run(const struct common_opts *c, const struct mq_wake_opts *o, struct report *r)
{
	double dur = c->duration > 0 ? c->duration : MW_DEFAULT_DURATION;
	long depth = o->stream ? (o->depth ? o->depth : sysctl_read_ll(MW_MSG_DEFAULT)) : 1;
	struct mw_ctx x = {
		.o = o,
		.msgq = (mqd_t)-1,
		.syncq = (mqd_t)-1,
		.msg_size = (size_t)o->msg_size,
		.count = c->count_set ? (uint64_t)c->count : 0,
		.duration_ns = (uint64_t)(dur * 1e9),
		.interval_ns = (uint64_t)(o->interval_us * 1000),
		.seed = c->seed,
		.cpu_send = c->cpus[0],
		.cpu_recv = c->cpus[1],
	};
	struct counters cnt;
	int i, st, ret = EXIT_FAIL;
	pid_t pid;

	if (depth <= 0)
		depth = 10;	/* the kernel's DFLT_MSG */
	for (i = 0; i < 2; i++)
		snprintf(mw_names[i], sizeof(mw_names[i]), "/ipcbench-mqw-%d-%d", (int)getpid(), i);
	if (!mw_cleanup_registered) {
		on_cleanup(mw_unlink_all);
		mw_cleanup_registered = true;
	}
	x.sh = mmap(NULL, sizeof(*x.sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		    -1, 0);
	if (x.sh == MAP_FAILED) {
		fail_reason("mmap: %s", strerror(errno));
		return EXIT_FAIL;
	}
	hist_init(&x.sh->h);
	x.sh->side[0] = x.sh->side[1] = (struct place) { -1, -1, -1, -1 };
	x.msgq = mw_open(0, depth, x.msg_size);
	if (x.msgq == (mqd_t)-1) {
		ret = mw_open_error("message", depth, x.msg_size);
		goto out;
	}
	if (!o->stream) {
		x.syncq = mw_open(1, 1, x.msg_size);
		if (x.syncq == (mqd_t)-1) {
			ret = mw_open_error("ready", 1, x.msg_size);
			goto out;
		}
	}

	counters_start(&cnt);
	pid = spawn(mw_child, &x);
	if (pid < 0) {
		fail_reason("fork: %s", strerror(-pid));
		goto out;
	}
	st = reap(pid);
	counters_stop(&cnt);
	if (st != EXIT_OK) {
		if (x.sh->what[0])
			fail_reason("%s: %s", x.sh->what, strerror(x.sh->err));
		else
			fail_reason("the sender exited with status %d", st);
		goto out;
	}
	if (!x.sh->msgs || (!o->stream && !x.sh->h.count)) {
		fail_reason("no message timed: raise --count or --duration");
		goto out;
	}
	mw_report(r, o, &x, c, &cnt, depth);
	report_emit(r);
	ret = EXIT_OK;
out:
	if (x.msgq != (mqd_t)-1)
		mq_close(x.msgq);
	if (x.syncq != (mqd_t)-1)
		mq_close(x.syncq);
	mw_unlink_all();
	munmap(x.sh, sizeof(*x.sh));
	return ret;
}
