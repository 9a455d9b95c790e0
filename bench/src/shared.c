// SPDX-License-Identifier: MIT
/*
 * shared.c: see shared.h.  Built into the engine (bench/Makefile) and into
 * every conformance test (conformance/Makefile).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shared.h"

#define MAX_SYSCTLS	16

static struct {
	char path[128];
	char old[128];
} sysctls[MAX_SYSCTLS];
static volatile int nr_sysctls;

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

uint64_t rng_next(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

int sysctl_read(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return 0;
}

/* open/write/close only: it runs in signal handlers. */
static int write_file(const char *path, const char *value)
{
	size_t len = strlen(value);
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, value, len);
	close(fd);
	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EIO;
}

int sysctl_set(const char *path, const char *value)
{
	char old[128];
	int i, ret;

	ret = sysctl_read(path, old, sizeof(old));
	if (ret < 0)
		return ret;
	for (i = 0; i < nr_sysctls; i++)
		if (!strcmp(sysctls[i].path, path))
			break;
	/* keep the first old value: that is the one the machine had */
	if (i == nr_sysctls) {
		if (nr_sysctls == MAX_SYSCTLS || strlen(path) >= sizeof(sysctls[0].path))
			return -ENOSPC;
		snprintf(sysctls[i].path, sizeof(sysctls[i].path), "%s", path);
		snprintf(sysctls[i].old, sizeof(sysctls[i].old), "%s", old);
		/* publish only once the entry is complete: a signal may restore now */
		nr_sysctls = i + 1;
	}
	return write_file(path, value);
}

int sysctl_restore(void)
{
	int i, failed = 0;

	/* last set first, so that a value set twice ends as the machine had it */
	for (i = nr_sysctls - 1; i >= 0; i--)
		if (write_file(sysctls[i].path, sysctls[i].old) < 0)
			failed++;
	nr_sysctls = 0;
	return failed;
}

void sysctl_forget(void)
{
	nr_sysctls = 0;
}
