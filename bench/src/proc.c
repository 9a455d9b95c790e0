// SPDX-License-Identifier: MIT
/*
 * proc.c: child processes, sysctls and cleanups that must never outlive the
 * engine.
 *
 * Every child is forked through spawn()/spawn_exec() and recorded here, so
 * that exit, SIGINT, SIGTERM and the watchdog can kill and reap all of them.
 * The engine is a child subreaper, so grandchildren (stress-ng's workers)
 * are reparented to it and reaped too.  sysctl_set() (shared.c) remembers
 * old values and engine_cleanup() has them written back.  The signal path
 * uses only async-signal-safe calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipcbench.h"
#include "core.h"

#define MAX_CHILDREN	4096
#define MAX_CLEANUPS	16

struct child {
	pid_t pid;
	bool group;	/* leads its own process group: kill the whole group */
};

static struct child children[MAX_CHILDREN];
static volatile int nr_children;

static void (*cleanups[MAX_CLEANUPS])(void);
static volatile int nr_cleanups;

static pid_t engine_pid;

void proc_init(void)
{
	engine_pid = getpid();
	/* orphaned grandchildren come to us, so nothing escapes the reaping */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
}

bool is_engine_process(void)
{
	return getpid() == engine_pid;
}

static void track(pid_t pid, bool group)
{
	int n = nr_children;

	if (n < MAX_CHILDREN) {
		children[n].pid = pid;
		children[n].group = group;
		nr_children = n + 1;
	}
}

static void untrack(pid_t pid)
{
	int i, n = nr_children;

	for (i = 0; i < n; i++) {
		if (children[i].pid == pid) {
			children[i] = children[n - 1];
			nr_children = n - 1;
			return;
		}
	}
}

/* In a new child: forget the parent's duties and die with it. */
static void child_setup(pid_t parent)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGALRM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	nr_children = 0;
	sysctl_forget();
	nr_cleanups = 0;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* the parent may have died before PDEATHSIG was armed */
	if (getppid() != parent)
		_exit(EXIT_FAIL);
}

/* fork(); the child comes back already set up.  Returns the pid, 0, or -errno. */
static pid_t fork_child(void)
{
	pid_t parent = getpid(), pid;

	/* or buffered output would be printed by both */
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		child_setup(parent);
	return pid;
}

pid_t spawn(int (*fn)(void *arg), void *arg)
{
	pid_t pid = fork_child();

	if (pid == 0)
		_exit(fn(arg) & 0xff);
	if (pid > 0)
		track(pid, false);
	return pid;
}

pid_t spawn_exec(char *const argv[])
{
	pid_t pid = fork_child();

	if (pid < 0)
		return pid;
	if (pid == 0) {
		setpgid(0, 0);
		execvp(argv[0], argv);
		_exit(127);
	}
	/* set it from both sides so a kill(-pid) right after spawn reaches it */
	setpgid(pid, pid);
	track(pid, true);
	return pid;
}

int reap(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	untrack(pid);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

void kill_children(void)
{
	struct timespec nap = { 0, 10 * 1000 * 1000 };
	int i, tries;

	for (i = 0; i < nr_children; i++) {
		if (children[i].group)
			kill(-children[i].pid, SIGKILL);
		kill(children[i].pid, SIGKILL);
	}
	for (i = 0; i < nr_children; i++)
		while (waitpid(children[i].pid, NULL, 0) < 0 && errno == EINTR)
			;
	nr_children = 0;
	/* reparented grandchildren: give them up to 2 s to die, then reap */
	for (tries = 0; tries < 200; tries++) {
		pid_t p = waitpid(-1, NULL, WNOHANG);

		if (p < 0)
			break;		/* ECHILD: nothing left */
		if (p == 0)
			nanosleep(&nap, NULL);
	}
}

int pin_cpu(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		return -errno;
	return 0;
}

long long sysctl_read_ll(const char *path)
{
	char buf[64];

	if (sysctl_read(path, buf, sizeof(buf)) < 0)
		return -1;
	return atoll(buf);
}

void on_cleanup(void (*fn)(void))
{
	if (nr_cleanups < MAX_CLEANUPS)
		cleanups[nr_cleanups++] = fn;
}

void engine_cleanup(void)
{
	int i;

	if (!is_engine_process())
		return;
	kill_children();
	for (i = nr_cleanups - 1; i >= 0; i--)
		cleanups[i]();
	nr_cleanups = 0;
	sysctl_restore();
}
