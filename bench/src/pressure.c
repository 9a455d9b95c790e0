// SPDX-License-Identifier: MIT
/*
 * Memory pressure through stress-ng --vm: start it, wait until its workers
 * really hold their memory, stop it and wait until that memory is free again.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipcbench.h"
#include "pressure.h"

#define PRESSURE_POLL_NS	(50 * 1000000ull)
/* Filling 50% of 24 GiB takes a few seconds; reclaim can make it slower. */
#define PRESSURE_READY_NS	(120 * 1000000000ull)
/* The worker's RSS counts as settled once it moved less than 1% in a second. */
#define PRESSURE_SETTLE_NS	(1000000000ull)

struct group_scan {
	int workers;		/* of them, vm workers in their "[run]" phase */
	uint64_t rss_bytes;	/* resident set of the running workers */
};

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = ns / 1000000000ull,
		.tv_nsec = ns % 1000000000ull,
	};

	nanosleep(&ts, NULL);
}

/* "50%" -> percent 50; "1G", "512m", "4096" -> bytes.  -EINVAL otherwise. */
static int parse_vm_bytes(const char *s, double *percent, uint64_t *bytes)
{
	char *end;
	double v;

	*percent = 0;
	*bytes = 0;
	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v <= 0)
		return -EINVAL;
	if (*end == '%') {
		if (end[1] || v > 100)
			return -EINVAL;
		*percent = v;
		return 0;
	}
	switch (tolower((unsigned char)*end)) {
	case '\0':
	case 'b':
		break;
	case 'k':
		v *= 1024;
		break;
	case 'm':
		v *= 1024 * 1024;
		break;
	case 'g':
		v *= 1024.0 * 1024 * 1024;
		break;
	default:
		return -EINVAL;
	}
	if (*end && end[1])
		return -EINVAL;
	/* stress-ng refuses less than a page per worker */
	if (v < 4096)
		return -EINVAL;
	*bytes = (uint64_t)v;
	return 0;
}

int pressure_validate(const struct pressure_opts *o)
{
	double percent;
	uint64_t bytes;

	if (o->vm < 1)
		return usage_error("--vm %lld: need at least one stress-ng vm worker",
				   o->vm);
	if (parse_vm_bytes(o->vm_bytes, &percent, &bytes))
		return usage_error("--vm-bytes '%s': expected a percentage of memory (1%%..100%%) or a size of at least 4K (e.g. 50%%, 2G)",
				   o->vm_bytes ? o->vm_bytes : "");
	if (o->vm_method && (!*o->vm_method || strchr(o->vm_method, ' ')))
		return usage_error("--vm-method '%s': expected one stress-ng vm method name",
				   o->vm_method);
	return 0;
}

bool pressure_available(void)
{
	const char *path = getenv("PATH");
	const char *p, *colon;
	char buf[4096];
	int len;

	if (!path)
		path = "/usr/bin:/bin";
	for (p = path;; p = colon + 1) {
		colon = strchrnul(p, ':');
		len = colon - p;
		/* an empty PATH entry means the current directory */
		if (len)
			snprintf(buf, sizeof(buf), "%.*s/stress-ng", len, p);
		else
			snprintf(buf, sizeof(buf), "./stress-ng");
		if (access(buf, X_OK) == 0)
			return true;
		if (!*colon)
			return false;
	}
}

static uint64_t meminfo_kb(const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	unsigned long long kb = 0;
	FILE *f;

	f = fopen("/proc/meminfo", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			sscanf(line + klen + 1, "%llu", &kb);
			break;
		}
	}
	fclose(f);
	return kb;
}

/*
 * Read the state and process group of /proc/<pid>/stat.  The command name
 * may hold spaces and parentheses, so parse from the last ')'.
 */
static int proc_stat(pid_t pid, char *state, pid_t *pgrp)
{
	char path[64], buf[512], *p;
	int ppid, pg;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %d %d", state, &ppid, &pg) != 3)
		return -EIO;
	*pgrp = pg;
	return 0;
}

/* A stress-ng vm worker calls itself "stress-ng-vm [run]" while it works. */
static bool is_running_worker(pid_t pid)
{
	char path[64], buf[128];
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, "[run]") != NULL;
}

static uint64_t proc_rss_bytes(pid_t pid)
{
	unsigned long long size = 0, resident = 0;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Walk /proc for the live members of process group @pgrp. */
static void scan_group(pid_t pgrp, struct group_scan *s)
{
	struct dirent *de;
	pid_t pid, pg;
	char state;
	DIR *d;

	memset(s, 0, sizeof(*s));
	d = opendir("/proc");
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = atoi(de->d_name);
		if (pid == pgrp || proc_stat(pid, &state, &pg) || pg != pgrp)
			continue;
		if (state == 'Z' || state == 'X')
			continue;
		if (is_running_worker(pid)) {
			s->workers++;
			s->rss_bytes += proc_rss_bytes(pid);
		}
	}
	closedir(d);
}

/* stress-ng itself is gone or a zombie. */
static bool leader_died(pid_t pid)
{
	pid_t pg;
	char state;

	if (proc_stat(pid, &state, &pg))
		return true;
	return state == 'Z' || state == 'X';
}

/*
 * Kill stress-ng's whole group at once (stress-ng, its "[wait]" parents, the
 * workers) and reap it.  Returns stress-ng's exit status as reap() does.
 */
static int kill_group(pid_t pid)
{
	int status;

	kill(-pid, SIGKILL);
	status = reap(pid);
	/*
	 * The engine is a child subreaper, so the workers are reparented to us
	 * as stress-ng dies; reap every member of its group.  The next
	 * measurement must not start while gigabytes are still being freed.
	 */
	while (waitpid(-pid, NULL, 0) > 0 || errno == EINTR)
		;
	return status;
}

static const char *temp_dir(void)
{
	const char *dir = getenv("TMPDIR");

	return dir && *dir ? dir : "/tmp";
}

int pressure_start(struct pressure *p, const struct pressure_opts *o,
		   double budget_s)
{
	char vm[32], timeout[32];
	char *argv[16];
	struct group_scan s;
	uint64_t t0, now, settled_at, last_rss = 0;
	double percent;
	uint64_t bytes;
	int argc = 0, saved_stdout, ret, status;
	pid_t pid;

	memset(p, 0, sizeof(*p));
	if (!pressure_available()) {
		fail_reason("--memory-pressure needs stress-ng, which is not in PATH; install it (apt-get install stress-ng) or drop --memory-pressure");
		return -ENOENT;
	}
	if (parse_vm_bytes(o->vm_bytes, &percent, &bytes))
		return -EINVAL;
	/* stress-ng splits --vm-bytes between the workers; N% is of what is available */
	p->target_bytes = percent > 0 ?
		(uint64_t)(meminfo_kb("MemAvailable") * 1024.0 * percent / 100) : bytes;

	snprintf(vm, sizeof(vm), "%lld", o->vm);
	/* a safety net: stress-ng ends by itself if the engine is SIGKILLed */
	snprintf(timeout, sizeof(timeout), "%llds", (long long)budget_s + 1);
	argv[argc++] = "stress-ng";
	argv[argc++] = "--vm";
	argv[argc++] = vm;
	argv[argc++] = "--vm-bytes";
	argv[argc++] = (char *)o->vm_bytes;
	if (!o->vm_no_keep)
		argv[argc++] = "--vm-keep";
	if (o->vm_method) {
		argv[argc++] = "--vm-method";
		argv[argc++] = (char *)o->vm_method;
	}
	argv[argc++] = "--timeout";
	argv[argc++] = timeout;
	/* stress-ng refuses to start in a directory it cannot write, such as a
	 * lab guest's read-only checkout; the vm stressor writes no file there */
	argv[argc++] = "--temp-path";
	argv[argc++] = (char *)temp_dir();
	argv[argc] = NULL;

	/*
	 * stress-ng logs to stdout, which carries our JSON lines.  spawn_exec()
	 * has no way to redirect, so point fd 1 at stderr across the fork.
	 */
	fflush(stdout);
	saved_stdout = dup(STDOUT_FILENO);
	if (saved_stdout < 0)
		return -errno;
	dup2(STDERR_FILENO, STDOUT_FILENO);
	pid = spawn_exec(argv);
	dup2(saved_stdout, STDOUT_FILENO);
	close(saved_stdout);
	if (pid < 0) {
		fail_reason("cannot start stress-ng: %s", strerror(-pid));
		return pid;
	}
	p->pid = pid;

	t0 = now_ns();
	settled_at = t0;
	for (;;) {
		if (leader_died(pid)) {
			status = kill_group(pid);
			p->pid = 0;
			fail_reason("stress-ng exited (status %d) before its vm workers ran", status);
			return -ECHILD;
		}
		scan_group(pid, &s);
		now = now_ns();
		if (last_rss == 0 || s.rss_bytes > last_rss + last_rss / 100 ||
		    s.rss_bytes + last_rss / 100 < last_rss) {
			last_rss = s.rss_bytes;
			settled_at = now;
		}
		/*
		 * Ready: every worker is in its run loop and either holds 85% of
		 * the target (page tables and rounding eat the rest), or its
		 * resident set stopped growing, as when stress-ng scaled the size
		 * down to fit.
		 */
		if (s.workers >= o->vm && s.rss_bytes > 0 &&
		    (s.rss_bytes >= p->target_bytes / 100 * 85 ||
		     now - settled_at >= PRESSURE_SETTLE_NS))
			break;
		if (now - t0 > PRESSURE_READY_NS) {
			fail_reason("stress-ng: %d of %lld vm workers running, %llu MiB resident after %llu s; giving up",
				    s.workers, o->vm,
				    (unsigned long long)(s.rss_bytes >> 20),
				    (unsigned long long)(PRESSURE_READY_NS / 1000000000ull));
			ret = -ETIMEDOUT;
			goto out_stop;
		}
		sleep_ns(PRESSURE_POLL_NS);
	}
	p->workers = s.workers;
	p->rss_bytes = s.rss_bytes;
	p->ready_s = (now_ns() - t0) / 1e9;
	return 0;

out_stop:
	pressure_stop(p);
	return ret;
}

void pressure_stop(struct pressure *p)
{
	if (p->pid <= 0)
		return;
	kill_group(p->pid);
	p->pid = 0;
}
