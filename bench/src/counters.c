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
 *
 * In the kernel lab's deterministic mode a QEMU plugin counts, from outside
 * the guest, what the guest executes between marker system calls (docs/lab.md).
 * When IPCBENCH_MARK names a file, the section is opened with swapon(NULL, 0)
 * and closed with quotactl(0, NULL, 0, NULL), which fail (EFAULT or ENOSYS;
 * ENODEV where quotas are built in) and which nothing else in the guest calls,
 * and the file gets one byte per mark: its size before a mark is the
 * number of marks made before, so the window the open mark starts is that
 * size + 1, whatever earlier samples did or failed to do.  The marks are made
 * outside the perf events, and the file's writes outside the window, so that
 * neither the task clock nor the window counts the other's bookkeeping.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

static bool record_mark(const char *path, long *before)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	bool ok;

	if (fd < 0)
		return false;
	ok = fstat(fd, &st) == 0 && write(fd, "m", 1) == 1;
	if (ok && before)
		*before = st.st_size;
	close(fd);
	return ok;
}

static void window_open(struct counters *c)
{
	const char *path = getenv("IPCBENCH_MARK");
	long before = 0;

	c->window = 0;
	c->window_open = false;
	if (!path || !*path || !record_mark(path, &before))
		return;
	syscall(SYS_swapon, NULL, 0);
	c->window = before + 1;
	c->window_open = true;
}

static void window_close(struct counters *c)
{
	if (!c->window_open)
		return;
	syscall(SYS_quotactl, 0, NULL, 0, NULL);
	c->window_open = false;
	if (!record_mark(getenv("IPCBENCH_MARK"), NULL))
		c->window = 0;	/* the next window's number would be off: say none */
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
	/* before the rusage snapshot: the mark file's write over 9p may sleep */
	window_open(c);
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
	window_close(c);
}

/* Where the kernel says which number sched:sched_wakeup has. */
static const char *const wakeup_id_paths[] = {
	"/sys/kernel/tracing/events/sched/sched_wakeup/id",
	"/sys/kernel/debug/tracing/events/sched/sched_wakeup/id",
};

static long long tracepoint_id(void)
{
	unsigned int i;

	for (i = 0; i < sizeof(wakeup_id_paths) / sizeof(wakeup_id_paths[0]); i++) {
		FILE *f = fopen(wakeup_id_paths[i], "r");
		long long id;
		int n;

		if (!f)
			continue;
		n = fscanf(f, "%lld", &id);
		fclose(f);
		if (n == 1)
			return id;
	}
	return -1;
}

static void wakeups_close(struct wakeup_counter *w)
{
	int i;

	for (i = 0; i < w->nfd; i++)
		close(w->fd[i]);
	free(w->fd);
	w->fd = NULL;
	w->nfd = 0;
}

void wakeups_start(struct wakeup_counter *w)
{
	struct perf_event_attr attr;
	char comm[32], filter[64];
	long long id = tracepoint_id();
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	FILE *f;
	int cpu;

	memset(w, 0, sizeof(*w));
	if (id < 0) {
		snprintf(w->why, sizeof(w->why), "no sched:sched_wakeup tracepoint "
			 "(kernel without event tracing, or tracefs not mounted)");
		return;
	}
	f = fopen("/proc/self/comm", "r");
	if (!f || !fgets(comm, sizeof(comm), f)) {
		if (f)
			fclose(f);
		snprintf(w->why, sizeof(w->why), "cannot read /proc/self/comm");
		return;
	}
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	snprintf(filter, sizeof(filter), "comm == \"%s\"", comm);

	w->fd = calloc(ncpu > 0 ? ncpu : 1, sizeof(*w->fd));
	if (!w->fd) {
		snprintf(w->why, sizeof(w->why), "out of memory");
		return;
	}
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = id;
	attr.disabled = 1;
	for (cpu = 0; cpu < ncpu; cpu++) {
		int fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0 && errno == ENODEV)
			continue;	/* an offline CPU wakes nobody */
		if (fd < 0) {
			snprintf(w->why, sizeof(w->why), "perf_event_open(sched:sched_wakeup, "
				 "cpu %d): %s", cpu, strerror(errno));
			wakeups_close(w);
			return;
		}
		w->fd[w->nfd++] = fd;
		if (ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) < 0) {
			snprintf(w->why, sizeof(w->why), "sched:sched_wakeup filter '%s': %s",
				 filter, strerror(errno));
			wakeups_close(w);
			return;
		}
	}
	for (cpu = 0; cpu < w->nfd; cpu++)
		ioctl(w->fd[cpu], PERF_EVENT_IOC_ENABLE, 0);
	w->ok = w->nfd > 0;
	if (!w->ok)
		snprintf(w->why, sizeof(w->why), "no online CPU to count on");
}

void wakeups_stop(struct wakeup_counter *w)
{
	int i;

	for (i = 0; w->ok && i < w->nfd; i++) {
		uint64_t v;

		ioctl(w->fd[i], PERF_EVENT_IOC_DISABLE, 0);
		if (read(w->fd[i], &v, sizeof(v)) != sizeof(v)) {
			snprintf(w->why, sizeof(w->why), "reading a wakeup counter: %s",
				 strerror(errno));
			w->ok = false;
			break;
		}
		w->wakeups += v;
	}
	wakeups_close(w);
}
