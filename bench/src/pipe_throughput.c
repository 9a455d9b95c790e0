// SPDX-License-Identifier: MIT
/*
 * pipe_throughput.c: UnixBench "Pipe Throughput", in loops per second.
 *
 * One process writes 512 bytes into a pipe and reads them back from the same
 * pipe, in a loop.  Nobody ever sleeps on the pipe, which is exactly the case
 * the wq_has_sleeper() patch ("fs/pipe: Introduce a check to skip sleeping
 * processes during pipe read/write", WangYuli) speeds up: every wake_up on
 * this pipe finds an empty wait queue.
 *
 * --copies N runs N such processes at once, released together, and sums
 * their rates (UnixBench's "one copy per CPU" score).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "ipcbench.h"

#define PT_MSG_SIZE		512
#define PT_CHECK_EVERY		64	/* loops between clock reads */
#define PT_DEFAULT_DURATION	2.0

struct pt_opts {
	long long copies;
};

static const struct pt_opts pt_defaults = {
	.copies = 1,
};

static const struct opt pt_opt_table[] = {
	{ "copies", OPT_INT, offsetof(struct pt_opts, copies),
	  "independent copies run at once, loops/s summed (UnixBench: 1 and nproc); "
	  "with --cpus A,B copy i runs on A or B alternately", 1, 1024 },
	OPT_END
};

/*
 * One copy_result per copy, in a MAP_SHARED page the children write into:
 * ops counts loops, the histogram holds each chunk's ns per loop.
 */
struct pt_copy {
	struct copy_result *res;
	int cpu;
	uint64_t duration_ns;
	uint64_t count;		/* loops; 0 = run for duration_ns */
};

static int pt_copy_main(void *arg, int proc, struct start_gate *gate)
{
	struct pt_copy *cp = (struct pt_copy *)arg + proc;
	char buf[PT_MSG_SIZE];
	uint64_t loops = 0, t0, t, prev;
	int pfd[2];
	int ret;

	ret = pin_cpu(cp->cpu);
	if (ret < 0) {
		fail_reason("pin to cpu %d: %s", cp->cpu, strerror(-ret));
		return EXIT_FAIL;
	}
	if (pipe(pfd) < 0) {
		fail_reason("pipe: %s", strerror(errno));
		return EXIT_FAIL;
	}
	memset(buf, 'p', sizeof(buf));
	if (gate_child_ready_wait(gate) < 0) {
		fail_reason("start barrier broken");
		return EXIT_FAIL;
	}

	prev = t0 = now_ns();
	for (;;) {
		uint64_t n = PT_CHECK_EVERY, i;

		if (cp->count && cp->count - loops < n)
			n = cp->count - loops;
		for (i = 0; i < n; i++) {
			if (write(pfd[1], buf, PT_MSG_SIZE) != PT_MSG_SIZE ||
			    read(pfd[0], buf, PT_MSG_SIZE) != PT_MSG_SIZE) {
				fail_reason("pipe write/read of %d bytes: %s", PT_MSG_SIZE,
					    strerror(errno));
				return EXIT_FAIL;
			}
		}
		loops += n;
		t = now_ns();
		if (n)
			hist_add(&cp->res->h, (t - prev) / n);
		prev = t;
		if (cp->count ? loops >= cp->count : t - t0 >= cp->duration_ns)
			break;
	}
	cp->res->ops = loops;
	cp->res->elapsed_ns = t - t0;
	return EXIT_OK;
}

static int pt_run(const struct common_opts *c, void *wopts, struct report *r)
{
	const struct pt_opts *o = wopts;
	int copies = (int)o->copies;
	struct pt_copy copy[copies];
	struct copies_run run = {
		.copies = copies,
		.procs_per_copy = 1,
		.proc_main = pt_copy_main,
		.arg = copy,
	};
	struct copy_result *res;
	struct place *places;
	struct counters cnt;
	double total, loops, dur;
	char per_copy[COPY_RATE_CHARS * copies + 1];
	int i, ret;

	dur = c->duration > 0 ? c->duration : PT_DEFAULT_DURATION;
	res = copies_alloc(copies);
	if (!res) {
		fail_reason("mmap: %s", strerror(errno));
		return EXIT_FAIL;
	}
	run.res = res;
	places = run.places = places_alloc(copies);
	for (i = 0; i < copies; i++) {
		copy[i] = (struct pt_copy) {
			.res = &res[i],
			.cpu = c->cpus[c->cpus[1] >= 0 ? i % 2 : 0],
			.duration_ns = (uint64_t)(dur * 1e9),
			.count = c->count_set ? (uint64_t)c->count : 0,
		};
	}
	ret = copies_run(&run, &cnt, &total, &loops, per_copy, sizeof(per_copy));
	if (ret != EXIT_OK)
		goto out_unmap;

	report_param_int(r, "copies", copies);
	report_param_int(r, "msg_size", PT_MSG_SIZE);
	report_param_cpus(r, c);
	report_metric(r, "loops_per_s", total, "loops/s", HIGHER_IS_BETTER);
	report_metric(r, "loops", loops, "loops", BETTER_NONE);
	report_note(r, "per_copy_loops_per_s", "%s", per_copy);
	report_latency(r, "loop", &res[0].h);
	report_note(r, "latency", "ns per write+read loop averaged over each chunk of %d, one "
		    "histogram entry per chunk, all copies merged", PT_CHECK_EVERY);
	report_counters(r, &cnt);
	report_sides(r, NULL, 1, places, copies);
	report_emit(r);

out_unmap:
	places_free(places, copies);
	copies_free(res, copies);
	return ret;
}

const struct bench bench_pipe_throughput = {
	.name = "pipe-throughput",
	.summary = "UnixBench pipe throughput: 512-byte write+read in one process, loops/s",
	.opts = pt_opt_table,
	.opts_size = sizeof(struct pt_opts),
	.defaults = &pt_defaults,
	.run = pt_run,
};
