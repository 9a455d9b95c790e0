// SPDX-License-Identifier: MIT
/*
 * counters.c: scheduler counters over a measured section.
 *
 * perf software events are opened on this process with inherit=1 before the
 * section's children are forked; a child's counts fold into ours when it
 * exits, so the section must reap its children before counters_stop().
 * They are not free: every context switch of a task that carries them
 * updates them, which cost fastpipe's vmsplice->splice rung about 30% and
 * pinned pipe-context 20% of their throughput on the project VM.  So only
 * the workloads that study the scheduler use them by default, and
 * --counters overrides that.
 * getrusage() deltas are always taken: they split voluntary from
 * involuntary switches and keep working where perf_event_paranoid forbids
 * perf events.
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"

static bool use_perf = true;

void counters_use_perf(bool perf)
{
	use_perf = perf;
}

static const uint64_t sw_events[4] = {
	PERF_COUNT_SW_CONTEXT_SWITCHES,
	PERF_COUNT_SW_CPU_MIGRATIONS,
	PERF_COUNT_SW_TASK_CLOCK,
	PERF_COUNT_SW_PAGE_FAULTS,
};

static int open_sw_event(uint64_t config)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = config;
	attr.disabled = 1;
	attr.inherit = 1;
	attr.exclude_hv = 1;
	return syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static double tv_s(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

static void rusage_now(uint64_t *nvcsw, uint64_t *nivcsw, uint64_t *minflt,
		       uint64_t *majflt, double *user, double *sys)
{
	struct rusage self, kids;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	*nvcsw = self.ru_nvcsw + kids.ru_nvcsw;
	*nivcsw = self.ru_nivcsw + kids.ru_nivcsw;
	*minflt = self.ru_minflt + kids.ru_minflt;
	*majflt = self.ru_majflt + kids.ru_majflt;
	*user = tv_s(self.ru_utime) + tv_s(kids.ru_utime);
	*sys = tv_s(self.ru_stime) + tv_s(kids.ru_stime);
}

void counters_start(struct counters *c)
{
	unsigned int i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < 4; i++)
		c->fd[i] = -1;
	c->perf = use_perf;
	for (i = 0; c->perf && i < 4; i++) {
		c->fd[i] = open_sw_event(sw_events[i]);
		if (c->fd[i] < 0) {
			c->perf = false;
			c->perf_denied = true;
		}
	}
	if (!c->perf) {
		for (i = 0; i < 4; i++)
			if (c->fd[i] >= 0)
				close(c->fd[i]);
		for (i = 0; i < 4; i++)
			c->fd[i] = -1;
	}
	rusage_now(&c->start.nvcsw, &c->start.nivcsw, &c->start.minflt,
		   &c->start.majflt, &c->start.user, &c->start.sys);
	if (c->perf)
		for (i = 0; i < 4; i++)
			ioctl(c->fd[i], PERF_EVENT_IOC_ENABLE, 0);
}

void counters_stop(struct counters *c)
{
	uint64_t v[4] = { 0 }, nvcsw, nivcsw, minflt, majflt;
	double user, sys;
	unsigned int i;

	if (c->perf) {
		for (i = 0; i < 4; i++) {
			ioctl(c->fd[i], PERF_EVENT_IOC_DISABLE, 0);
			if (read(c->fd[i], &v[i], sizeof(v[i])) != sizeof(v[i]))
				c->perf = false;
			close(c->fd[i]);
			c->fd[i] = -1;
		}
	}
	if (c->perf) {
		c->context_switches = v[0];
		c->cpu_migrations = v[1];
		c->task_clock_ns = v[2];
		c->page_faults = v[3];
	}
	rusage_now(&nvcsw, &nivcsw, &minflt, &majflt, &user, &sys);
	c->voluntary_cs = nvcsw - c->start.nvcsw;
	c->involuntary_cs = nivcsw - c->start.nivcsw;
	c->minor_faults = minflt - c->start.minflt;
	c->major_faults = majflt - c->start.majflt;
	c->user_s = user - c->start.user;
	c->sys_s = sys - c->start.sys;
	if (!c->perf) {
		/* the rusage view of the same quantities */
		c->context_switches = c->voluntary_cs + c->involuntary_cs;
		c->task_clock_ns = (uint64_t)((c->user_s + c->sys_s) * 1e9);
		c->page_faults = c->minor_faults + c->major_faults;
	}
}
