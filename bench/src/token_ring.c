// SPDX-License-Identifier: MIT
/*
 * token_ring.c: P processes pass one token, plus a decoy, through one pipe.
 *
 * The test case of Linux commit 0ddad21d3e ("pipe: use exclusive waits when
 * reading or writing"; the GNU make jobserver pattern):
 * every process blocks in read(); whoever gets token i writes back i + 1,
 * and after an odd i also the decoy -1, which the next reader drops.  With
 * exclusive waits a write wakes one sleeper, so a transfer costs about one
 * context switch; with wake-all it costs many.  We count them with perf
 * software events inherited by the children (rusage where perf is denied).
 *
 * A writer that reads again at once often gets its own token back before
 * the sleeper it woke is scheduled; own_token_ratio counts those transfers,
 * which cost no switch.  With few CPUs they dominate, so switches per
 * transfer fall well below the one the seed expects on a 16-CPU box.
 *
 * The herd is in the wakeups, not only in the switches: a write wakes every
 * sleeping reader without exclusive waits, but on few CPUs most of them are
 * runnable again before they get a CPU, and the writer takes its token back.
 * wakeups_per_transfer counts the tasks woken (sched:sched_wakeup, see
 * wakeups_start()).  The seed's real case is the GNU make jobserver, where a
 * process holds its token while its job runs and, once it has written the
 * token back, does not ask again at once: --work-us and --pause-us give the
 * loop that shape (time with the token, time between writing it and the
 * next read), spent spinning on the clock or, with --wait sleep, asleep.
 * Both 0, the default, is the seed's exact loop.
 *
 * --no-decoy drops the decoy and --packet opens the pipe in packet mode
 * (O_DIRECT), which with --procs 101 and --duration is the shape of
 * stress-ng's pipeherd stressor: it stops on a timer, not after T transfers.
 * With --duration the engine raises a shared stop flag at the deadline; the
 * process that next reads the token sees it, records the token's value (the
 * transfers so far) and the time, and writes the termination token.
 *
 * Ending: the process that reads T - 1 writes T, the termination token, and
 * exits.  Whoever reads a termination token writes it back and exits, so
 * every sleeper gets one and nobody is left blocked.  The engine keeps the
 * read end open until all are reaped, so the last write never hits EPIPE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ipcbench.h"

#define RING_TRANSFERS	200000	/* default --transfers */

struct ring_opts {
	long long procs;
	long long transfers;
	double work_us;
	double pause_us;
	const char *wait;
	bool no_decoy;
	bool packet;
};

static const char *const ring_waits[] = { "spin", "sleep", NULL };

static const struct ring_opts ring_defaults = {
	.procs = 64,
	.wait = "spin",
};

static const struct opt ring_opt_table[] = {
	{ "procs", OPT_INT, offsetof(struct ring_opts, procs),
	  "processes sharing the pipe (default 64, as the seed)", 1, 4096 },
	{ "transfers", OPT_INT, offsetof(struct ring_opts, transfers),
	  "token transfers (default 200000; --count N is the same; --duration S stops on "
	  "a timer instead)", 1, INT_MAX - 1 },
	{ "work-us", OPT_DOUBLE, offsetof(struct ring_opts, work_us),
	  "microseconds a process holds the token before writing it back, like a "
	  "jobserver client running its job (default 0: the seed's loop)", 0, 1e6 },
	{ "pause-us", OPT_DOUBLE, offsetof(struct ring_opts, pause_us),
	  "microseconds between writing the token back and the next read (default 0)",
	  0, 1e6 },
	{ "wait", OPT_CHOICE, offsetof(struct ring_opts, wait),
	  "how --work-us and --pause-us pass: spin on the clock (a CPU-bound job) or "
	  "sleep (a client waiting for its job, whose timer wakeups are counted apart "
	  "as timer_wakeups) (default spin)", 0, 0, ring_waits },
	{ "no-decoy", OPT_FLAG, offsetof(struct ring_opts, no_decoy),
	  "pass the token alone, without the seed's decoy after every odd transfer" },
	{ "packet", OPT_FLAG, offsetof(struct ring_opts, packet),
	  "set O_DIRECT (packet mode) on the pipe's write end, as stress-ng's pipeherd does" },
	OPT_END
};

/* One child's tallies, in memory shared with the engine. */
struct ring_slot {
	uint64_t handled;	/* tokens it passed on */
	uint64_t own;		/* of them, tokens it had written itself */
	uint64_t sleeps;	/* --wait sleep: timed sleeps, one timer wakeup each */
};

/*
 * --duration: the stop flag the engine raises at the deadline, and what the
 * process that saw it first recorded (in memory shared with the engine).
 */
struct ring_stop {
	atomic_int stop;
	int transfers;		/* the token's value when the stop was seen */
	uint64_t end_ns;
};

struct ring_child {
	int rd;
	int wr;
	int transfers;
	bool decoy;
	struct ring_stop *timer;	/* NULL: stop after transfers */
	uint64_t work_ns;
	uint64_t pause_ns;
	bool sleep;
	struct ring_slot *slot;
};

/* Let @ns pass, on the CPU or asleep (counted in *sleeps). */
static void pass_time(uint64_t ns, bool sleep, uint64_t *sleeps)
{
	uint64_t end = now_ns() + ns;

	if (sleep) {
		struct timespec ts = { .tv_sec = end / 1000000000u,
				       .tv_nsec = end % 1000000000u };

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		(*sleeps)++;
		return;
	}
	while (now_ns() < end)
		;
}

static int ring_validate(const struct common_opts *c, void *wopts)
{
	const struct ring_opts *o = wopts;

	if (c->count_set && c->count > INT_MAX - 1)
		return usage_error("--count %lld: at most %d transfers", c->count, INT_MAX - 1);
	if (o->packet && !o->no_decoy)
		return usage_error("--packet needs --no-decoy: a reader of one token would "
				   "drop the decoy written with it in one packet");
	if (c->duration_set && (c->count_set || o->transfers))
		return usage_error("--duration stops on a timer: drop --%s",
				   c->count_set ? "count" : "transfers");
	return 0;
}

static int ring_child_main(void *arg)
{
	struct ring_child *rc = arg;
	int token[2] = { 0, -1 };
	uint64_t handled = 0, own = 0, sleeps = 0;
	int i, ret, last = -1;

	for (;;) {
		ret = read_full(rc->rd, &i, sizeof(i));
		if (ret)
			return EXIT_FAIL;
		if (i < 0)
			continue;	/* the decoy */
		if (i >= rc->transfers) {
			/* termination token: hand it on for the next sleeper */
			ret = write_full(rc->wr, &i, sizeof(i));
			break;
		}
		if (rc->timer && atomic_load_explicit(&rc->timer->stop, memory_order_relaxed)) {
			/* the deadline passed: i transfers were made; end the ring */
			rc->timer->transfers = i;
			rc->timer->end_ns = now_ns();
			ret = write_full(rc->wr, &rc->transfers, sizeof(rc->transfers));
			break;
		}
		/*
		 * Our own token came back: no other process was woken and
		 * scheduled in time to take it, so this transfer cost no switch.
		 */
		if (i == last)
			own++;
		token[0] = i + 1;
		last = token[0];
		if (rc->work_ns)
			pass_time(rc->work_ns, rc->sleep, &sleeps);
		ret = write_full(rc->wr, token, (1 + (rc->decoy && (i & 1))) * sizeof(int));
		if (ret)
			break;
		handled++;
		if (token[0] >= rc->transfers)
			break;		/* we wrote the termination token */
		if (rc->pause_ns)
			pass_time(rc->pause_ns, rc->sleep, &sleeps);
	}
	rc->slot->handled = handled;
	rc->slot->own = own;
	rc->slot->sleeps = sleeps;
	return ret ? EXIT_FAIL : EXIT_OK;
}

static int ring_run(const struct common_opts *c, void *wopts, struct report *r)
{
	const struct ring_opts *o = wopts;
	int procs = o->procs, transfers, i, fd[2], status, ret = EXIT_FAIL;
	int token[2] = { 0, -1 };
	struct ring_child rc;
	struct counters cnt;
	struct wakeup_counter wk;
	struct ring_slot *slots;
	struct ring_stop *timer = NULL;
	uint64_t total = 0, own = 0, sleeps = 0, busiest = 0, t_fork, t0, t1;
	size_t len = procs * sizeof(*slots) + sizeof(*timer);
	pid_t *pids;
	bool failed = false;
	double elapsed, cs;

	transfers = c->count_set ? c->count : o->transfers ? o->transfers : RING_TRANSFERS;
	slots = mmap(NULL, len, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED) {
		fail_reason("mmap: %s", strerror(errno));
		return EXIT_FAIL;
	}
	if (c->duration_set) {
		/* the termination token is one no transfer count reaches */
		timer = (struct ring_stop *)(slots + procs);
		transfers = INT_MAX;
	}
	pids = calloc(procs, sizeof(*pids));
	if (!pids) {
		fail_reason("out of memory");
		goto out_unmap;
	}
	if (pipe2(fd, O_CLOEXEC) < 0) {
		fail_reason("pipe: %s", strerror(errno));
		goto out_free;
	}
	if (o->packet && fcntl(fd[1], F_SETFL, O_DIRECT) < 0) {
		fail_reason("--packet: F_SETFL O_DIRECT: %s", strerror(errno));
		goto out_close;
	}

	rc.rd = fd[0];
	rc.wr = fd[1];
	rc.transfers = transfers;
	rc.work_ns = o->work_us * 1000;
	rc.pause_ns = o->pause_us * 1000;
	rc.sleep = !strcmp(o->wait, "sleep");
	rc.decoy = !o->no_decoy;
	rc.timer = timer;
	/* the counters must be running before the children are forked */
	wakeups_start(&wk);
	counters_start(&cnt);
	t_fork = now_ns();
	for (i = 0; i < procs; i++) {
		rc.slot = &slots[i];
		pids[i] = spawn(ring_child_main, &rc);
		if (pids[i] < 0) {
			fail_reason("fork child %d of %d: %s", i, procs, strerror(-pids[i]));
			/* the children so far wait for a token that never comes */
			kill_children();
			counters_stop(&cnt);
			wakeups_stop(&wk);
			goto out_close;
		}
	}
	t0 = now_ns();
	status = write_full(fd[1], token, (1 + rc.decoy) * sizeof(int));
	if (status) {
		fail_reason("write the first token: %s", strerror(-status));
		kill_children();
		counters_stop(&cnt);
		wakeups_stop(&wk);
		goto out_close;
	}
	if (timer) {
		struct timespec ts;
		uint64_t deadline = t0 + (uint64_t)(c->duration * 1e9);

		ts.tv_sec = deadline / 1000000000u;
		ts.tv_nsec = deadline % 1000000000u;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		atomic_store(&timer->stop, 1);
	}
	for (i = 0; i < procs; i++) {
		status = reap(pids[i]);
		if (status) {
			fail_reason("child %d exited with status %d", i, status);
			failed = true;
		}
	}
	t1 = now_ns();
	counters_stop(&cnt);
	wakeups_stop(&wk);
	if (failed)
		goto out_close;

	for (i = 0; i < procs; i++) {
		total += slots[i].handled;
		own += slots[i].own;
		sleeps += slots[i].sleeps;
		if (slots[i].handled > busiest)
			busiest = slots[i].handled;
	}
	if (timer)
		transfers = timer->transfers;
	elapsed = ((timer ? timer->end_ns : t1) - t0) / 1e9;
	cs = cnt.context_switches;
	if (transfers <= 0) {
		fail_reason("no transfer in --duration %g s", c->duration);
		goto out_close;
	}

	report_param_int(r, "procs", procs);
	report_param_int(r, "transfers", transfers);
	report_param_bool(r, "decoy", rc.decoy);
	report_param_bool(r, "packet", o->packet);
	report_param_str(r, "stop", timer ? "timer" : "transfers");
	if (timer) {
		/*
		 * What a clock from the first fork to the last reap (stress-ng's
		 * pipeherd) adds to elapsed_s: forking the herd, and from the
		 * stop to the last child reaped.
		 */
		report_metric(r, "fork_s", (t0 - t_fork) / 1e9, "s", BETTER_NONE);
		report_metric(r, "reap_s", (t1 - timer->end_ns) / 1e9, "s", BETTER_NONE);
	}
	if (rc.work_ns || rc.pause_ns) {
		report_param_int(r, "work_ns", rc.work_ns);
		report_param_int(r, "pause_ns", rc.pause_ns);
		report_param_str(r, "wait", o->wait);
	}
	report_metric(r, "elapsed_s", elapsed, "s", LOWER_IS_BETTER);
	report_metric(r, "context_switches", cs, "switches", LOWER_IS_BETTER);
	report_metric(r, "cs_per_transfer", cs / transfers, "switches", LOWER_IS_BETTER);
	if (wk.ok) {
		/*
		 * Each timed sleep ends in one timer wakeup, which is the
		 * loop's own and not the pipe's: take them out.  What is left
		 * also holds the engine's wakeups as each child exits.
		 */
		report_metric(r, "wakeups", wk.wakeups, "wakeups", BETTER_NONE);
		if (sleeps)
			report_metric(r, "timer_wakeups", sleeps, "wakeups", BETTER_NONE);
		report_metric(r, "wakeups_per_transfer",
			      ((double)wk.wakeups - sleeps) / transfers, "wakeups",
			      LOWER_IS_BETTER);
	} else {
		report_note(r, "wakeups", "not counted: %s", wk.why);
	}
	if (cnt.perf)
		report_metric(r, "cpu_migrations", cnt.cpu_migrations, "migrations",
			      BETTER_NONE);
	else
		report_note(r, "counters", "perf events not allowed: context switches and "
			    "task clock from getrusage, no CPU migrations");
	report_metric(r, "task_clock_ms", cnt.task_clock_ns / 1e6, "ms", BETTER_NONE);
	report_metric(r, "voluntary_cs", cnt.voluntary_cs, "switches", BETTER_NONE);
	report_metric(r, "involuntary_cs", cnt.involuntary_cs, "switches", BETTER_NONE);
	/* why a switch per transfer is not reached with few CPUs: see ring_child_main() */
	report_metric(r, "own_token_ratio", (double)own / transfers, "ratio", BETTER_NONE);
	report_metric(r, "busiest_share", (double)busiest / transfers, "ratio", BETTER_NONE);
	report_counters(r, &cnt);
	if (total != (uint64_t)transfers) {
		report_note(r, "error", "children handled %llu transfers, expected %d",
			    (unsigned long long)total, transfers);
		report_emit(r);
		fail_reason("children handled %llu transfers, expected %d",
			    (unsigned long long)total, transfers);
		goto out_close;
	}
	report_emit(r);
	ret = EXIT_OK;

out_close:
	close(fd[0]);
	close(fd[1]);
out_free:
	free(pids);
out_unmap:
	munmap(slots, len);
	return ret;
}

const struct bench bench_token_ring = {
	.name = "token-ring",
	.summary = "P processes pass a token (and a decoy) through one pipe: context "
		   "switches per transfer (after Linux commit 0ddad21d3e)",
	.opts = ring_opt_table,
	.opts_size = sizeof(struct ring_opts),
	.defaults = &ring_defaults,
	.perf_counters = true,
	.validate = ring_validate,
	.run = ring_run,
};
