// SPDX-License-Identifier: MIT
/*
 * pipe_splice_integrity: splice(2) moves bytes between files and pipes, and
 * between two pipes, without losing, repeating or changing any.
 *  - file -> pipe -> file, with explicit offsets: the output file equals the
 *    input, the offsets advance by what splice returned, and the file
 *    positions stay where they were;
 *  - pipe -> pipe: a writer process writes a pattern with writes of random
 *    sizes, a splicer process moves it from pipe A to pipe B with splices of
 *    random lengths (some with SPLICE_F_MOVE or SPLICE_F_MORE), and the
 *    reader checks every byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

#define FILE_BYTES	(8u << 20)
#define PIPE_BYTES	(16u << 20)

static uint64_t seed;
static int a[2], b[2];

static void file_pipe_file(void)
{
	size_t chunk = 1 << 20;
	char *buf = malloc(chunk);
	int in = ct_tmpfile(), out = ct_tmpfile(), p[2];
	loff_t off_in = 0, off_out = 0;
	uint64_t rng = seed, done;

	if (!buf || in < 0 || out < 0 || pipe(p))
		ct_fatal("setup: %m");
	for (done = 0; done < FILE_BYTES; done += chunk) {
		ct_pattern_fill(buf, chunk, seed, done);
		if (write_full(in, buf, chunk) < 0)
			ct_fatal("write tmpfile: %m");
	}
	lseek(in, 123, SEEK_SET);
	lseek(out, 0, SEEK_SET);

	while ((uint64_t)off_in < FILE_BYTES) {
		size_t want = 1 + rng_next(&rng) % (1 << 17);
		ssize_t n, m;
		loff_t before = off_in;

		n = splice(in, &off_in, p[1], NULL, want, 0);
		if (n <= 0)
			ct_fatal("splice file->pipe at %lld: %zd (%m)", (long long)off_in, n);
		ct_expect(off_in == before + n, "input offset advanced by %lld, splice said %zd",
			  (long long)(off_in - before), n);
		while (n > 0) {
			m = splice(p[0], NULL, out, &off_out, n, 0);
			if (m <= 0)
				ct_fatal("splice pipe->file: %zd (%m)", m);
			n -= m;
		}
	}
	ct_expect(off_out == FILE_BYTES, "output offset %lld", (long long)off_out);
	ct_expect(lseek(in, 0, SEEK_CUR) == 123, "splice with an offset moved the input position");
	ct_expect(lseek(out, 0, SEEK_CUR) == 0, "splice with an offset moved the output position");
	for (done = 0; done < FILE_BYTES; done += chunk) {
		ssize_t bad;

		if (pread(out, buf, chunk, done) != (ssize_t)chunk)
			ct_fatal("pread: %m");
		bad = ct_pattern_check(buf, chunk, seed, done);
		if (!ct_expect(bad < 0, "file->pipe->file: byte %llu differs",
			       (unsigned long long)(done + bad)))
			break;
	}
	free(buf);
	close(in);
	close(out);
	close(p[0]);
	close(p[1]);
}

static int writer(void *arg)
{
	(void)arg;
	close(a[0]);
	close(b[0]);
	close(b[1]);
	return ct_pattern_write_stream(a[1], PIPE_BYTES, seed, seed ^ 1) ? 1 : 0;
}

static int splicer(void *arg)
{
	static const unsigned int flags[] = { 0, SPLICE_F_MOVE, SPLICE_F_MORE };
	uint64_t rng = seed ^ 2;

	(void)arg;
	close(a[1]);
	close(b[0]);
	for (;;) {
		size_t want = 1 + rng_next(&rng) % (1 << 18);
		ssize_t n = splice(a[0], NULL, b[1], NULL, want, flags[rng_next(&rng) % 3]);

		if (n == 0)
			return 0;	/* writer closed and A is empty */
		if (n < 0 && errno != EINTR)
			return 1;
	}
}

static void pipe_to_pipe(void)
{
	uint64_t off;
	int64_t bad;
	pid_t w, s;
	int status, ret;

	if (pipe(a) || pipe(b))
		ct_fatal("setup: %m");
	w = ct_spawn(writer, NULL);
	s = ct_spawn(splicer, NULL);
	if (w < 0 || s < 0)
		ct_fatal("fork failed");
	close(a[0]);
	close(a[1]);
	close(b[1]);
	ret = ct_pattern_read_stream(b[0], seed, seed ^ 3, &off, &bad);
	if (ret)
		ct_fatal("setup: %s", strerror(-ret));
	ct_expect(bad < 0, "pipe->pipe: byte %llu differs", (unsigned long long)bad);
	close(b[0]);
	status = ct_wait(w);
	ct_expect(status == 0, "writer status %#x", status);
	status = ct_wait(s);
	ct_expect(status == 0, "splicer status %#x", status);
	ct_expect(off == PIPE_BYTES, "pipe->pipe: %llu bytes arrived of %u",
		  (unsigned long long)off, PIPE_BYTES);
}

int main(void)
{
	ct_watchdog(60, "pipe_splice_integrity: transfer stalled");
	seed = ct_seed();
	file_pipe_file();
	pipe_to_pipe();
	return ct_result();
}
