// SPDX-License-Identifier: MIT
/*
 * pipe_user_pages_limits: fs/pipe-user-pages-soft and -hard (pipe(7)).
 *
 * For an unprivileged user (no CAP_SYS_RESOURCE/CAP_SYS_ADMIN):
 *  - while its pipes hold no more than pipe-user-pages-soft pages, a new
 *    pipe gets the default 16 pages;
 *  - past the soft limit, a new pipe gets 2 pages, and F_SETPIPE_SZ may not
 *    grow a pipe (EPERM), though shrinking stays allowed;
 *  - past pipe-user-pages-hard, pipe() fails with ENFILE;
 *  - closing pipes gives the pages back: a new pipe gets 16 pages again.
 *
 * Needs root to set the sysctls (saved and restored on every exit path by
 * ct_sysctl_set).  The pipes are made by a child that switched to an unused
 * uid, so only that uid's accounting is involved: root keeps CAP_SYS_ADMIN
 * and is exempt, and every other user is far under the temporary limits
 * unless it already holds more than 64 pages of pipes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct.h"

#define TEST_UID	61235
#define SOFT_PAGES	64	/* four default pipes of 16 pages */
#define HARD_PAGES	72	/* then four small pipes of 2 pages */
#define MAX_PIPES	32

static long page;

static int as_user(void *arg)
{
	int fds[MAX_PIPES][2], n, i, size;
	long want;

	(void)arg;
	if (setresgid(TEST_UID, TEST_UID, TEST_UID) || setresuid(TEST_UID, TEST_UID, TEST_UID)) {
		ct_log("setresuid(%d): %m", TEST_UID);
		return EXIT_FAIL;
	}
	/* pipes 1-4: 16 pages each (64 in total, not over the soft limit) */
	for (n = 0; n < MAX_PIPES; n++) {
		if (pipe(fds[n]))
			break;
		size = fcntl(fds[n][0], F_GETPIPE_SZ);
		want = (n < SOFT_PAGES / 16 ? 16 : 2) * page;
		ct_expect(size == want, "pipe %d: %d bytes, want %ld", n + 1, size, want);
	}
	/* 64 + 4 * 2 = 72: the ninth pipe brings 74 > 72, past the hard limit */
	ct_expect(n == SOFT_PAGES / 16 + (HARD_PAGES - SOFT_PAGES) / 2,
		  "pipe() failed after %d pipes (%s), want after %d", n,
		  ct_errname(errno), SOFT_PAGES / 16 + (HARD_PAGES - SOFT_PAGES) / 2);
	if (n < MAX_PIPES)
		ct_expect(errno == ENFILE, "past the hard limit pipe() gave %s, want ENFILE",
			  ct_errname(errno));
	if (n < 6)
		return ct_result();

	/* Over the soft limit: may shrink, may not grow. */
	ct_expect(fcntl(fds[0][1], F_SETPIPE_SZ, 4 * page) == 4 * page,
		  "shrinking over the soft limit: %m");
	ct_expect_errno(fcntl(fds[5][1], F_SETPIPE_SZ, 16 * page), EPERM,
			"growing a pipe over the soft limit");

	/* Pages come back when pipes go away. */
	for (i = 0; i < n; i++) {
		close(fds[i][0]);
		close(fds[i][1]);
	}
	if (!ct_expect(pipe(fds[0]) == 0, "pipe after closing all: %m"))
		return ct_result();
	size = fcntl(fds[0][0], F_GETPIPE_SZ);
	ct_expect(size == 16 * page, "after closing all pipes a new one has %d bytes, "
		  "want %ld (pages not given back?)", size, 16 * page);
	return ct_result();
}

int main(void)
{
	char val[32];
	int status, ret;
	pid_t pid;

	ct_require_root("sets fs/pipe-user-pages-soft and -hard");
	ct_watchdog(30, "pipe_user_pages_limits");
	page = sysconf(_SC_PAGESIZE);

	snprintf(val, sizeof(val), "%d", SOFT_PAGES);
	ret = ct_sysctl_set("fs/pipe-user-pages-soft", val);
	if (ret)
		ct_skip("cannot write fs/pipe-user-pages-soft: %s", strerror(-ret));
	snprintf(val, sizeof(val), "%d", HARD_PAGES);
	ret = ct_sysctl_set("fs/pipe-user-pages-hard", val);
	if (ret)
		ct_skip("cannot write fs/pipe-user-pages-hard: %s", strerror(-ret));

	pid = ct_spawn(as_user, NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	status = ct_wait(pid);
	ct_sysctl_restore();
	ct_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "unprivileged child failed (status %#x)", status);
	ct_log("restored pipe-user-pages-soft %lld, -hard %lld",
	       ct_sysctl_read("fs/pipe-user-pages-soft"),
	       ct_sysctl_read("fs/pipe-user-pages-hard"));
	return ct_result();
}
