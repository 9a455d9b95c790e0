// SPDX-License-Identifier: MIT
/*
 * pipe_context.c: UnixBench "Pipe-based Context Switching" (context1), in
 * round trips per second.
 *
 * Two processes and two pipes.  The initiator writes a counter into the
 * first pipe; the responder reads it, checks it, and writes it back into the
 * second pipe; the initiator reads it and checks it again.  Every transfer
 * wakes a sleeper, so this is the other side of the wq_has_sleeper() patch
 * (pipe-skip-wakeup-without-sleepers.txt): the wakeup cannot be skipped and
 * the new check is pure cost.
 *
 * --copies N runs N pairs at once, released together, and sums their rates.
 * --cpus A,B puts every initiator on A and every responder on B.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "ipcbench.h"

#define PC_CHECK_EVERY		64	/* round trips between clock reads */
#define PC_DEFAULT_DURATION	2.0

struct pc_opts {
	long long copies;
};

static const struct pc_opts pc_defaults = {
	.copies = 1,
};

static const struct opt pc_opt_table[] = {
	{ "copies", OPT_INT, offsetof(struct pc_opts, copies),
	  "independent pairs run at once, round trips/s summed (UnixBench: 1 and nproc)",
	  1, 512 },
	OPT_END
};

/*
 * Each pair's initiator fills one copy_result (ops = round trips).  The rate
 * comes from the totals; the histogram holds each chunk's ns per round trip
 * (PC_CHECK_EVERY of them), so a chunk that was preempted is one outlier and
 * p50 stays usable on a busy machine.
 *
 * Everything a child needs.  All pipe fds of all copies are listed in fds[]
 * so that each child can close the ones that are not its own: a stray write
 * end held elsewhere would hide the initiator's EOF from the responder.
 */
struct pc_side {
	struct copy_result *res;	/* initiator only */
	struct start_gate *gate;
	const int *fds;			/* every pipe fd, nr_fds of them */
	int nr_fds;
	int rd, wr;			/* this side's ends */
	int cpu;
	bool initiator;
	uint64_t duration_ns;
	uint64_t count;			/* round trips; 0 = run for duration_ns */
};

static void pc_close_others(const struct pc_side *s)
{
	int i;

	for (i = 0; i < s->nr_fds; i++)
		if (s->fds[i] != s->rd && s->fds[i] != s->wr)
			close(s->fds[i]);
}

static int pc_initiator(struct pc_side *s)
{
	uint64_t v = 0, back, t0, t, prev;

	prev = t0 = now_ns();
	for (;;) {
		uint64_t n = PC_CHECK_EVERY, i;

		if (s->count && s->count - v < n)
			n = s->count - v;
		for (i = 0; i < n; i++, v++) {
			errno = 0;
			if (write(s->wr, &v, sizeof(v)) != sizeof(v) ||
			    read(s->rd, &back, sizeof(back)) != sizeof(back)) {
				fail_reason("initiator: pipe transfer: %s",
					    errno ? strerror(errno) : "short or EOF");
				return EXIT_FAIL;
			}
			if (back != v) {
				fail_reason("initiator: sent %llu, got back %llu",
					    (unsigned long long)v, (unsigned long long)back);
				return EXIT_FAIL;
			}
		}
		t = now_ns();
		if (n)
			hist_add(&s->res->h, (t - prev) / n);
		prev = t;
		if (s->count ? v >= s->count : t - t0 >= s->duration_ns)
			break;
	}
	s->res->ops = v;
	s->res->elapsed_ns = t - t0;
	/* closing our write end is the responder's signal to finish */
	close(s->wr);
	return EXIT_OK;
}

static int pc_responder(struct pc_side *s)
{
	uint64_t want = 0, v;
	ssize_t n;

	for (;;) {
		n = read(s->rd, &v, sizeof(v));
		if (n == 0)
			return EXIT_OK;
		if (n != sizeof(v)) {
			fail_reason("responder: pipe read: %s",
				    n < 0 ? strerror(errno) : "short read");
			return EXIT_FAIL;
		}
		if (v != want) {
			fail_reason("responder: expected %llu, got %llu",
				    (unsigned long long)want, (unsigned long long)v);
			return EXIT_FAIL;
		}
		if (write(s->wr, &v, sizeof(v)) != sizeof(v)) {
			fail_reason("responder: pipe write: %s", strerror(errno));
			return EXIT_FAIL;
		}
		want++;
	}
}

static int pc_side_main(void *arg)
{
	struct pc_side *s = arg;
	int ret;

	pc_close_others(s);
	ret = pin_cpu(s->cpu);
	if (ret < 0) {
		fail_reason("pin to cpu %d: %s", s->cpu, strerror(-ret));
		return EXIT_FAIL;
	}
	if (gate_child_ready_wait(s->gate) < 0) {
		fail_reason("start barrier broken");
		return EXIT_FAIL;
	}
	return s->initiator ? pc_initiator(s) : pc_responder(s);
}

static int pc_run(const struct common_opts *c, void *wopts, struct report *r)
{
	const struct pc_opts *o = wopts;
	int copies = (int)o->copies, nr_fds = 0;
	int fds[4 * copies];
	struct pc_side side[2 * copies];
	pid_t pid[2 * copies];
	struct copy_result *res;
	struct counters cnt;
	struct start_gate gate;
	double total, trips, dur;
	char per_copy[COPY_RATE_CHARS * copies + 1];
	int i, err, ret = EXIT_FAIL;

	dur = c->duration > 0 ? c->duration : PC_DEFAULT_DURATION;
	res = copies_alloc(copies);
	if (!res) {
		fail_reason("mmap: %s", strerror(errno));
		return EXIT_FAIL;
	}
	err = gate_open(&gate);
	if (err < 0) {
		fail_reason("pipe: %s", strerror(-err));
		goto out_unmap;
	}
	for (i = 0; i < copies; i++) {
		/* fds[4i..4i+1]: initiator -> responder, fds[4i+2..4i+3]: back */
		if (pipe(&fds[nr_fds]) < 0 || (nr_fds += 2, pipe(&fds[nr_fds]) < 0)) {
			fail_reason("pipe: %s", strerror(errno));
			goto out_close;
		}
		nr_fds += 2;
	}

	counters_start(&cnt);
	for (i = 0; i < 2 * copies; i++) {
		int k = i / 2;
		bool init = !(i & 1);

		side[i] = (struct pc_side) {
			.res = &res[k],
			.gate = &gate,
			.fds = fds,
			.nr_fds = nr_fds,
			.rd = init ? fds[4 * k + 2] : fds[4 * k],
			.wr = init ? fds[4 * k + 1] : fds[4 * k + 3],
			.cpu = c->cpus[init ? 0 : 1],
			.initiator = init,
			.duration_ns = (uint64_t)(dur * 1e9),
			.count = c->count_set ? (uint64_t)c->count : 0,
		};
		pid[i] = spawn(pc_side_main, &side[i]);
		if (pid[i] < 0) {
			fail_reason("fork: %s", strerror(-pid[i]));
			goto out_kill;
		}
	}
	/* the pairs' pipes now belong to the children alone */
	for (i = 0; i < nr_fds; i++)
		close(fds[i]);
	nr_fds = 0;
	if (gate_release(&gate, 2 * copies) < 0) {
		fail_reason("a process died before starting");
		goto out_kill;
	}
	for (i = 0; i < 2 * copies; i++) {
		int st = reap(pid[i]);

		if (st != 0) {
			fail_reason("%s of copy %d exited with status %d",
				    i & 1 ? "responder" : "initiator", i / 2, st);
			goto out_kill;
		}
	}
	counters_stop(&cnt);

	total = copies_sum(res, copies, &trips, per_copy, sizeof(per_copy));
	report_param_int(r, "copies", copies);
	report_param_cpus(r, c);
	report_metric(r, "round_trips_per_s", total, "round trips/s", HIGHER_IS_BETTER);
	report_metric(r, "round_trips", trips, "round trips", BETTER_NONE);
	report_note(r, "per_copy_round_trips_per_s", "%s", per_copy);
	report_latency(r, "round_trip", &res[0].h);
	report_note(r, "latency", "ns per round trip averaged over each chunk of %d, one "
		    "histogram entry per chunk, all copies merged", PC_CHECK_EVERY);
	report_counters(r, &cnt);
	report_emit(r);
	ret = EXIT_OK;

out_kill:
	if (ret != EXIT_OK)
		kill_children();
out_close:
	for (i = 0; i < nr_fds; i++)
		close(fds[i]);
	gate_close(&gate);
out_unmap:
	copies_free(res, copies);
	return ret;
}

const struct bench bench_pipe_context = {
	.name = "pipe-context",
	.summary = "UnixBench pipe context switching: two processes ping-pong a counter, round trips/s",
	.opts = pc_opt_table,
	.opts_size = sizeof(struct pc_opts),
	.defaults = &pc_defaults,
	.run = pc_run,
};
