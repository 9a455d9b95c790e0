// SPDX-License-Identifier: MIT
/*
 * pipe_setpipe_sz_bounds: F_GETPIPE_SZ / F_SETPIPE_SZ keep their bounds
 * (fcntl(2)):
 *  - a request is rounded up to a power-of-two number of pages, at least one
 *    page, and F_SETPIPE_SZ returns the size granted;
 *  - a size that rounds past 2^31 is EINVAL;
 *  - pipe-max-size is allowed; more is EPERM without CAP_SYS_RESOURCE (a
 *    child that dropped to an unprivileged uid checks this when run as root),
 *    and allowed with it (checked when this process has it);
 *  - shrinking below the bytes queued is EBUSY, and resizing keeps the data;
 *  - a non-pipe descriptor is EBADF.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct.h"

static long page, max_size;

static int unprivileged_over_max(void *arg)
{
	int fds[2];

	(void)arg;
	if (ct_is_root() && setresuid(65534, 65534, 65534))
		return 2;
	if (pipe(fds))
		return 3;
	if (fcntl(fds[0], F_SETPIPE_SZ, max_size) < 0)
		return 4;	/* up to the limit is allowed to anyone */
	if (fcntl(fds[0], F_SETPIPE_SZ, max_size * 2) != -1 || errno != EPERM)
		return 5;
	return fcntl(fds[0], F_GETPIPE_SZ) == max_size ? 0 : 6;
}

static void check_rounding(void)
{
	static const struct { long ask, want_pages; } cases[] = {
		{ 0, 1 }, { 1, 1 }, { 4095, 1 }, { 4096, 1 }, { 4097, 2 },
		{ 5000, 2 }, { 12288, 4 }, { 65535, 16 }, { 65536, 16 }, { 65537, 32 },
	};
	size_t i;
	int fds[2];

	if (pipe(fds))
		ct_fatal("pipe: %m");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		long ask = cases[i].ask * page / 4096, want = cases[i].want_pages * page;
		int got = fcntl(fds[1], F_SETPIPE_SZ, ask);

		if (want > max_size)
			continue;
		ct_expect(got == want, "F_SETPIPE_SZ %ld returned %d, want %ld", ask, got, want);
		ct_expect(fcntl(fds[0], F_GETPIPE_SZ) == want,
			  "F_GETPIPE_SZ after asking %ld: %d, want %ld", ask,
			  fcntl(fds[0], F_GETPIPE_SZ), want);
	}
	ct_expect_errno(fcntl(fds[0], F_SETPIPE_SZ, (1ul << 31) + 1), EINVAL,
			"F_SETPIPE_SZ 2^31+1");
	close(fds[0]);
	close(fds[1]);
}

static void check_max(void)
{
	int fds[2], status;
	pid_t pid;

	pid = ct_spawn(unprivileged_over_max, NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	status = ct_wait(pid);
	ct_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "unprivileged: pipe-max-size %ld, twice that must be EPERM (step %d failed)",
		  max_size, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	/*
	 * Our own process: past pipe-max-size is allowed with CAP_SYS_RESOURCE
	 * and EPERM without it.  Root need not have it: containers often drop it.
	 */
	if (pipe(fds))
		ct_fatal("pipe: %m");
	if (ct_has_cap(CAP_SYS_RESOURCE))
		ct_expect(fcntl(fds[0], F_SETPIPE_SZ, max_size * 2) == max_size * 2,
			  "with CAP_SYS_RESOURCE: F_SETPIPE_SZ %ld: %m", max_size * 2);
	else
		ct_expect_errno(fcntl(fds[0], F_SETPIPE_SZ, max_size * 2), EPERM,
				"without CAP_SYS_RESOURCE: twice pipe-max-size");
	close(fds[0]);
	close(fds[1]);
}

static void check_busy_and_data_kept(void)
{
	uint64_t seed = 0x5e75;
	char *buf = malloc(8 * page);
	int fds[2], i, ret, sizes_after[] = { 16, 8, 32 };

	if (!buf || pipe(fds))
		ct_fatal("setup: %m");
	ct_pattern_fill(buf, 8 * page, seed, 0);
	/* Eight full pages queued. */
	for (i = 0; i < 8; i++)
		if (write(fds[1], buf + i * page, page) != page)
			ct_fatal("write: %m");
	ct_expect_errno(fcntl(fds[1], F_SETPIPE_SZ, 4 * page), EBUSY,
			"shrink below the queued data");
	for (i = 0; i < 3; i++) {
		long want = sizes_after[i] * page;

		if (want > max_size)
			continue;
		ct_expect(fcntl(fds[1], F_SETPIPE_SZ, want) == want,
			  "resize to %ld with 8 pages queued: %m", want);
	}
	memset(buf, 0, 8 * page);
	ret = read_full(fds[0], buf, 8 * page);
	ct_expect(ret == 0, "read back: %s", strerror(-ret));
	ct_expect(ct_pattern_check(buf, 8 * page, seed, 0) < 0, "data changed by resizing");
	close(fds[0]);
	close(fds[1]);
	free(buf);
}

static void check_not_a_pipe(void)
{
	int fd = ct_tmpfile();

	if (fd < 0)
		ct_fatal("tmpfile: %s", strerror(-fd));
	ct_expect_errno(fcntl(fd, F_GETPIPE_SZ), EBADF, "F_GETPIPE_SZ on a file");
	ct_expect_errno(fcntl(fd, F_SETPIPE_SZ, page), EBADF, "F_SETPIPE_SZ on a file");
	close(fd);
}

int main(void)
{
	ct_watchdog(30, "pipe_setpipe_sz_bounds");
	page = sysconf(_SC_PAGESIZE);
	max_size = ct_sysctl_read("fs/pipe-max-size");
	if (max_size < 0)
		ct_skip("cannot read fs/pipe-max-size: %s", strerror(-max_size));
	ct_log("page %ld, pipe-max-size %ld", page, max_size);
	check_rounding();
	check_max();
	check_busy_and_data_kept();
	check_not_a_pipe();
	return ct_result();
}
