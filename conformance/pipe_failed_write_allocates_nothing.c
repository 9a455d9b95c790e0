// SPDX-License-Identifier: MIT
/*
 * pipe_failed_write_allocates_nothing: a pipe write that fails with EAGAIN
 * (O_NONBLOCK, pipe full) or EPIPE (no reader) allocates no page and leaves
 * no memory charged to its cgroup.
 *
 * 4096 such writes of 64 KiB each, for both errors.  Two witnesses:
 *  - /proc/vmstat pgalloc_* (the page allocator's own event counts, exact
 *    but system-wide): fewer than one page per two writes may appear, for
 *    the rest of the system; a kernel that allocates for the write and
 *    frees again shows at least one per write.  Needs a kernel with
 *    CONFIG_VM_EVENT_COUNTERS; without it this witness is skipped.
 *  - memory.stat "kernel" of our cgroup v2 (the memcg's kernel memory):
 *    it must not grow by more than 1/16 page per write.  memory.stat is
 *    flushed lazily and shows only what stays charged, so it catches a
 *    charge that leaks, not one that is made and dropped again; that is
 *    what pgalloc is for.  Skipped outside a cgroup v2 memory controller.
 * The test skips when neither witness is there.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

#define WRITES		4096
#define WRITE_SIZE	(64 << 10)

static void check(const char *what, int fd, int err)
{
	static char buf[WRITE_SIZE];
	long long a0, k0, a1, k1;
	long page = sysconf(_SC_PAGESIZE);
	int i, wrong = 0;

	memset(buf, 'x', sizeof(buf));		/* no page faults while counting */
	a0 = ct_pgalloc();
	k0 = ct_memcg_stat("kernel");
	for (i = 0; i < WRITES; i++)
		if (write(fd, buf, sizeof(buf)) != -1 || errno != err)
			wrong++;
	a1 = ct_pgalloc();
	k1 = ct_memcg_stat("kernel");

	ct_expect(!wrong, "%s: %d of %d writes did not fail with %s", what, wrong, WRITES,
		  ct_errname(err));
	if (a0 >= 0) {
		ct_log("%s: %lld pages allocated system-wide during %d writes", what, a1 - a0,
		       WRITES);
		ct_expect(a1 - a0 < WRITES / 2, "%s: %lld page allocations for %d failed writes",
			  what, a1 - a0, WRITES);
	}
	if (k0 >= 0) {
		ct_log("%s: memory.stat kernel %+lld bytes", what, k1 - k0);
		ct_expect(k1 - k0 <= (long long)WRITES * page / 16,
			  "%s: memory.stat kernel grew by %lld bytes over %d failed writes",
			  what, k1 - k0, WRITES);
	}
}

int main(void)
{
	static char fill[WRITE_SIZE];
	int fds[2];

	if (ct_pgalloc() < 0 && ct_memcg_stat("kernel") < 0)
		ct_skip("no pgalloc counters in /proc/vmstat and no cgroup v2 memory.stat");
	if (ct_pgalloc() < 0)
		ct_log("no pgalloc counters (CONFIG_VM_EVENT_COUNTERS off): memory.stat only");
	if (ct_memcg_stat("kernel") < 0)
		ct_log("not in a cgroup v2 memory controller: pgalloc only");
	ct_watchdog(120, "pipe_failed_write_allocates_nothing: a write blocked");

	/* EAGAIN: a full pipe, written without blocking */
	if (pipe2(fds, O_NONBLOCK))
		ct_fatal("pipe2: %m");
	while (write(fds[1], fill, sizeof(fill)) > 0)
		;
	if (errno != EAGAIN)
		ct_fatal("filling the pipe: %m");
	check("EAGAIN (O_NONBLOCK, full pipe)", fds[1], EAGAIN);
	close(fds[0]);

	/* EPIPE: the same pipe without a reader, SIGPIPE ignored */
	signal(SIGPIPE, SIG_IGN);
	check("EPIPE (no reader, full pipe)", fds[1], EPIPE);
	close(fds[1]);
	if (pipe(fds))
		ct_fatal("pipe: %m");
	close(fds[0]);
	check("EPIPE (no reader, empty pipe)", fds[1], EPIPE);
	close(fds[1]);
	return ct_result();
}
