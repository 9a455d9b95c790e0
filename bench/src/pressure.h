/* SPDX-License-Identifier: MIT */
/*
 * Memory pressure for a workload: stress-ng --vm workers that keep a large
 * anonymous mapping dirty, so the page allocator has to reclaim while the
 * workload runs (the "--memory-pressure" runs of the pipe prealloc series, see
 * pipe_sweep.c).
 */
#ifndef IPCBENCH_PRESSURE_H
#define IPCBENCH_PRESSURE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The knobs, embedded in a workload's option struct. */
struct pressure_opts {
	long long vm;		/* stress-ng --vm N: worker count */
	const char *vm_bytes;	/* --vm-bytes: "50%" (of memory, all workers) or a size */
	const char *vm_method;	/* --vm-method; NULL: stress-ng's default */
	bool vm_no_keep;	/* drop --vm-keep (unmap and remap every cycle) */
};

#define PRESSURE_DEFAULT_VM		2
#define PRESSURE_DEFAULT_VM_BYTES	"50%"

struct pressure {
	pid_t pid;		/* stress-ng, leader of its own process group */
	int workers;		/* vm workers seen running */
	uint64_t rss_bytes;	/* their resident set when declared ready */
	uint64_t target_bytes;	/* what --vm-bytes asks for, all workers */
	double ready_s;		/* from exec to ready */
};

/* Check the knobs; prints one usage line and returns -EINVAL if wrong. */
int pressure_validate(const struct pressure_opts *o);
/* stress-ng is in $PATH and executable. */
bool pressure_available(void);
/*
 * Start stress-ng and wait until its vm workers are really running (every
 * worker present and its mapping resident).  @budget_s bounds stress-ng's
 * own lifetime (its --timeout) in case the engine is killed with SIGKILL.
 * Returns 0, -ENOENT if stress-ng is missing, -ETIMEDOUT or -errno; the
 * failure is printed.
 */
int pressure_start(struct pressure *p, const struct pressure_opts *o,
		   double budget_s);
/* Kill stress-ng and every worker, and reap them.  Safe to call twice. */
void pressure_stop(struct pressure *p);

#endif /* IPCBENCH_PRESSURE_H */
