// SPDX-License-Identifier: MIT
/*
 * pipe_nonblock_partial_write: with O_NONBLOCK, a write of PIPE_BUF bytes or
 * less is all or nothing, and a larger write transfers what fits and
 * returns that count (POSIX write(2), pipe(7)).
 *
 * Linux accounts pipe room in pages (slots), so the test makes room in whole
 * pages: fill the pipe, read one page back, and then:
 *  - write PAGE-100 + 100 bytes, so the last page is part full and no slot
 *    is free: a PIPE_BUF write must fail with EAGAIN and write nothing;
 *  - read two pages back, then write 3 pages (> PIPE_BUF): the write must
 *    return a count strictly between 0 and 3 pages, not EAGAIN;
 *  - with the pipe full again, the same large write fails with EAGAIN.
 * Finally the whole stream is read back and checked byte by byte, so a
 * partial write that reports the wrong count is caught as well.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ct.h"

static int fds[2];
static uint64_t wr_off, rd_off, seed;
static char *buf;
static long page;

static int queued(void)
{
	int n = -1;

	if (ioctl(fds[0], FIONREAD, &n) < 0)
		ct_fatal("FIONREAD: %m");
	return n;
}

/* Write the next @len bytes of the stream; returns write()'s result. */
static ssize_t put(size_t len)
{
	ssize_t n;

	ct_pattern_fill(buf, len, seed, wr_off);
	n = write(fds[1], buf, len);
	if (n > 0)
		wr_off += n;
	return n;
}

/* Read exactly @len bytes of the stream and check them. */
static void take(size_t len)
{
	ssize_t n = read(fds[0], buf, len), bad;

	if (n != (ssize_t)len)
		ct_fatal("read %zu: got %zd (%m)", len, n);
	bad = ct_pattern_check(buf, len, seed, rd_off);
	ct_expect(bad < 0, "stream byte %llu is wrong", (unsigned long long)(rd_off + bad));
	rd_off += len;
}

int main(void)
{
	int before;
	ssize_t n;

	ct_watchdog(30, "pipe_nonblock_partial_write: a non-blocking write blocked");
	seed = ct_seed();
	page = sysconf(_SC_PAGESIZE);
	if (page != PIPE_BUF)
		ct_skip("page size %ld != PIPE_BUF %d: the page arithmetic below assumes it",
			page, PIPE_BUF);
	buf = malloc(4 * page);
	if (!buf)
		ct_fatal("malloc");
	if (pipe2(fds, O_NONBLOCK))
		ct_fatal("pipe2: %m");

	while ((n = put(page)) == page)
		;
	ct_expect(n == -1 && errno == EAGAIN, "filling: %zd/%s", n, ct_errname(errno));
	ct_expect(queued() == fcntl(fds[0], F_GETPIPE_SZ),
		  "full pipe holds %d bytes, F_GETPIPE_SZ %d", queued(),
		  fcntl(fds[0], F_GETPIPE_SZ));

	/* One free page, then fill it but for 100 bytes. */
	take(page);
	ct_expect(put(page - 100) == page - 100, "write into the free page: %m");

	/* Small write, not enough room: nothing at all, EAGAIN. */
	before = queued();
	ct_expect_errno(put(PIPE_BUF), EAGAIN, "PIPE_BUF write with 100 bytes of room");
	ct_expect(queued() == before, "EAGAIN write of PIPE_BUF bytes left %d bytes behind",
		  queued() - before);

	/* Large write with two free pages: partial, returns the count. */
	take(page);
	take(page);
	before = queued();
	n = put(3 * page);
	ct_expect(n > 0 && n < 3 * page,
		  "write of %ld bytes with 2 free pages: %zd/%s, want a partial count",
		  3 * page, n, n < 0 ? ct_errname(errno) : "-");
	if (n > 0) {
		ct_expect(queued() == before + n, "partial write returned %zd but queued %d",
			  n, queued() - before);
		ct_log("partial write: %zd of %ld bytes", n, 3 * page);
	}

	/* Full: even a large write gets EAGAIN now. */
	while (put(page) > 0)
		;
	ct_expect_errno(put(3 * page), EAGAIN, "large write into a full pipe");

	/* The stream must be exactly what the successful writes reported. */
	while (rd_off < wr_off) {
		size_t len = wr_off - rd_off < (uint64_t)page ? wr_off - rd_off : (size_t)page;

		take(len);
	}
	ct_expect_errno(read(fds[0], buf, 1), EAGAIN, "read after draining");
	return ct_result();
}
