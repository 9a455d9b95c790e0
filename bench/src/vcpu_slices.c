// SPDX-License-Identifier: MIT
/*
 * vcpu_slices.c: how a guest's vCPUs take turns, seen from inside it.
 *
 * Two threads, pinned to CPU A and CPU B (--cpus A,B).  The counter only
 * counts; the watcher reads the counter's count in a loop and notes, on its
 * own clock, each moment the count moves after standing still for a while.
 *
 * Where two CPUs run at once (hardware, KVM, multi-threaded TCG) the count
 * moves between almost every two reads.  Where they take turns (QEMU's icount,
 * which runs every vCPU on one host thread, round robin) the count stands
 * still for the whole of the watcher's turn and jumps once per round, so the
 * time between jumps is one turn of each vCPU: in guest instructions, under
 * icount shift=0 (a guest nanosecond per instruction).  That length decides
 * which interleavings of two CPUs the deterministic mode can produce.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "ipcbench.h"

#define VS_DEFAULT_JUMPS	200
#define VS_DEFAULT_DURATION	2.0

struct vs_opts {
	long long still;
};

static const struct vs_opts vs_defaults = {
	.still = 4096,
};

static const struct opt vs_opt_table[] = {
	{ "still", OPT_INT, offsetof(struct vs_opts, still),
	  "reads without a change before a change counts as a jump to a new turn", 2, 1e9 },
	OPT_END
};

struct vs_shared {
	uint64_t count;		/* the counter's, read by the watcher */
	int stop;
	int cpu;
	int pin_error;
};

static void *vs_counter(void *arg)
{
	struct vs_shared *s = arg;
	uint64_t i = 0;
	int ret = pin_cpu(s->cpu);

	if (ret < 0) {
		__atomic_store_n(&s->pin_error, -ret, __ATOMIC_RELEASE);
		return NULL;
	}
	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED))
		__atomic_store_n(&s->count, ++i, __ATOMIC_RELAXED);
	return NULL;
}

static int vs_validate(const struct common_opts *c, void *wopts)
{
	(void)wopts;
	if (c->cpus[0] < 0 || c->cpus[1] < 0 || c->cpus[0] == c->cpus[1])
		return usage_error("vcpu-slices needs --cpus A,B with two different CPUs");
	return 0;
}

static int vs_run(const struct common_opts *c, void *wopts, struct report *r)
{
	const struct vs_opts *o = wopts;
	struct vs_shared s = { .cpu = c->cpus[0] };
	uint64_t jumps = 0, reads = 0, moves = 0, still = 0, want, deadline;
	uint64_t last, t0, t, prev_jump;
	struct hist turns;
	pthread_t th;
	int ret;

	want = c->count_set ? (uint64_t)c->count : VS_DEFAULT_JUMPS;
	ret = pin_cpu(c->cpus[1]);
	if (ret < 0) {
		fail_reason("pin to cpu %d: %s", c->cpus[1], strerror(-ret));
		return EXIT_FAIL;
	}
	ret = pthread_create(&th, NULL, vs_counter, &s);
	if (ret) {
		fail_reason("pthread_create: %s", strerror(ret));
		return EXIT_FAIL;
	}
	hist_init(&turns);
	/* the counter's first store: from here on the count only stands still between turns */
	while (!__atomic_load_n(&s.count, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&s.pin_error, __ATOMIC_ACQUIRE))
		;
	t0 = prev_jump = now_ns();
	deadline = t0 + (uint64_t)((c->duration > 0 ? c->duration : VS_DEFAULT_DURATION) * 1e9);
	last = __atomic_load_n(&s.count, __ATOMIC_RELAXED);
	for (t = t0; jumps < want && !s.pin_error; reads++) {
		uint64_t v = __atomic_load_n(&s.count, __ATOMIC_RELAXED);

		if (v == last) {
			/* the clock only now and then: reading it is most of a turn's cost */
			if (++still % 4096 == 0 && (t = now_ns()) >= deadline)
				break;
			continue;
		}
		moves++;
		if (still >= (uint64_t)o->still) {
			t = now_ns();
			if (jumps++)
				hist_add(&turns, t - prev_jump);
			prev_jump = t;
		}
		still = 0;
		last = v;
	}
	t = now_ns();
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	if (s.pin_error) {
		fail_reason("pin to cpu %d: %s", s.cpu, strerror(s.pin_error));
		return EXIT_FAIL;
	}

	report_param_cpus(r, c);
	report_param_int(r, "still", o->still);
	report_metric(r, "jumps", (double)jumps, "jumps", BETTER_NONE);
	report_metric(r, "moved_per_read", reads ? (double)moves / reads : 0, "share",
		      BETTER_NONE);
	report_metric(r, "turn_ns", jumps > 1 ? (double)hist_quantile(&turns, 0.5) : 0, "ns",
		      BETTER_NONE);
	report_latency(r, "turn", &turns);
	report_note(r, "turn", "guest ns from one jump of the count to the next: one turn of "
		    "each vCPU where they take turns (icount shift=0: instructions)");
	report_note(r, "elapsed_ns", "%llu", (unsigned long long)(t - t0));
	report_emit(r);
	return EXIT_OK;
}

const struct bench bench_vcpu_slices = {
	.name = "vcpu-slices",
	.summary = "how two vCPUs interleave: the length of each one's turn, seen from inside",
	.opts = vs_opt_table,
	.opts_size = sizeof(struct vs_opts),
	.defaults = &vs_defaults,
	.validate = vs_validate,
	.run = vs_run,
};
