// SPDX-License-Identifier: MIT
/*
 * messaging.c: groups of senders spraying small messages at receivers, each
 * receiver reading its own pipe: the shape of hackbench and of perf bench
 * sched messaging --pipe.
 *
 * Each of --groups groups has --senders senders and --receivers receivers.
 * A sender writes --loops rounds, each one message of --msg-size bytes to
 * every receiver of its group in turn; a receiver reads messages (finishing
 * short reads) until it has --loops messages from each sender.  Every side
 * is a process (or with --threads a thread), all set up before one gate
 * releases them together.  The clock runs from the release until the last
 * side has been reaped, as perf's does, so the sides' exits are in it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ipcbench.h"

#define MSG_MAX_SIDES	4096

struct msg_opts {
	long long groups;
	long long senders;
	long long receivers;
	long long loops;
	long long msg_size;
	bool threads;
};

static const struct msg_opts msg_defaults = {
	.groups = 10,
	.senders = 20,
	.receivers = 20,
	.loops = 100,
	.msg_size = 100,
};

#define MO(field) offsetof(struct msg_opts, field)

static const struct opt msg_opt_table[] = {
	{ "groups", OPT_INT, MO(groups), "independent groups (default 10, as perf)", 1, 1024 },
	{ "senders", OPT_INT, MO(senders), "senders per group (default 20)", 1, 1024 },
	{ "receivers", OPT_INT, MO(receivers),
	  "receivers per group, each reading a pipe of its own (default 20)", 1, 1024 },
	{ "loops", OPT_INT, MO(loops),
	  "messages each sender writes to each receiver (default 100; --count N is the same)",
	  1, 1e9 },
	{ "msg-size", OPT_SIZE, MO(msg_size), "bytes per message (default 100)", 1, 1 << 20 },
	{ "threads", OPT_FLAG, MO(threads), "the sides are threads of the engine, not processes" },
	OPT_END
};

struct msg_run {
	const struct msg_opts *o;
	int *fds;		/* per receiver (group by group): read end, write end */
	int nr_fds;
	uint64_t loops;
	size_t size;
	struct start_gate gate;	/* processes */
	int go[2];		/* threads: EOF on go[0] releases them */
	atomic_int ready;	/* threads: how many are waiting at the gate */
	atomic_int failed;	/* threads: errno of the first failure */
	_Atomic uint64_t *received;	/* messages the receivers got, shared */
};

struct msg_side {
	struct msg_run *run;
	int group;
	int index;		/* sender or receiver number within its group */
	bool sender;
	pid_t pid;
	pthread_t thread;
	bool started;
};

static int msg_validate(const struct common_opts *c, void *wopts)
{
	const struct msg_opts *o = wopts;

	if (c->duration_set)
		return usage_error("--duration: messaging does a fixed amount of work (--loops)");
	if (o->groups * (o->senders + o->receivers) > MSG_MAX_SIDES)
		return usage_error("--groups x (--senders + --receivers) = %lld: at most %d sides",
				   o->groups * (o->senders + o->receivers), MSG_MAX_SIDES);
	return 0;
}

static int msg_wait_gate(struct msg_side *s)
{
	struct msg_run *run = s->run;
	char c;

	if (!run->o->threads)
		return gate_child_ready_wait(&run->gate);
	atomic_fetch_add(&run->ready, 1);
	while (read(run->go[0], &c, 1) < 0 && errno == EINTR)
		;
	return 0;
}

/* The body of one side; 0 or -errno. */
static int msg_side_main(struct msg_side *s)
{
	struct msg_run *run = s->run;
	const struct msg_opts *o = run->o;
	int base = 2 * s->group * (int)o->receivers;
	char *buf = malloc(run->size);
	uint64_t i, want;
	int j, ret = 0;

	if (!buf)
		return -ENOMEM;
	memset(buf, 'S', run->size);
	if (msg_wait_gate(s) < 0) {
		free(buf);
		return -EPIPE;
	}
	if (s->sender) {
		for (i = 0; i < run->loops && !ret; i++)
			for (j = 0; j < (int)o->receivers && !ret; j++)
				ret = write_full(run->fds[base + 2 * j + 1], buf, run->size);
	} else {
		int fd = run->fds[base + 2 * s->index];

		want = run->loops * (uint64_t)o->senders;
		for (i = 0; i < want && !ret; i++)
			ret = read_full(fd, buf, run->size);
		atomic_fetch_add(run->received, ret ? i - 1 : i);
	}
	free(buf);
	return ret;
}

static int msg_process(void *arg)
{
	return msg_side_main(arg) ? EXIT_FAIL : EXIT_OK;
}

static void *msg_thread(void *arg)
{
	struct msg_side *s = arg;
	int ret = msg_side_main(s);
	int none = 0;

	if (ret)
		atomic_compare_exchange_strong(&s->run->failed, &none, -ret);
	return NULL;
}

static int msg_start(struct msg_side *s)
{
	int ret;

	if (!s->run->o->threads) {
		s->pid = spawn(msg_process, s);
		if (s->pid < 0)
			return s->pid;
	} else {
		ret = pthread_create(&s->thread, NULL, msg_thread, s);
		if (ret)
			return -ret;
	}
	s->started = true;
	return 0;
}

/* 0 if the side ran to its end. */
static int msg_finish(struct msg_side *s)
{
	if (!s->started)
		return 0;
	s->started = false;
	if (!s->run->o->threads)
		return reap(s->pid) ? -ECHILD : 0;
	pthread_join(s->thread, NULL);
	return 0;
}

static void msg_close_all(struct msg_run *run)
{
	int i;

	for (i = 0; i < run->nr_fds; i++)
		close(run->fds[i]);
	run->nr_fds = 0;
}

static int msg_run(const struct common_opts *c, void *wopts, struct report *r)
{
	const struct msg_opts *o = wopts;
	int per_group = (int)(o->senders + o->receivers), nr = (int)o->groups * per_group;
	struct msg_run run = { .o = o, .size = (size_t)o->msg_size, .go = { -1, -1 } };
	struct msg_side *sides = calloc(nr, sizeof(*sides));
	struct counters cnt;
	uint64_t t0, t1;
	double messages, elapsed;
	bool failed = false;
	int i, err, ret = EXIT_FAIL;

	run.loops = c->count_set ? (uint64_t)c->count : (uint64_t)o->loops;
	run.fds = calloc(2 * o->groups * o->receivers, sizeof(int));
	run.gate.go[0] = run.gate.go[1] = run.gate.ready[0] = run.gate.ready[1] = -1;
	run.received = mmap(NULL, sizeof(*run.received), PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (run.received == MAP_FAILED) {
		fail_reason("mmap: %s", strerror(errno));
		run.received = NULL;
		goto out_free;
	}
	if (!sides || !run.fds) {
		fail_reason("out of memory");
		goto out_free;
	}
	for (i = 0; i < o->groups * o->receivers; i++) {
		if (pipe2(&run.fds[2 * i], O_CLOEXEC) < 0) {
			fail_reason("pipe %d: %s (raise ulimit -n?)", i, strerror(errno));
			goto out_close;
		}
		run.nr_fds += 2;
	}
	err = o->threads ? (pipe2(run.go, O_CLOEXEC) < 0 ? -errno : 0) : gate_open(&run.gate);
	if (err) {
		fail_reason("start gate: %s", strerror(-err));
		goto out_close;
	}

	counters_start(&cnt);
	for (i = 0; i < nr; i++) {
		struct msg_side *s = &sides[i];

		s->run = &run;
		s->group = i / per_group;
		s->index = i % per_group;
		s->sender = s->index >= o->receivers;
		if (s->sender)
			s->index -= (int)o->receivers;
		err = msg_start(s);
		if (err) {
			fail_reason("starting side %d of %d: %s", i, nr, strerror(-err));
			failed = true;
			break;
		}
	}
	if (!o->threads) {
		/* the pipes now belong to the children */
		msg_close_all(&run);
		if (!failed && gate_release(&run.gate, nr) < 0) {
			fail_reason("a side died before the start");
			failed = true;
		}
	} else {
		struct timespec nap = { 0, 100000 };

		while (!failed && atomic_load(&run.ready) < nr)
			nanosleep(&nap, NULL);
	}
	if (failed) {
		/* nobody is released: they wait on the gate or a pipe forever */
		if (o->threads)
			_exit(EXIT_FAIL);
		kill_children();
		counters_stop(&cnt);
		goto out_gate;
	}
	t0 = now_ns();
	if (o->threads) {
		close(run.go[1]);
		run.go[1] = -1;
	}
	for (i = 0; i < nr; i++)
		if (msg_finish(&sides[i]))
			failed = true;
	t1 = now_ns();
	counters_stop(&cnt);
	if (failed || atomic_load(&run.failed)) {
		fail_reason("a side failed: %s", atomic_load(&run.failed) ?
			    strerror(atomic_load(&run.failed)) : "see above");
		goto out_gate;
	}

	messages = (double)atomic_load(run.received);
	if (messages != (double)o->groups * o->senders * o->receivers * run.loops) {
		fail_reason("the receivers got %.0f messages of %.0f", messages,
			    (double)o->groups * o->senders * o->receivers * run.loops);
		goto out_gate;
	}
	elapsed = (t1 - t0) / 1e9;
	report_param_int(r, "groups", o->groups);
	report_param_int(r, "senders", o->senders);
	report_param_int(r, "receivers", o->receivers);
	report_param_int(r, "loops", (long long)run.loops);
	report_param_int(r, "msg_size", o->msg_size);
	report_param_bool(r, "threads", o->threads);
	report_metric(r, "messages_per_s", elapsed > 0 ? messages / elapsed : 0, "messages/s",
		      HIGHER_IS_BETTER);
	report_metric(r, "elapsed_s", elapsed, "s", BETTER_NONE);
	report_metric(r, "messages", messages, "messages", BETTER_NONE);
	report_counters(r, &cnt);
	report_note(r, "clock", "from the release of every side to the last one reaped");
	report_emit(r);
	ret = EXIT_OK;
out_gate:
	gate_close(&run.gate);
	if (run.go[0] >= 0)
		close(run.go[0]);
	if (run.go[1] >= 0)
		close(run.go[1]);
out_close:
	msg_close_all(&run);
out_free:
	if (run.received)
		munmap(run.received, sizeof(*run.received));
	free(run.fds);
	free(sides);
	return ret;
}

const struct bench bench_messaging = {
	.name = "messaging",
	.summary = "groups of senders spraying small messages at receivers, each on its own "
		   "pipe (perf bench sched messaging --pipe, hackbench): messages/s",
	.opts = msg_opt_table,
	.opts_size = sizeof(struct msg_opts),
	.defaults = &msg_defaults,
	.validate = msg_validate,
	.run = msg_run,
};
