// SPDX-License-Identifier: MIT
/*
 * util.c: small I/O and memory helpers shared by the workloads.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ipcbench.h"

void *alloc_buffer(size_t len, bool touch)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t rounded = (len + page - 1) / page * page;
	void *p;

	/* mmap rather than malloc: page aligned, and never pre-faulted by the allocator */
	p = mmap(NULL, rounded ? rounded : (size_t)page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (touch)
		memset(p, 'X', rounded);
	return p;
}

int set_pipe_size(int fd, long long size)
{
	int ret = fcntl(fd, F_SETPIPE_SZ, (int)size);

	if (ret < 0) {
		int err = errno;

		if (err == EPERM)
			fail_reason("F_SETPIPE_SZ %lld: above fs/pipe-max-size (%lld), which needs CAP_SYS_RESOURCE",
				    size, sysctl_read_ll("/proc/sys/fs/pipe-max-size"));
		else
			fail_reason("F_SETPIPE_SZ %lld: %s", size, strerror(err));
		return -err;
	}
	return ret;
}

