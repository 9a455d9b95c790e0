// SPDX-License-Identifier: MIT
/*
 * place.c: where each side of a workload ran.
 *
 * A ping-pong between two processes costs a few microseconds when both share
 * a CPU and tens of microseconds when every transfer wakes the other CPU; on a
 * VM an unpinned run lands in either case by chance.  So each side records
 * the CPU it measured on at its start and at its end, and how often the
 * scheduler moved it in between (se.nr_migrations from /proc/thread-self/sched,
 * which needs CONFIG_SCHED_DEBUG), and the sample says so in "sides".
 *
 * Both reads happen outside the timed loop.  The slots live in memory shared
 * with the children that fill them.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ipcbench.h"

/* se.nr_migrations of the calling thread, or -1 when the kernel does not say. */
static long long nr_migrations(void)
{
	static const char key[] = "se.nr_migrations";
	char buf[4096], *p;
	ssize_t n;
	int fd;

	fd = open("/proc/thread-self/sched", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, key);
	if (!p)
		return -1;
	p = strchr(p + sizeof(key) - 1, ':');
	return p ? strtoll(p + 1, NULL, 10) : -1;
}

struct place *places_alloc(int n)
{
	struct place *p;
	int i;

	p = mmap(NULL, sizeof(*p) * n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	for (i = 0; i < n; i++)
		p[i] = (struct place) { .cpu_start = -1, .cpu_end = -1, .migrations = -1 };
	return p;
}

void places_free(struct place *p, int n)
{
	if (p)
		munmap(p, sizeof(*p) * n);
}

void place_start(struct place *p)
{
	if (!p)
		return;
	p->mig_start = nr_migrations();
	p->cpu_start = sched_getcpu();
}

void place_end(struct place *p)
{
	long long m;

	if (!p)
		return;
	p->cpu_end = sched_getcpu();
	m = nr_migrations();
	p->migrations = m >= 0 && p->mig_start >= 0 ? m - p->mig_start : -1;
}
