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

int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= n;
	}
	return 0;
}

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

uint64_t rng_next(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}
