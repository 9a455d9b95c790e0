// SPDX-License-Identifier: MIT
/*
 * pipe_signal_eintr: a signal whose handler has no SA_RESTART interrupts a
 * blocked pipe read or write with EINTR, and a blocked write that had
 * already moved some bytes returns that partial count instead (POSIX
 * read(2)/write(2)).
 *
 * A child blocks, the parent waits until it is asleep in the kernel and
 * sends SIGUSR1.  The child reports what the call returned.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ct.h"

#define BIG (256 << 10)

static int fds[2], report[2];
static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
	(void)sig;
	handled = 1;
}

static void no_restart_handler(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
}

static void fill(void)
{
	static char buf[4096];

	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	while (write(fds[1], buf, sizeof(buf)) > 0)
		;
	fcntl(fds[1], F_SETFL, 0);
}

/* Each child: 0 = EINTR as expected, 2 = returned something else. */
static int blocked_read(void *arg)
{
	char c;
	ssize_t n;

	(void)arg;
	no_restart_handler();
	n = read(fds[0], &c, 1);
	return n == -1 && errno == EINTR && handled ? 0 : 2;
}

static int blocked_write(void *arg)
{
	ssize_t n;

	(void)arg;
	no_restart_handler();
	fill();
	n = write(fds[1], "x", 1);
	return n == -1 && errno == EINTR && handled ? 0 : 2;
}

static int blocked_big_write(void *arg)
{
	static char buf[BIG];
	ssize_t n;

	(void)arg;
	no_restart_handler();
	n = write(fds[1], buf, sizeof(buf));
	if (write(report[1], &n, sizeof(n)) != sizeof(n))
		return 3;
	return n > 0 && n < BIG && handled ? 0 : 2;
}

static void run(int (*fn)(void *), const char *what)
{
	int status;
	pid_t pid;

	if (pipe(fds))
		ct_fatal("pipe: %m");
	pid = ct_spawn(fn, NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	if (ct_wait_sleeping(pid, ct_scale(5) * 1000))
		ct_fatal("%s: child never blocked", what);
	kill(pid, SIGUSR1);
	status = ct_wait(pid);
	ct_expect(status == 0, "%s: not interrupted as specified (status %#x)", what, status);
}

int main(void)
{
	ssize_t n = -1;
	int queued = -1;

	ct_watchdog(30, "pipe_signal_eintr: a blocked call was not interrupted");
	run(blocked_read, "read on an empty pipe");
	close(fds[0]);
	close(fds[1]);
	run(blocked_write, "write on a full pipe");
	close(fds[0]);
	close(fds[1]);

	if (pipe(report))
		ct_fatal("pipe: %m");
	run(blocked_big_write, "256 KiB write into a 64 KiB pipe");
	if (read(report[0], &n, sizeof(n)) != sizeof(n))
		ct_fatal("no report from the writer");
	ioctl(fds[0], FIONREAD, &queued);
	ct_expect(n > 0 && n == queued, "interrupted big write returned %zd, %d bytes queued",
		  n, queued);
	ct_log("interrupted 256 KiB write returned %zd", n);
	return ct_result();
}
