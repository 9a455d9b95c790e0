/* SPDX-License-Identifier: MIT */
/*
 * ipcbench: shared declarations for the engine core and its workloads.
 *
 * A workload is one row in the registry (main.c): a name, a one-line summary,
 * a table of its own options, and a run function.  The core owns everything
 * that must behave the same for every workload: option parsing and validation
 * (exit 2), environment capture, the JSON/text report, child-process tracking,
 * the watchdog, sysctl restore and signal handling.
 */
#ifndef IPCBENCH_H
#define IPCBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "shared.h"	/* exit codes, write_full/read_full, rng_next, sysctls */

#define IPCBENCH_VERSION	"0.1.0"
#define IPCBENCH_SCHEMA		"ipcbench/1"
/* ipcbench list --json: the registry as data */
#define IPCBENCH_LIST_SCHEMA	"ipcbench-list/1"

/* ---- options ------------------------------------------------------------ */

enum opt_type {
	OPT_FLAG,	/* bool, no argument */
	OPT_INT,	/* long long, plain integer */
	OPT_SIZE,	/* long long bytes, accepts K/M/G (powers of 1024) */
	OPT_DOUBLE,	/* double */
	OPT_CHOICE,	/* const char *, one of opt.choices (NULL-terminated) */
	OPT_STRING,	/* const char *, free text */
};

struct opt {
	const char *name;		/* long name without "--" */
	enum opt_type type;
	size_t offset;			/* offsetof() into the workload's option struct */
	const char *help;
	double min, max;		/* inclusive bounds for numeric types */
	const char *const *choices;	/* OPT_CHOICE only */
};

#define OPT_END { .name = NULL }

/* Options every workload accepts; parsed by the core. */
struct common_opts {
	double duration;	/* seconds of measurement; 0 = workload default */
	long long count;	/* operations instead of a duration; 0 = unset */
	int samples;		/* measured samples to emit (default 1) */
	int warmup;		/* extra samples first, emitted with "warmup": true */
	int cpus[2];		/* --cpus A,B; -1 = not pinned */
	double timeout;		/* watchdog seconds for the whole invocation */
	bool json;
	const char *counters;	/* --counters perf|rusage; NULL = the workload's default */
	unsigned long long seed;
	bool duration_set;	/* user gave --duration */
	bool count_set;		/* user gave --count */
};

struct report;
struct strbuf;
struct place;

struct bench {
	const char *name;
	const char *summary;
	const struct opt *opts;		/* workload options, OPT_END terminated */
	size_t opts_size;		/* sizeof the workload's option struct */
	const void *defaults;		/* initial values of that struct */
	/*
	 * Count with inherited perf events by default (else getrusage only,
	 * unless --counters perf).  Only a workload whose subject is the
	 * scheduler should: the events add work to every context switch of
	 * the measured tasks (pinned pipe-context ran 20% slower with them).
	 */
	bool perf_counters;
	/*
	 * Optional cross-option validation after parsing.  Return 0, or print
	 * one line through usage_error() and return -EINVAL.
	 */
	int (*validate)(const struct common_opts *c, void *wopts);
	/*
	 * Run one sample.  Record params, metrics, latency and counters into
	 * @r and call report_emit(r) once per result object (a --sweep or
	 * --ladder emits several).  Return EXIT_OK, EXIT_FAIL or EXIT_SKIP.
	 */
	int (*run)(const struct common_opts *c, void *wopts, struct report *r);
	/*
	 * Optional: what a front end needs to know to drive the workload
	 * without a copy of the engine's own tables (the --sweep grid, the
	 * --ladder rungs).  Append one or more "key":value members, comma
	 * separated, to the workload's object in ipcbench list --json.
	 */
	void (*describe)(struct strbuf *sb);
};

/* Print "ipcbench: <workload>: <msg>" on one line; returns -EINVAL. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "ipcbench: skip: <msg>"; the caller returns EXIT_SKIP. */
void skip_reason(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "ipcbench: error: <msg>"; the caller returns EXIT_FAIL. */
void fail_reason(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- log-linear latency histogram (hist.c) ------------------------------ */

/*
 * Each power-of-two range [2^k, 2^(k+1)) ns is cut into HIST_SUB linear
 * buckets, so a value's bucket midpoint is within 1/(2*HIST_SUB) of it:
 * 0.4% with 128 sub-buckets, from 1 ns up to 2^HIST_OCTAVES ns.
 */
#define HIST_SUB_BITS	7
#define HIST_SUB	(1u << HIST_SUB_BITS)
#define HIST_OCTAVES	40
#define HIST_BUCKETS	((HIST_OCTAVES + 1) * HIST_SUB)

struct hist {
	uint64_t count;
	uint64_t max;
	uint64_t min;
	long double sum;
	uint64_t bucket[HIST_BUCKETS];
};

void hist_init(struct hist *h);
void hist_add(struct hist *h, uint64_t ns);
void hist_merge(struct hist *dst, const struct hist *src);
/* Value at quantile q in [0,1], the midpoint of its bucket (clamped to max). */
uint64_t hist_quantile(const struct hist *h, double q);
double hist_mean(const struct hist *h);
/* Bucket index <-> bounds, for JSON export and tests. */
unsigned int hist_index(uint64_t ns);
uint64_t hist_lower(unsigned int idx);
uint64_t hist_upper(unsigned int idx);	/* exclusive */
/*
 * What timing one operation into a histogram costs, in ns: two clock reads
 * and a hist_add() around nothing, averaged over @n rounds.  A workload that
 * times every operation reports it, so each result carries its own
 * instrument cost.
 */
double hist_timing_cost_ns(unsigned int n);

/* ---- counters (counters.c) ---------------------------------------------- */

/*
 * Scheduler counters over a measured section, covering this process and
 * every child it forks inside the section.  perf software events with
 * inherit=1 when wanted (--counters) and allowed,
 * getrusage(RUSAGE_SELF + RUSAGE_CHILDREN) deltas always
 * (voluntary/involuntary switches need it anyway).
 */
struct counters {
	bool perf;			/* perf events were counted */
	bool perf_denied;		/* wanted, but perf_event_open failed */
	uint64_t context_switches;	/* perf */
	uint64_t cpu_migrations;	/* perf */
	uint64_t task_clock_ns;		/* perf */
	uint64_t page_faults;		/* perf */
	uint64_t voluntary_cs;		/* rusage */
	uint64_t involuntary_cs;	/* rusage */
	uint64_t minor_faults;		/* rusage */
	uint64_t major_faults;		/* rusage */
	double user_s, sys_s;		/* rusage */
	long window;			/* the lab's window of the section, or 0 (IPCBENCH_MARK) */
	/* private */
	bool window_open;
	int fd[4];
	struct { uint64_t nvcsw, nivcsw, minflt, majflt; double user, sys; } start;
};

/* Start before forking the children to be measured. */
void counters_start(struct counters *c);
/* Stop after every child of the section has been reaped. */
void counters_stop(struct counters *c);

/*
 * Wakeups of this program's processes over a measured section: the
 * sched:sched_wakeup tracepoint, counted on every CPU and filtered on the
 * woken task's comm, which forked children share with the engine.  Not a
 * per-task counter: perf delivers a sched_wakeup to the waker's and to the
 * wakee's events, so a task counter inherited by both would count a
 * wakeup between two of them twice.  Needs tracepoints in the kernel
 * (tracefs or debugfs mounted for the event id) and the right to count
 * CPU-wide (root, or perf_event_paranoid <= 0); otherwise ok is false and
 * why says what was missing.
 */
struct wakeup_counter {
	bool ok;
	char why[160];
	uint64_t wakeups;
	/* private */
	int nfd;
	int *fd;
};

/* Start before the section; the processes to count must keep our comm. */
void wakeups_start(struct wakeup_counter *w);
void wakeups_stop(struct wakeup_counter *w);

/* ---- processes, watchdog, sysctls (proc.c) ------------------------------ */

/*
 * fork() a tracked child that runs fn(arg) and _exit()s with its return
 * value.  The child dies with the engine (PR_SET_PDEATHSIG) and is killed
 * and reaped by the core on a signal, the watchdog, or exit.  Returns the
 * pid or -errno.
 */
pid_t spawn(int (*fn)(void *arg), void *arg);
/* Run argv in a new process group (so its own children die with it). */
pid_t spawn_exec(char *const argv[]);
/* Wait for a tracked child; returns its exit status (0..255) or -errno. */
int reap(pid_t pid);
/* Kill (SIGKILL) and reap every tracked child. */
void kill_children(void);
/* Pin the calling thread/process to one CPU; -errno if not possible. */
int pin_cpu(int cpu);

/*
 * sysctl_set() and sysctl_read() are shared.h's: the core puts every value
 * sysctl_set() changed back on every exit path (normal, error, signal,
 * watchdog).
 */
long long sysctl_read_ll(const char *path);

/*
 * Register a cleanup to run once in the engine process on every exit path:
 * normal exit, error exit, SIGINT/SIGTERM and the watchdog.  It may run in
 * signal context, so it must only make async-signal-safe calls (close,
 * unlink, mq_unlink, kill, write ...).  Children never run it.
 */
void on_cleanup(void (*fn)(void));

/* True in the engine's own process, false in forked children. */
bool is_engine_process(void);

/* ---- N copies at once (copies.c) ---------------------------------------- */

/*
 * A start gate, so that forked copies begin measuring together.  The parent
 * calls gate_open() before spawn(), each child gate_child_ready_wait() once
 * set up, then the parent gate_release(n) and gate_close() on every path.
 */
struct start_gate {
	int go[2];	/* EOF on go[0] releases every child at once */
	int ready[2];	/* one byte per child that is set up */
	struct place *place;	/* in a child: started when the gate releases it, or NULL */
};

int gate_open(struct start_gate *g);
/* In the child: report ready, block until released; -EPIPE if the gate broke. */
int gate_child_ready_wait(struct start_gate *g);
/* Wait for @n children to be ready, then release them; -EPIPE if one died first. */
int gate_release(struct start_gate *g, int n);
void gate_close(struct start_gate *g);

/* One copy's totals and histogram, in a MAP_SHARED slot it fills in. */
struct copy_result {
	uint64_t ops;
	uint64_t elapsed_ns;
	struct hist h;
};

/*
 * @n copy_results with empty histograms in memory shared with the children
 * forked after it; NULL with errno set if mmap fails.
 */
struct copy_result *copies_alloc(int n);
void copies_free(struct copy_result *res, int n);
/*
 * After every copy is reaped: return the sum of the copies' rates (ops/s),
 * set *ops to their summed ops, merge every histogram into res[0].h, and
 * write the per-copy rates as "r0,r1,..." into per_copy (truncated to size;
 * COPY_RATE_CHARS per copy is always enough).
 */
#define COPY_RATE_CHARS	24	/* "%.0f," of any rate below 1e22 */
double copies_sum(struct copy_result *res, int n, double *ops,
		  char *per_copy, size_t size);

/*
 * A --copies run: @copies copies of @procs_per_copy processes each, forked
 * together and measuring into res[copy].  Process @proc (copy by copy, so
 * copy proc / procs_per_copy) runs proc_main(arg, proc, gate) in its child:
 * it sets up, passes gate_child_ready_wait(gate), measures and returns its
 * exit status.
 */
struct copies_run {
	int copies;
	int procs_per_copy;
	/* what a copy's processes are called in messages; NULL: one per copy */
	const char *const *roles;
	int (*proc_main)(void *arg, int proc, struct start_gate *gate);
	/*
	 * Optional, in the parent once every process is forked and before the
	 * gate opens: give up what the children alone must hold (pipe ends).
	 */
	void (*forked)(void *arg);
	void *arg;
	struct copy_result *res;
	/*
	 * Optional: one place per process (places_alloc(copies *
	 * procs_per_copy)), filled from the gate's release to proc_main's return.
	 */
	struct place *places;
};

/*
 * Fork every process of @run with the counters running, release them at
 * once, reap them all and copies_sum() the results into *rate, *ops and
 * per_copy.  EXIT_OK, or EXIT_FAIL after saying why with every child killed.
 */
int copies_run(const struct copies_run *run, struct counters *cnt, double *rate,
	       double *ops, char *per_copy, size_t size);

/* ---- where each side ran (place.c) ------------------------------------------ */

/*
 * One side's place: the CPU it was on when its measured work started and
 * when it ended, and the scheduler's migrations of it in between.  -1 where
 * unknown (sched_getcpu() failed, no /proc/thread-self/sched).
 */
struct place {
	int cpu_start, cpu_end;
	long long migrations;
	long long mig_start;	/* private */
};

/* @n places in memory shared with the children forked after it; NULL if mmap fails. */
struct place *places_alloc(int n);
void places_free(struct place *p, int n);
/* In the side itself, outside its timed loop; a NULL place is ignored. */
void place_start(struct place *p);
void place_end(struct place *p);

/* ---- time --------------------------------------------------------------- */

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ---- report (report.c) ---------------------------------------------------- */

enum better { LOWER_IS_BETTER, HIGHER_IS_BETTER, BETTER_NONE };

void report_param_int(struct report *r, const char *key, long long v);
void report_param_str(struct report *r, const char *key, const char *v);
void report_param_bool(struct report *r, const char *key, bool v);
/* "cpus": "A,B" from --cpus, or "unpinned". */
void report_param_cpus(struct report *r, const struct common_opts *c);
void report_metric(struct report *r, const char *key, double v,
		   const char *unit, enum better better);
/* A latency distribution in ns under "latency": {key: {...}}. */
void report_latency(struct report *r, const char *key, const struct hist *h);
void report_counters(struct report *r, const struct counters *c);
/*
 * "sides": [{"role", "copy", "cpu_start", "cpu_end", "migrations"}, ...], one
 * per process, copy by copy: @roles names the @per_copy processes of a copy
 * (NULL: each copy is one process, role "copy").  -1 (unknown) prints as null.
 */
void report_sides(struct report *r, const char *const *roles, int per_copy,
		  const struct place *p, int n);
/* Free-form facts worth keeping, e.g. "huge_pages": "verified 2 MiB". */
void report_note(struct report *r, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Print the current object (JSON line or text table) and start a new one. */
void report_emit(struct report *r);

/* ---- helpers shared by workloads (util.c) ------------------------------- */

/* Allocate a page-aligned buffer of len bytes, touched unless told not to. */
void *alloc_buffer(size_t len, bool touch);
/* F_SETPIPE_SZ with a clear message; returns the size granted or -errno. */
int set_pipe_size(int fd, long long size);

#endif /* IPCBENCH_H */
