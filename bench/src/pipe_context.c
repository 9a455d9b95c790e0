// SPDX-License-Identifier: MIT
/*
 * pipe_context.c: UnixBench "Pipe-based Context Switching" (context1), in
 * round trips per second.
 *
 * Two processes and two pipes.  The initiator writes a counter into the
 * first pipe; the responder reads it, checks it, and writes it back into the
 * second pipe; the initiator reads it and checks it again.  Every transfer
 * wakes a sleeper, so this is the other side of the wq_has_sleeper() patch
 * ("fs/pipe: Introduce a check to skip sleeping processes during pipe
 * read/write", WangYuli): the wakeup cannot be skipped and
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
 */
struct pc_side {
	struct copy_result *res;	/* initiator only */
	int rd, wr;			/* this side's ends */
	int cpu;
	bool initiator;
	uint64_t duration_ns;
	uint64_t count;			/* round trips; 0 = run for duration_ns */
};

/*
 * Everything a child needs.  All pipe fds of all copies are listed in fds[]
 * so that each child can close the ones that are not its own: a stray write
 * end held elsewhere would hide the initiator's EOF from the responder.
 */
struct pc_pairs {
	struct pc_side *side;		/* per process: initiator, responder, ... */
	const int *fds;			/* every pipe fd, nr_fds of them */
	int nr_fds;			/* 0 once the parent has closed its own */
};

/* In the order of struct pc_pairs' sides: the initiator is process 0. */
static const char *const pc_roles[] = { "initiator", "responder" };

static void pc_close_others(const struct pc_pairs *pp, const struct pc_side *s)
{
	int i;

	for (i = 0; i < pp->nr_fds; i++)
		if (pp->fds[i] != s->rd && pp->fds[i] != s->wr)
			close(pp->fds[i]);
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

static int pc_side_main(void *arg, int proc, struct start_gate *gate)
{
	struct pc_pairs *pp = arg;
	struct pc_side *s = &pp->side[proc];
	int ret;

	pc_close_others(pp, s);
	ret = pin_cpu(s->cpu);
	if (ret < 0) {
		fail_reason("pin to cpu %d: %s", s->cpu, strerror(-ret));
		return EXIT_FAIL;
	}
	if (gate_child_ready_wait(gate) < 0) {
		fail_reason("start barrier broken");
		return EXIT_FAIL;
	}
	return s->initiator ? pc_initiator(s) : pc_responder(s);
}

/* The pairs' pipes now belong to the children alone. */
static void pc_forked(void *arg)
{
	struct pc_pairs *pp = arg;
	int i;

	for (i = 0; i < pp->nr_fds; i++)
		close(pp->fds[i]);
	pp->nr_fds = 0;
}

static int pc_run(const struct common_opts *c, void *wopts, struct report *r)
{
	const struct pc_opts *o = wopts;
	int copies = (int)o->copies;
	int fds[4 * copies];
	struct pc_side side[2 * copies];
	struct pc_pairs pp = { .side = side, .fds = fds };
	struct copies_run run = {
		.copies = copies,
		.procs_per_copy = 2,
		.roles = pc_roles,
		.proc_main = pc_side_main,
		.forked = pc_forked,
		.arg = &pp,
	};
	struct copy_result *res;
	struct place *places;
	struct counters cnt;
	double total, trips, dur;
	char per_copy[COPY_RATE_CHARS * copies + 1];
	int i, ret = EXIT_FAIL;

	dur = c->duration > 0 ? c->duration : PC_DEFAULT_DURATION;
	res = copies_alloc(copies);
	if (!res) {
		fail_reason("mmap: %s", strerror(errno));
		return EXIT_FAIL;
	}
	run.res = res;
	places = run.places = places_alloc(2 * copies);
	for (i = 0; i < copies; i++) {
		/* fds[4i..4i+1]: initiator -> responder, fds[4i+2..4i+3]: back */
		if (pipe(&fds[pp.nr_fds]) < 0 ||
		    (pp.nr_fds += 2, pipe(&fds[pp.nr_fds]) < 0)) {
			fail_reason("pipe: %s", strerror(errno));
			goto out_close;
		}
		pp.nr_fds += 2;
	}
	for (i = 0; i < 2 * copies; i++) {
		int k = i / 2;
		bool init = !(i & 1);

		side[i] = (struct pc_side) {
			.res = &res[k],
			.rd = init ? fds[4 * k + 2] : fds[4 * k],
			.wr = init ? fds[4 * k + 1] : fds[4 * k + 3],
			.cpu = c->cpus[init ? 0 : 1],
			.initiator = init,
			.duration_ns = (uint64_t)(dur * 1e9),
			.count = c->count_set ? (uint64_t)c->count : 0,
		};
	}
	ret = copies_run(&run, &cnt, &total, &trips, per_copy, sizeof(per_copy));
	if (ret != EXIT_OK)
		goto out_close;

	report_param_int(r, "copies", copies);
	report_param_cpus(r, c);
	report_metric(r, "round_trips_per_s", total, "round trips/s", HIGHER_IS_BETTER);
	report_metric(r, "round_trips", trips, "round trips", BETTER_NONE);
	report_note(r, "per_copy_round_trips_per_s", "%s", per_copy);
	report_latency(r, "round_trip", &res[0].h);
	report_note(r, "latency", "ns per round trip averaged over each chunk of %d, one "
		    "histogram entry per chunk, all copies merged", PC_CHECK_EVERY);
	report_counters(r, &cnt);
	report_sides(r, pc_roles, 2, places, 2 * copies);
	report_emit(r);

out_close:
	/* still ours if copies_run() failed before every process was forked */
	for (i = 0; i < pp.nr_fds; i++)
		close(fds[i]);
	places_free(places, 2 * copies);
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
