// SPDX-License-Identifier: MIT
/*
 * mq_latency.c: POSIX message queue send and receive cost in ns per message,
 * with the queue empty and with the queue full, after the measurements in
 * the thread of "ipc/mqueue: add rbtree node caching support" (Doug Ledford,
 * 2012; Linux commit ce2d52cc1364).
 *
 * The clock is read around batches of calls, never around each call: one
 * clock_gettime() costs about 45 ns on this machine's VM, a sizeable part of
 * a 300 ns mq_send().  The metrics are means over all messages; the latency
 * histograms hold one entry per batch (its ns per message), whose p50 shrugs
 * off the batches a busy machine preempts.
 *
 *  - empty: a message is sent to each of QE_QUEUES queues, each empty before
 *    its send, then received from each, each empty after its receive.  This
 *    is the 0 -> 1 -> 0 path the node cache speeds up, timed per batch.
 *  - full: one queue of --depth messages, filled with the --priorities
 *    pattern.  Each batch receives B messages, then sends B, so the queue
 *    stays between depth - B and depth; B = depth / 2, at most 256.
 *
 * --receiver adds a second side asleep in mq_receive() (mq_wake.c): pmqtest's
 * one message at a time and its wakeup latency, or --stream, stress-ng's mq.
 *
 * Each result runs in a child process, so that pinning and the raised
 * RLIMIT_MSGQUEUE stay there.  Queue names are unique (engine pid and an
 * index), unlinked by the child right after mq_open() and, for the window
 * before that, by the parent after reaping and by an on_cleanup() hook on
 * every exit path.  glibc's mq_open() is a system call and does not need
 * /dev/mqueue mounted, so nothing is mounted here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ipcbench.h"
#include "mq_wake.h"

#define MQ_SYSCTL_DIR		"/proc/sys/fs/mqueue"
#define MQ_MSG_MAX		MQ_SYSCTL_DIR "/msg_max"
#define MQ_MSGSIZE_MAX		MQ_SYSCTL_DIR "/msgsize_max"
#define MQ_HARD_MSGMAX		65536		/* kernel's HARD_MSGMAX */
#define MQ_HARD_MSGSIZEMAX	(16 << 20)	/* kernel's HARD_MSGSIZEMAX */
#define MQ_DEFAULT_DURATION	2.0
#define QE_QUEUES		16		/* queues per empty-queue batch */
#define QF_MAX_BATCH		256
#define MQ_NAMES		(QE_QUEUES + 1)

struct mq_opts {
	long long depth;		/* 0: fs.mqueue.msg_max */
	long long msg_size;
	const char *priorities;
	const char *receiver;
	bool stream;
	double interval_us;
};

static const char *const mq_receivers[] = { "none", "thread", "process", NULL };

static const char *const mq_patterns[] = {
	"constant", "increasing", "decreasing", "random", "all", NULL
};

static const struct mq_opts mq_defaults = {
	.msg_size = 8,
	.priorities = "constant",
	.receiver = "none",
};

static const struct opt mq_opt_table[] = {
	{ "depth", OPT_INT, offsetof(struct mq_opts, depth),
	  "messages in the full queue (default fs.mqueue.msg_max; above it needs root, "
	  "which raises it for the run)", 1, MQ_HARD_MSGMAX },
	{ "msg-size", OPT_SIZE, offsetof(struct mq_opts, msg_size),
	  "bytes per message (default 8)", 1, MQ_HARD_MSGSIZEMAX },
	{ "priorities", OPT_CHOICE, offsetof(struct mq_opts, priorities),
	  "priority pattern of the full-queue test; all = one result per pattern "
	  "(default constant)", 0, 0, mq_patterns },
	{ "receiver", OPT_CHOICE, offsetof(struct mq_opts, receiver),
	  "a second side asleep in mq_receive(): a thread of the sender's process or a "
	  "process of its own; each message carries its send time and the receiver reports "
	  "the wakeup latency, one message at a time as rt-tests' pmqtest (default none: "
	  "the empty and full queue tests in one process)", 0, 0, mq_receivers },
	{ "interval", OPT_DOUBLE, offsetof(struct mq_opts, interval_us),
	  "with --receiver: microseconds the receiver sleeps after each message before it "
	  "asks for the next (pmqtest -i; default 0: not paced)", 0, 1e7 },
	{ "stream", OPT_FLAG, offsetof(struct mq_opts, stream),
	  "with --receiver: the sender sends as fast as the queue of --depth (default "
	  "fs.mqueue.msg_default) takes messages and the receiver drains it, ns per "
	  "message, as stress-ng's mq stressor (--priorities constant or random)" },
	OPT_END
};

enum { H_EMPTY_SEND, H_EMPTY_RECV, H_FULL_SEND, H_FULL_RECV, NR_HISTS };

static const char *const mq_hist_names[NR_HISTS] = {
	"empty_send", "empty_recv", "full_send", "full_recv",
};

/*
 * Totals give the metrics (mean ns per message, as in the seed); the
 * histograms hold each batch's ns per message, so that a batch hit by
 * preemption shows up as one outlier and p50 stays usable on a busy machine.
 */
struct mq_result {
	uint64_t empty_send_ns, empty_recv_ns, empty_msgs;
	uint64_t full_send_ns, full_recv_ns, full_msgs;
	struct hist h[NR_HISTS];
};

struct mq_job {
	struct mq_result *res;
	const char *pattern;
	size_t depth, msg_size, batch;
	uint64_t phase_ns;		/* per phase; 0 = count */
	uint64_t count;			/* messages per phase */
	uint64_t seed;
	int cpu;
};

/* Names live in static storage so that the cleanup hook can reach them. */
static char mq_names[MQ_NAMES][64];
static bool mq_cleanup_registered;

/* Runs on every engine exit path, possibly in signal context. */
static void mq_unlink_all(void)
{
	int i;

	for (i = 0; i < MQ_NAMES; i++)
		if (mq_names[i][0])
			mq_unlink(mq_names[i]);
}

/* ---- priorities ------------------------------------------------------------ */

struct prio_gen {
	const char *pattern;
	unsigned int next, max;
	uint64_t rng;
};

static unsigned int prio_next(struct prio_gen *g)
{
	unsigned int p;

	switch (g->pattern[0]) {
	case 'i':	/* increasing, wrapping at MQ_PRIO_MAX */
		p = g->next;
		g->next = (g->next + 1) % g->max;
		return p;
	case 'd':	/* decreasing, wrapping */
		p = g->next;
		g->next = g->next ? g->next - 1 : g->max - 1;
		return p;
	case 'r':
		return rng_next(&g->rng) % g->max;
	default:
		return 0;
	}
}

/* ---- the child ---------------------------------------------------------------- */

static mqd_t mq_open_unlinked(int idx, size_t maxmsg, size_t msgsize)
{
	struct mq_attr attr = { .mq_maxmsg = maxmsg, .mq_msgsize = msgsize };
	mqd_t q;

	q = mq_open(mq_names[idx], O_CREAT | O_EXCL | O_RDWR | O_NONBLOCK | O_CLOEXEC,
		    0600, &attr);
	if (q == (mqd_t)-1)
		return q;
	/* the fd keeps the queue alive; the name is not needed any more */
	mq_unlink(mq_names[idx]);
	return q;
}

static int mq_open_error(size_t maxmsg, size_t msgsize)
{
	int err = errno;

	switch (err) {
	case ENOSYS:
		skip_reason("POSIX message queues: mq_open: %s (CONFIG_POSIX_MQUEUE?)",
			    strerror(err));
		return EXIT_SKIP;
	case EMFILE:
		usage_error("--depth %zu x --msg-size %zu: over RLIMIT_MSGQUEUE "
			    "(not root, so it cannot be raised)", maxmsg, msgsize);
		return EXIT_USAGE;
	case EINVAL:
		usage_error("--depth %zu / --msg-size %zu: refused by fs.mqueue.msg_max / "
			    "msgsize_max", maxmsg, msgsize);
		return EXIT_USAGE;
	case ENOSPC:
		fail_reason("mq_open: too many queues (fs.mqueue.queues_max)");
		return EXIT_FAIL;
	default:
		fail_reason("mq_open: %s", strerror(err));
		return EXIT_FAIL;
	}
}

/*
 * The kernel charges each queue against RLIMIT_MSGQUEUE: pointers and tree
 * nodes plus the payload (ipc/mqueue.c, mqueue_get_inode()).  Raise the
 * soft limit as far as allowed; as root, lift it.
 */
static void mq_raise_rlimit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MSGQUEUE, &rl) < 0)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (geteuid() == 0)
		rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
	setrlimit(RLIMIT_MSGQUEUE, &rl);
}

static bool mq_time_up(const struct mq_job *j, uint64_t start, uint64_t now, uint64_t msgs)
{
	return j->count ? msgs >= j->count : now - start >= j->phase_ns;
}

static int mq_phase_empty(const struct mq_job *j, char *msg, char *in)
{
	struct mq_result *res = j->res;
	mqd_t q[QE_QUEUES];
	uint64_t start, t0, t1, t2;
	int i, nq = 0, ret = EXIT_FAIL;

	for (nq = 0; nq < QE_QUEUES; nq++) {
		q[nq] = mq_open_unlinked(1 + nq, 1, j->msg_size);
		if (q[nq] == (mqd_t)-1) {
			ret = mq_open_error(1, j->msg_size);
			goto out_close;
		}
	}
	start = t2 = now_ns();
	do {
		t0 = t2;
		for (i = 0; i < QE_QUEUES; i++)
			if (mq_send(q[i], msg, j->msg_size, 0) < 0)
				goto out_err;
		t1 = now_ns();
		for (i = 0; i < QE_QUEUES; i++)
			if (mq_receive(q[i], in, j->msg_size, NULL) != (ssize_t)j->msg_size)
				goto out_err;
		t2 = now_ns();
		res->empty_send_ns += t1 - t0;
		res->empty_recv_ns += t2 - t1;
		res->empty_msgs += QE_QUEUES;
		hist_add(&res->h[H_EMPTY_SEND], (t1 - t0) / QE_QUEUES);
		hist_add(&res->h[H_EMPTY_RECV], (t2 - t1) / QE_QUEUES);
	} while (!mq_time_up(j, start, t2, res->empty_msgs));
	ret = EXIT_OK;
	goto out_close;

out_err:
	fail_reason("empty queue: mq_send/mq_receive: %s", strerror(errno));
out_close:
	for (i = 0; i < nq; i++)
		mq_close(q[i]);
	return ret;
}

static int mq_phase_full(const struct mq_job *j, char *msg, char *in)
{
	struct mq_result *res = j->res;
	struct prio_gen g = {
		.pattern = j->pattern,
		.max = (unsigned int)sysconf(_SC_MQ_PRIO_MAX),
		.rng = j->seed,
	};
	bool fifo = g.pattern[0] == 'c' && j->msg_size >= sizeof(uint64_t);
	uint64_t start, t0, t1, t2, seq_out = 0, seq_in = 0;
	size_t i;
	mqd_t q;
	int ret = EXIT_FAIL;

	if (g.pattern[0] == 'd')
		g.next = g.max - 1;
	q = mq_open_unlinked(0, j->depth, j->msg_size);
	if (q == (mqd_t)-1)
		return mq_open_error(j->depth, j->msg_size);
	for (i = 0; i < j->depth; i++, seq_out++) {
		if (fifo)
			memcpy(msg, &seq_out, sizeof(seq_out));
		if (mq_send(q, msg, j->msg_size, prio_next(&g)) < 0)
			goto out_err;
	}

	start = t2 = now_ns();
	do {
		t0 = t2;
		for (i = 0; i < j->batch; i++)
			if (mq_receive(q, in, j->msg_size, NULL) != (ssize_t)j->msg_size)
				goto out_err;
		t1 = now_ns();
		/* constant priority is FIFO: the last message of the batch tells */
		if (fifo) {
			uint64_t got;

			memcpy(&got, in, sizeof(got));
			seq_in += j->batch;
			if (got != seq_in - 1) {
				fail_reason("full queue: received message %llu, expected %llu",
					    (unsigned long long)got,
					    (unsigned long long)seq_in - 1);
				goto out_close;
			}
		}
		for (i = 0; i < j->batch; i++, seq_out++) {
			if (fifo)
				memcpy(msg, &seq_out, sizeof(seq_out));
			if (mq_send(q, msg, j->msg_size, prio_next(&g)) < 0)
				goto out_err;
		}
		t2 = now_ns();
		res->full_recv_ns += t1 - t0;
		res->full_send_ns += t2 - t1;
		res->full_msgs += j->batch;
		hist_add(&res->h[H_FULL_RECV], (t1 - t0) / j->batch);
		hist_add(&res->h[H_FULL_SEND], (t2 - t1) / j->batch);
	} while (!mq_time_up(j, start, t2, res->full_msgs));
	ret = EXIT_OK;
	goto out_close;

out_err:
	fail_reason("full queue: mq_send/mq_receive: %s", strerror(errno));
out_close:
	mq_close(q);
	return ret;
}

static int mq_child(void *arg)
{
	const struct mq_job *j = arg;
	char *msg, *in;
	int ret;

	ret = pin_cpu(j->cpu);
	if (ret < 0) {
		fail_reason("pin to cpu %d: %s", j->cpu, strerror(-ret));
		return EXIT_FAIL;
	}
	mq_raise_rlimit();
	msg = calloc(1, j->msg_size);
	in = calloc(1, j->msg_size);
	if (!msg || !in) {
		fail_reason("out of memory for %zu-byte messages", j->msg_size);
		return EXIT_FAIL;
	}
	memset(msg, 'm', j->msg_size);
	ret = mq_phase_empty(j, msg, in);
	if (ret == EXIT_OK)
		ret = mq_phase_full(j, msg, in);
	free(in);
	free(msg);
	return ret;
}

/* ---- the engine side -------------------------------------------------------------- */

/* What mq_ensure_limit() did, repeated in every result of a --priorities all run. */
struct mq_limit {
	const char *path, *opt, *note_key;
	long long orig;		/* value before this run; -1 = not read yet */
	char note[160];
};

static struct mq_limit mq_limits[] = {
	{ MQ_MSG_MAX, "depth", "msg_max", -1 },
	{ MQ_MSGSIZE_MAX, "msg-size", "msgsize_max", -1 },
};

/*
 * Make the sysctl at least @want: as root through sysctl_set(), which the
 * core restores on every exit path; otherwise it is a usage error.
 */
static int mq_ensure_limit(struct mq_limit *l, long long want)
{
	long long cur = sysctl_read_ll(l->path);
	char val[32];
	int ret;

	if (l->orig < 0)
		l->orig = cur;
	if (cur < 0 || want <= cur)
		return 0;
	if (geteuid() != 0) {
		usage_error("--%s %lld: above %s (%lld); raising it needs root",
			    l->opt, want, l->path, cur);
		return -EPERM;
	}
	snprintf(val, sizeof(val), "%lld", want);
	ret = sysctl_set(l->path, val);
	if (ret < 0) {
		/* CAP_SYS_RESOURCE may still let mq_open() past the limit */
		snprintf(l->note, sizeof(l->note), "could not raise it from %lld to %lld: %s",
			 cur, want, strerror(-ret));
		return 0;
	}
	snprintf(l->note, sizeof(l->note), "raised from %lld to %lld for this run "
		 "(restored at exit)", cur, want);
	return 0;
}

static int mq_validate(const struct common_opts *c, void *wopts)
{
	const struct mq_opts *o = wopts;
	long long msg_max = sysctl_read_ll(MQ_MSG_MAX);
	long long size_max = sysctl_read_ll(MQ_MSGSIZE_MAX);

	if (strcmp(o->receiver, "none")) {
		if (o->msg_size < 8)
			return usage_error("--msg-size %lld: a message carries its 8-byte send "
					   "time with --receiver", o->msg_size);
		if (o->stream && strcmp(o->priorities, "constant") &&
		    strcmp(o->priorities, "random"))
			return usage_error("--priorities %s: --stream takes constant or random",
					   o->priorities);
		if (!o->stream && strcmp(o->priorities, "constant"))
			return usage_error("--priorities %s: one message at a time has no "
					   "queue to order (give --stream)", o->priorities);
		if (!o->stream && o->depth)
			return usage_error("--depth: one message at a time uses a queue of one "
					   "(give --stream)");
		if (o->stream && o->interval_us > 0)
			return usage_error("--interval paces one message at a time, not "
					   "--stream");
		if (c->count_set && c->duration_set)
			return usage_error("--count and --duration exclude each other");
	} else if (o->stream || o->interval_us > 0) {
		return usage_error("--%s needs --receiver thread or process",
				   o->stream ? "stream" : "interval");
	}
	/* no sysctl directory means no mqueue support: run() skips */
	if (msg_max < 0)
		return 0;
	if (geteuid() != 0 && o->depth > msg_max)
		return usage_error("--depth %lld: above fs.mqueue.msg_max (%lld); raising it "
				   "needs root", o->depth, msg_max);
	if (geteuid() != 0 && size_max >= 0 && o->msg_size > size_max)
		return usage_error("--msg-size %lld: above fs.mqueue.msgsize_max (%lld); "
				   "raising it needs root", o->msg_size, size_max);
	return 0;
}

static int mq_run_pattern(const struct common_opts *c, const struct mq_opts *o,
			  const char *pattern, struct report *r)
{
	struct mq_result *res;
	struct counters cnt;
	struct mq_job job;
	long long msg_max = sysctl_read_ll(MQ_MSG_MAX);
	double dur = c->duration > 0 ? c->duration : MQ_DEFAULT_DURATION;
	int i, st, ret = EXIT_FAIL;
	pid_t pid;

	if (msg_max < 0) {
		skip_reason("POSIX message queues: %s missing (CONFIG_POSIX_MQUEUE?)", MQ_MSG_MAX);
		return EXIT_SKIP;
	}
	job = (struct mq_job) {
		.pattern = pattern,
		.depth = o->depth ? (size_t)o->depth : (size_t)msg_max,
		.msg_size = o->msg_size,
		.phase_ns = c->count_set ? 0 : (uint64_t)(dur / 2 * 1e9),
		.count = c->count_set ? (uint64_t)c->count : 0,
		.seed = c->seed,
		.cpu = c->cpus[0],
	};
	job.batch = job.depth / 2;
	if (job.batch < 1)
		job.batch = 1;
	if (job.batch > QF_MAX_BATCH)
		job.batch = QF_MAX_BATCH;

	if (mq_ensure_limit(&mq_limits[0], (long long)job.depth) < 0 ||
	    mq_ensure_limit(&mq_limits[1], o->msg_size) < 0)
		return EXIT_USAGE;

	for (i = 0; i < MQ_NAMES; i++)
		snprintf(mq_names[i], sizeof(mq_names[i]), "/ipcbench-mq-%d-%d", (int)getpid(), i);
	if (!mq_cleanup_registered) {
		on_cleanup(mq_unlink_all);
		mq_cleanup_registered = true;
	}
	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED) {
		fail_reason("mmap: %s", strerror(errno));
		return EXIT_FAIL;
	}
	job.res = res;
	for (i = 0; i < NR_HISTS; i++)
		hist_init(&res->h[i]);

	counters_start(&cnt);
	pid = spawn(mq_child, &job);
	if (pid < 0) {
		fail_reason("fork: %s", strerror(-pid));
		goto out_unmap;
	}
	st = reap(pid);
	counters_stop(&cnt);
	/* a child killed between mq_open() and mq_unlink() leaves a name */
	mq_unlink_all();
	if (st != EXIT_OK) {
		ret = st == EXIT_SKIP || st == EXIT_USAGE ? st : EXIT_FAIL;
		goto out_unmap;
	}

	report_param_str(r, "priorities", pattern);
	report_param_int(r, "depth", (long long)job.depth);
	report_param_int(r, "msg_size", (long long)job.msg_size);
	report_param_int(r, "full_batch", (long long)job.batch);
	report_param_int(r, "empty_queues", QE_QUEUES);
	report_param_int(r, "msg_max", mq_limits[0].orig);
	for (i = 0; i < 2; i++)
		if (mq_limits[i].note[0])
			report_note(r, mq_limits[i].note_key, "%s", mq_limits[i].note);
	if (job.cpu >= 0)
		report_param_int(r, "cpu", job.cpu);
	else
		report_param_str(r, "cpu", "unpinned");
	report_metric(r, "empty_send_ns", (double)res->empty_send_ns / res->empty_msgs, "ns",
		      LOWER_IS_BETTER);
	report_metric(r, "empty_recv_ns", (double)res->empty_recv_ns / res->empty_msgs, "ns",
		      LOWER_IS_BETTER);
	report_metric(r, "full_send_ns", (double)res->full_send_ns / res->full_msgs, "ns",
		      LOWER_IS_BETTER);
	report_metric(r, "full_recv_ns", (double)res->full_recv_ns / res->full_msgs, "ns",
		      LOWER_IS_BETTER);
	report_metric(r, "empty_messages", (double)res->empty_msgs, "messages", BETTER_NONE);
	report_metric(r, "full_messages", (double)res->full_msgs, "messages", BETTER_NONE);
	for (i = 0; i < NR_HISTS; i++)
		report_latency(r, mq_hist_names[i], &res->h[i]);
	report_note(r, "latency", "ns per message averaged over each batch (%d calls empty, "
		    "%zu full), one histogram entry per batch, not per call", QE_QUEUES, job.batch);
	report_counters(r, &cnt);
	report_emit(r);
	ret = EXIT_OK;

out_unmap:
	munmap(res, sizeof(*res));
	return ret;
}

static int mq_run(const struct common_opts *c, void *wopts, struct report *r)
{
	const struct mq_opts *o = wopts;
	int i, ret;

	if (strcmp(o->receiver, "none")) {
		struct mq_wake_opts w = {
			.process = !strcmp(o->receiver, "process"),
			.stream = o->stream,
			.interval_us = o->interval_us,
			.depth = o->depth,
			.msg_size = o->msg_size,
			.priorities = o->priorities,
		};

		if (sysctl_read_ll(MQ_MSG_MAX) < 0) {
			skip_reason("POSIX message queues: %s missing (CONFIG_POSIX_MQUEUE?)",
				    MQ_MSG_MAX);
			return EXIT_SKIP;
		}
		return mq_wake_run(c, &w, r);
	}
	if (strcmp(o->priorities, "all"))
		return mq_run_pattern(c, o, o->priorities, r);
	for (i = 0; strcmp(mq_patterns[i], "all"); i++) {
		ret = mq_run_pattern(c, o, mq_patterns[i], r);
		if (ret != EXIT_OK)
			return ret;
	}
	return EXIT_OK;
}

const struct bench bench_mq_latency = {
	.name = "mq-latency",
	.summary = "POSIX mq send/receive ns per message, queue empty and full, by priority "
		   "pattern (after Linux commit ce2d52cc1364)",
	.opts = mq_opt_table,
	.opts_size = sizeof(struct mq_opts),
	.defaults = &mq_defaults,
	.validate = mq_validate,
	.run = mq_run,
};
