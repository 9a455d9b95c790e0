// SPDX-License-Identifier: MIT
/*
 * pipe_epipe_sigpipe: writing to a pipe that has no reader raises SIGPIPE,
 * and write() fails with EPIPE when SIGPIPE does not kill the writer.
 *
 *  - default disposition: the writer dies of SIGPIPE;
 *  - SIGPIPE ignored: write() returns -1/EPIPE, nothing written;
 *  - SIGPIPE blocked: -1/EPIPE, and SIGPIPE is left pending for the thread;
 *  - a writer asleep on a full pipe is woken when the last reader closes,
 *    and gets EPIPE (a writer left asleep is a lost wakeup).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct.h"

static int fds[2];

static int write_one_byte(void *arg)
{
	(void)arg;
	(void)!write(fds[1], "x", 1);
	return 0;	/* only reached if SIGPIPE did not kill us */
}

static int fill_then_block(void *arg)
{
	static char buf[1 << 16];
	ssize_t n;

	(void)arg;
	close(fds[0]);
	signal(SIGPIPE, SIG_IGN);
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	while (write(fds[1], buf, sizeof(buf)) > 0)
		;
	fcntl(fds[1], F_SETFL, 0);
	/* Full now: this blocks until the reader goes away. */
	n = write(fds[1], buf, 1);
	return n < 0 && errno == EPIPE ? 0 : 1;
}

static void check_default_kills(void)
{
	int status;
	pid_t pid;

	if (pipe(fds))
		ct_fatal("pipe: %m");
	/* No read end anywhere before the child exists, so its write cannot succeed. */
	close(fds[0]);
	pid = ct_spawn(write_one_byte, NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	close(fds[1]);
	status = ct_wait(pid);
	ct_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE,
		  "writer with default SIGPIPE: status %#x, want death by SIGPIPE", status);
}

static void check_ignored_gives_epipe(void)
{
	if (pipe(fds))
		ct_fatal("pipe: %m");
	signal(SIGPIPE, SIG_IGN);
	close(fds[0]);
	ct_expect_errno(write(fds[1], "x", 1), EPIPE, "write, SIGPIPE ignored");
	signal(SIGPIPE, SIG_DFL);
	close(fds[1]);
}

static void check_blocked_is_pending(void)
{
	sigset_t set, pending;

	if (pipe(fds))
		ct_fatal("pipe: %m");
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigprocmask(SIG_BLOCK, &set, NULL);
	close(fds[0]);
	ct_expect_errno(write(fds[1], "x", 1), EPIPE, "write, SIGPIPE blocked");
	sigpending(&pending);
	ct_expect(sigismember(&pending, SIGPIPE), "SIGPIPE not pending after EPIPE");
	/* Consume it, so unblocking does not kill us. */
	signal(SIGPIPE, SIG_IGN);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	signal(SIGPIPE, SIG_DFL);
	close(fds[1]);
}

static void check_blocked_writer_woken(void)
{
	uint64_t end;
	int status, ret = 0;
	pid_t pid;

	if (pipe(fds))
		ct_fatal("pipe: %m");
	pid = ct_spawn(fill_then_block, NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	close(fds[1]);
	if (ct_wait_sleeping(pid, ct_scale(5) * 1000))
		ct_fatal("writer never blocked on the full pipe");
	close(fds[0]);
	end = ct_now_ns() + (uint64_t)(ct_scale(5) * 1e9);
	while (ct_now_ns() < end && (ret = ct_try_wait(pid, &status)) == 0)
		ct_sleep_ms(5);
	if (!ct_expect(ret == 1, "writer still asleep 5 s after the last reader closed "
		       "(lost wakeup)"))
		return;
	ct_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "woken writer did not get EPIPE (status %#x)", status);
}

int main(void)
{
	sigset_t set;

	ct_watchdog(30, "pipe_epipe_sigpipe");
	/*
	 * The default disposition is what is tested first: a parent that ignores SIGPIPE (a
	 * Python program does) or blocks it passes that on through exec.
	 */
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	check_default_kills();
	check_ignored_gives_epipe();
	check_blocked_is_pending();
	check_blocked_writer_woken();
	return ct_result();
}
