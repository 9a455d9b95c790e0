// SPDX-License-Identifier: MIT
/*
 * pipe_write_fault_return: a write() whose source faults part way returns
 * what it put into the pipe, and the pipe holds exactly that.
 *
 * A pipe write copies its source a page-sized buffer at a time.  When the
 * copy into a buffer faults, that buffer's bytes are dropped and the write
 * returns the bytes of the buffers before it, or EFAULT if there are none.
 * Checked for 16-page writes into an empty pipe (more pages than the kernel
 * may allocate ahead of the copy) from a page-aligned source and from one
 * that starts 100 bytes into a page, with the first unreadable page at every
 * position; the bytes read back must be the source's, and nothing more.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ct.h"

#define PAGES		16
#define SEED		0x5eed

static long page;

/* Expected result of writing PAGES pages from @src when byte @hole is the first unreadable one. */
static long expected(size_t hole)
{
	size_t len = PAGES * page;
	size_t whole = hole >= len ? len : hole / page * page;

	return whole ? (long)whole : -EFAULT;
}

static void check(size_t shift, int hole_page)
{
	size_t map_len = (PAGES + 2) * page, len = PAGES * page;
	uint8_t *map, *src, *back;
	int fds[2];
	long want, got;
	ssize_t n, rest;

	map = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	back = malloc(len + page);
	if (map == MAP_FAILED || !back)
		ct_fatal("out of memory");
	src = map + shift;
	ct_pattern_fill(src, len, SEED, 0);
	if (hole_page >= 0 && mprotect(map + hole_page * page, page, PROT_NONE))
		ct_fatal("mprotect: %m");
	if (pipe(fds) || fcntl(fds[1], F_SETPIPE_SZ, 4 * len) < 0)
		ct_fatal("pipe: %m");

	/* The first byte of the write that cannot be read */
	want = expected(hole_page < 0 ? len : hole_page * page - shift);
	n = write(fds[1], src, len);
	got = n < 0 ? -errno : n;
	ct_expect(got == want, "shift %zu, hole at page %d: write returned %ld, want %ld",
		  shift, hole_page, got, want);

	close(fds[1]);
	rest = ct_read_to_eof(fds[0], back, len + page);
	ct_expect(rest == (want > 0 ? want : 0),
		  "shift %zu, hole at page %d: read back %zd bytes, want %ld",
		  shift, hole_page, rest, want > 0 ? want : 0);
	if (rest > 0)
		ct_expect(ct_pattern_check(back, rest, SEED, 0) < 0,
			  "shift %zu, hole at page %d: data differ from the source",
			  shift, hole_page);
	close(fds[0]);
	free(back);
	munmap(map, map_len);
}

int main(void)
{
	static const size_t shifts[] = { 0, 100 };
	unsigned int i;
	int hole;

	page = sysconf(_SC_PAGESIZE);
	ct_watchdog(60, "pipe_write_fault_return: a write or read hung");
	for (i = 0; i < sizeof(shifts) / sizeof(shifts[0]); i++) {
		check(shifts[i], -1);
		/* Holes from the first page of the source to past its end */
		for (hole = shifts[i] ? 1 : 0; hole <= PAGES + 1; hole++)
			check(shifts[i], hole);
	}
	return ct_result();
}
