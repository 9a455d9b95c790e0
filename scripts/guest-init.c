// SPDX-License-Identifier: MIT
/*
 * guest-init.c: PID 1 of a guest whose user space is the lab's own initramfs (arm64, where
 * the host's root and its Python cannot be shared): it mounts what the engine needs, runs
 * the job the host wrote, leaves the evidence in the shared directory and powers off. It is
 * built static with the guest's cross compiler by ipclab/lab/arm64/guest.py, which also writes
 * the job and reads what this leaves.
 *
 * The kernel command line names the shared directory (ipclab.shared=PATH, a 9p export with
 * the tag "ipclab" that is mounted at the same path as on the host). SHARED/job.txt holds
 * one step a line, its fields separated by tabs:
 *
 *     write PATH VALUE     write VALUE into PATH (a sysctl or sysfs knob); failures are noted
 *     mkdir PATH           create a directory (a cgroup); failures are noted
 *     copy PATH NAME       copy PATH (a debugfs or proc file, read to its end) to SHARED/NAME;
 *                          failures are noted and leave no SHARED/NAME
 *     env NAME=VALUE       set it for every later run
 *     timeout SECONDS      the watchdog of every later run (0, the default: none)
 *     make-it-fail 1|0     mark every later run's process for fault injection (its
 *                          /proc/self/make-it-fail, inherited by what it forks), so that
 *                          with the facility's task-filter only the runs are hit
 *     run NAME ARGV...     run ARGV in a process group of its own, with stdout to
 *                          SHARED/NAME.out and stderr to SHARED/NAME.err; its wait status
 *                          goes to SHARED/NAME.rc. Past the timeout the group gets SIGTERM,
 *                          SIGKILL 5 s later (as run.sh's `timeout -k 5`), and
 *                          SHARED/NAME.timeout holds the seconds. What the run leaves
 *                          behind in its group is killed when it ends.
 *     unset NAME           drop it from the environment of every later run
 *     marked NAME ARGV...  a run between two calls of the profile's marker system call
 *                          (swapoff(NULL), profile.py's MARKER_SYSCALL), whose entries close
 *                          the QEMU plugin's profile windows: the run is the window. Its
 *                          stdout and stderr go to /tmp and are copied to SHARED after the
 *                          second marker, so that no 9p traffic of ours lands in the window.
 *
 * It writes SHARED/started first, and last SHARED/dmesg.txt and SHARED/status.json
 * ({"rc": 0 or the number of runs that failed, "release", "nproc", "notes"}).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ARGS 128

static char shared[512];
static char notes[4096];
static unsigned step_timeout;	/* seconds; 0: none */
static int make_it_fail;	/* mark the runs for fault injection */

static void note(const char *what, const char *detail)
{
	size_t n = strlen(notes);

	snprintf(notes + n, sizeof(notes) - n, "%s\"%s: %s\"", n ? ", " : "", what, detail);
}

static void mount_or_note(const char *src, const char *target, const char *type,
			  const char *data)
{
	mkdir(target, 0755);
	if (mount(src, target, type, 0, data))
		note(target, strerror(errno));
}

static int write_file(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, text, len) == (ssize_t)len;
	return close(fd) || !ok ? -1 : 0;
}

static void in_shared(char *buf, size_t size, const char *name, const char *suffix)
{
	snprintf(buf, size, "%s/%s%s", shared, name, suffix);
}

/* A copy step: read to the end, as seq_file's files give no size. 0, or -1 with errno. */
/* Copy a file to `to`; on failure no part of it is left there. */
static int copy_to(const char *from, const char *to)
{
	char buf[65536];
	int in, out = -1, err = 0;
	ssize_t n = -1;

	in = open(from, O_RDONLY);
	if (in >= 0)
		out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out >= 0) {
		errno = 0;
		while ((n = read(in, buf, sizeof(buf))) != 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 || write(out, buf, n) != n)
				break;
		}
	}
	if (n)
		err = errno ? errno : EIO;	/* a short write sets none */
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) && !err)
		err = errno;
	if (out >= 0 && err)
		unlink(to);
	errno = err;
	return err ? -1 : 0;
}

/* Copy a file into the shared directory as `name`. */
static int copy_file(const char *path, const char *name)
{
	char dest[600];

	in_shared(dest, sizeof(dest), name, "");
	return copy_to(path, dest);
}

/* The shared directory from the kernel command line (ipclab.shared=PATH). */
static int find_shared(void)
{
	char cmdline[4096], *p;
	int fd = open("/proc/cmdline", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, cmdline, sizeof(cmdline) - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	cmdline[n] = 0;
	p = strstr(cmdline, "ipclab.shared=");
	if (!p)
		return -1;
	p += strlen("ipclab.shared=");
	snprintf(shared, sizeof(shared), "%.*s", (int)strcspn(p, " \n"), p);
	return 0;
}

/*
 * Wait for a run's process; past `limit` seconds (0: no limit) its group gets SIGTERM, and
 * SIGKILL 5 s later. A pidfd, not alarm(): a signal between the check and the wait would
 * be lost, and polling would add instructions to a deterministic boot. Returns 1 when the
 * limit was reached.
 */
static int wait_run(pid_t pid, int *status, unsigned limit)
{
	int fd = limit ? (int)syscall(SYS_pidfd_open, pid, 0) : -1, timed_out = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (limit && fd < 0)
		note("timeout", strerror(errno));
	if (fd >= 0 && poll(&p, 1, limit * 1000) == 0) {
		timed_out = 1;
		kill(-pid, SIGTERM);
		if (poll(&p, 1, 5000) == 0)
			kill(-pid, SIGKILL);
	}
	if (fd >= 0)
		close(fd);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	/* Its leftovers would run into the next step; as orphans they are ours to reap. */
	kill(-pid, SIGKILL);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return timed_out;
}

/* The profile's window marker: swapoff(NULL), which fails and which nothing else calls. */
static void mark_window(void)
{
	syscall(SYS_swapoff, NULL);
}

/* Copy a file from the guest's tmpfs to the shared directory, and drop the original. */
static void move_out(const char *from, const char *to)
{
	if (copy_to(from, to))
		note(to, strerror(errno));
	unlink(from);
}

/*
 * One run step: its wait status, or -1 when it could not be started. A marked run is a
 * profile window: the markers bracket it, and its output is kept out of 9p until after.
 */
static int run(char *name, char **argv, int marked)
{
	char out[600], err[600], rc[600], text[32], tmp_out[600], tmp_err[600];
	int status = -1;
	pid_t pid;

	in_shared(out, sizeof(out), name, ".out");
	in_shared(err, sizeof(err), name, ".err");
	in_shared(rc, sizeof(rc), name, ".rc");
	snprintf(tmp_out, sizeof(tmp_out), "/tmp/%s.out", name);
	snprintf(tmp_err, sizeof(tmp_err), "/tmp/%s.err", name);
	if (marked)
		mark_window();
	pid = fork();
	if (pid == 0) {
		int o = open(marked ? tmp_out : out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(marked ? tmp_err : err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		setpgid(0, 0);
		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(126);
		/* Before exec, so that the program's own start-up counts against the budget
		 * (the facility's space) as on x86; a run that cannot be set to fail does not
		 * start at all, rather than pass as one that ran with faults. */
		if (make_it_fail && write_file("/proc/self/make-it-fail", "1", 1)) {
			dprintf(2, "/proc/self/make-it-fail: %s\n", strerror(errno));
			_exit(126);
		}
		execv(argv[0], argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid > 0) {
		setpgid(pid, pid);	/* before the watchdog can need it, whoever runs first */
		if (wait_run(pid, &status, step_timeout)) {
			char path[600];

			snprintf(text, sizeof(text), "%u\n", step_timeout);
			in_shared(path, sizeof(path), name, ".timeout");
			write_file(path, text, strlen(text));
		}
	}
	if (marked) {
		mark_window();
		move_out(tmp_out, out);
		move_out(tmp_err, err);
	}
	snprintf(text, sizeof(text), "%d\n", status);
	write_file(rc, text, strlen(text));
	return status;
}

/* Copy a file the kernel generates (its size is not known before it is read). */
static int job(void)
{
	char path[600], line[16384];
	int failed = 0;
	FILE *f;

	in_shared(path, sizeof(path), "job.txt", "");
	f = fopen(path, "r");
	if (!f) {
		note(path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *fields[MAX_ARGS + 2], *save = NULL, *tok;
		int n = 0;

		line[strcspn(line, "\n")] = 0;
		for (tok = strtok_r(line, "\t", &save); tok && n < MAX_ARGS + 1;
		     tok = strtok_r(NULL, "\t", &save))
			fields[n++] = tok;
		fields[n] = NULL;
		if (n == 3 && !strcmp(fields[0], "write")) {
			if (write_file(fields[1], fields[2], strlen(fields[2])))
				note(fields[1], strerror(errno));
		} else if (n == 2 && !strcmp(fields[0], "mkdir")) {
			if (mkdir(fields[1], 0755) && errno != EEXIST)
				note(fields[1], strerror(errno));
		} else if (n == 3 && !strcmp(fields[0], "copy")) {
			if (copy_file(fields[1], fields[2]))
				note(fields[1], strerror(errno));
		} else if (n == 2 && !strcmp(fields[0], "env")) {
			putenv(strdup(fields[1]));
		} else if (n == 2 && !strcmp(fields[0], "timeout")) {
			step_timeout = strtoul(fields[1], NULL, 10);
			if (step_timeout > 86400 * 20)	/* poll()'s int milliseconds */
				step_timeout = 86400 * 20;
		} else if (n == 2 && !strcmp(fields[0], "unset")) {
			unsetenv(fields[1]);
		} else if (n == 2 && !strcmp(fields[0], "make-it-fail")) {
			make_it_fail = !strcmp(fields[1], "1");
		} else if (n >= 3 && (!strcmp(fields[0], "run") || !strcmp(fields[0], "marked"))) {
			int status = run(fields[1], fields + 2, fields[0][0] == 'm');

			failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		} else if (n) {
			note("job.txt", "a step it does not know");
		}
	}
	fclose(f);
	return failed;
}

static void write_status(int rc)
{
	char path[600], status[8192];
	struct utsname u;

	uname(&u);
	snprintf(status, sizeof(status),
		 "{\"rc\": %d, \"release\": \"%s\", \"nproc\": %ld, \"machine\": \"%s\","
		 " \"notes\": [%s]}\n", rc, u.release, sysconf(_SC_NPROCESSORS_ONLN), u.machine,
		 notes);
	in_shared(path, sizeof(path), "status.json", "");
	write_file(path, status, strlen(status));
}

static void leave_evidence(int rc)
{
	char path[600];
	int len = klogctl(10, NULL, 0);	/* SYSLOG_ACTION_SIZE_BUFFER */
	char *log = len > 0 ? malloc(len) : NULL;

	if (log && (len = klogctl(3, log, len)) > 0) {	/* SYSLOG_ACTION_READ_ALL */
		in_shared(path, sizeof(path), "dmesg.txt", "");
		write_file(path, log, len);
	}
	write_status(rc);
}

#ifdef GUEST_INIT_JOB_ONLY
/*
 * The host's unit tests build this: the job of the directory argv[1] and its status, and
 * nothing a PID 1 does (no mount, no kernel log, no power-off), so it is safe to run as
 * root on the host.
 */
int main(int argc, char **argv)
{
	snprintf(shared, sizeof(shared), "%s", argc > 1 ? argv[1] : ".");
	write_status(job());
	return 0;
}
#else
int main(void)
{
	char path[600];
	int rc;

	mount_or_note("proc", "/proc", "proc", NULL);
	mount_or_note("sysfs", "/sys", "sysfs", NULL);
	mount_or_note("devtmpfs", "/dev", "devtmpfs", NULL);
	mount_or_note("tmpfs", "/tmp", "tmpfs", NULL);
	mount_or_note("nodev", "/dev/mqueue", "mqueue", NULL);
	mount_or_note("nodev", "/sys/kernel/debug", "debugfs", NULL);
	mount_or_note("nodev", "/sys/fs/cgroup", "cgroup2", NULL);
	if (find_shared()) {
		dprintf(2, "guest-init: no ipclab.shared= on the kernel command line\n");
	} else {
		char *p;

		/* mkdir -p: the shared directory sits at the host's path */
		for (p = shared + 1; (p = strchr(p, '/')); p++) {
			*p = 0;
			mkdir(shared, 0755);
			*p = '/';
		}
		mount_or_note("ipclab", shared, "9p", "trans=virtio,version=9p2000.L,msize=262144");
		in_shared(path, sizeof(path), "started", "");
		write_file(path, "", 0);
		rc = job();
		leave_evidence(rc);
		umount(shared);
	}
	sync();
	reboot(RB_POWER_OFF);
	return 0;
}
#endif
