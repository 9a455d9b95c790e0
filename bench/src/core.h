/* SPDX-License-Identifier: MIT */
/* core.h: interfaces private to the engine core (main.c, proc.c, report.c). */
#ifndef IPCBENCH_CORE_H
#define IPCBENCH_CORE_H

#include <stdbool.h>

#include "env.h"
#include "ipcbench.h"

/* Record the engine's pid and become a child subreaper. */
void proc_init(void);
/* Kill and reap children, run cleanups, restore sysctls.  Signal safe. */
void engine_cleanup(void);

/* Whether counters_start() opens perf events (true) or uses rusage only. */
void counters_use_perf(bool perf);

/* Name the workload in every later message. */
void msg_set_workload(const char *name);

struct report *report_new(const char *workload, bool json, const struct env_info *env);
/* Start sample @index; warmup samples are marked so consumers drop them. */
void report_begin_sample(struct report *r, int index, bool warmup);
/* How many objects report_emit() has printed so far. */
int report_emitted(const struct report *r);

#endif
