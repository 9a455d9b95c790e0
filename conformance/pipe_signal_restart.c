// SPDX-License-Identifier: MIT
/*
 * pipe_signal_restart: with SA_RESTART, a signal handled during a blocked
 * pipe read or write does not surface as EINTR: the handler runs, the call
 * resumes and completes normally once data or room arrive (signal(7)).
 *
 * A child blocks, the parent waits until it is asleep, sends SIGUSR1, waits
 * for the handler to report (through a second pipe) and for the child to be
 * asleep again (restarted); twice; and only then supplies data (or room).  The child checks that its handler ran and the call succeeded.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

static int fds[2], note[2];
static volatile sig_atomic_t handled;

/* Counts, and tells the parent, so it never sends the next signal too early. */
static void on_usr1(int sig)
{
	(void)sig;
	handled++;
	(void)!write(note[1], "h", 1);
}

static void restart_handler(void)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
}

static int blocked_read(void *arg)
{
	char c = 0;
	ssize_t n;

	(void)arg;
	close(fds[1]);
	restart_handler();
	n = read(fds[0], &c, 1);
	if (n != 1)
		return 2;	/* EINTR (or anything else) leaked out */
	return c == 'd' && handled == 2 ? 0 : 3;
}

static int blocked_write(void *arg)
{
	static char buf[4096];
	ssize_t n;

	(void)arg;
	close(fds[0]);
	restart_handler();
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	while (write(fds[1], buf, sizeof(buf)) > 0)
		;
	fcntl(fds[1], F_SETFL, 0);
	n = write(fds[1], "x", 1);
	if (n != 1)
		return 2;
	return handled == 2 ? 0 : 3;
}

static void run(int (*fn)(void *), bool reader, const char *what)
{
	static char buf[1 << 16];
	int status, i;
	pid_t pid;
	char c;

	if (pipe(fds) || pipe(note))
		ct_fatal("pipe: %m");
	pid = ct_spawn(fn, NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	close(reader ? fds[0] : fds[1]);
	/* Two signals, each while the child sleeps in the (restarted) call. */
	for (i = 0; i < 2; i++) {
		if (ct_wait_sleeping(pid, ct_scale(5) * 1000))
			ct_fatal("%s: child not asleep before signal %d", what, i + 1);
		kill(pid, SIGUSR1);
		if (read(note[0], &c, 1) != 1)
			ct_fatal("%s: no word from the signal handler", what);
	}
	if (ct_wait_sleeping(pid, ct_scale(5) * 1000))
		ct_fatal("%s: child did not go back to sleep after the signals", what);
	if (reader) {
		if (write(fds[1], "d", 1) != 1)
			ct_fatal("write: %m");
	} else {
		while (read(fds[0], buf, sizeof(buf)) > 0)
			;	/* drain until the child's byte is through and it exits */
	}
	status = ct_wait(pid);
	ct_expect(status == 0, "%s: status %#x (2: the call failed, 3: wrong data or "
		  "handler count)", what, status);
	close(reader ? fds[1] : fds[0]);
	close(note[0]);
	close(note[1]);
}

int main(void)
{
	ct_watchdog(30, "pipe_signal_restart: a restarted call never completed");
	run(blocked_read, true, "blocked read");
	run(blocked_write, false, "blocked write");
	return ct_result();
}
