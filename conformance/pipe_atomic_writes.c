// SPDX-License-Identifier: MIT
/*
 * pipe_atomic_writes: a write of PIPE_BUF bytes or less is never interleaved
 * with another writer's data, with 12 writers at once (POSIX write(2)).
 *
 * Each writer sends self-describing records of random length, 16 bytes to
 * exactly PIPE_BUF: a header (magic, writer, sequence, length) and a payload
 * derived from the header.  One reader takes the stream apart with reads of
 * random sizes.  A record torn by another writer's bytes breaks its header
 * or payload; a lost or repeated record breaks the per-writer sequence.
 * This runs with the default pipe size, with a single-page pipe (writers
 * always waiting for room, where a torn write would be most likely), and with
 * a two-page pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

#define WRITERS		12
#define RECORDS		2000
#define MAGIC		0x1a7c0b1eu

struct rec_hdr {
	uint32_t magic;
	uint16_t writer;
	uint16_t len;		/* whole record, header included */
	uint32_t seq;
	uint32_t pad;
};

struct writer_args {
	int fd;
	int rfd;		/* the read end, closed in the writer */
	int id;
	uint64_t seed;
};

static uint64_t rec_seed(uint16_t writer, uint32_t seq)
{
	return ((uint64_t)writer << 32 | seq) ^ 0xa70111cull;
}

static int writer(void *arg)
{
	struct writer_args *w = arg;
	uint64_t rng = w->seed * 31 + w->id + 1;
	char buf[PIPE_BUF];
	struct rec_hdr *h = (struct rec_hdr *)buf;
	uint32_t seq;

	close(w->rfd);
	for (seq = 0; seq < RECORDS; seq++) {
		size_t len = sizeof(*h) + rng_next(&rng) % (PIPE_BUF - sizeof(*h) + 1);
		ssize_t n;

		/* A quarter of the records are exactly PIPE_BUF, the edge case. */
		if (rng_next(&rng) % 4 == 0)
			len = PIPE_BUF;
		h->magic = MAGIC;
		h->writer = w->id;
		h->len = len;
		h->seq = seq;
		h->pad = 0;
		ct_pattern_fill(buf + sizeof(*h), len - sizeof(*h),
				rec_seed(w->id, seq), 0);
		do {
			n = write(w->fd, buf, len);
		} while (n < 0 && errno == EINTR);
		/* A short write of <= PIPE_BUF bytes is itself a violation. */
		if (n != (ssize_t)len)
			return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* Returns the number of records checked, or -1 after a failure. */
static long check_pipe(long pipe_size, uint64_t seed)
{
	static char stream[1 << 20];
	uint32_t next_seq[WRITERS] = { 0 };
	struct writer_args args[WRITERS];
	uint64_t rng = seed ^ 0xbeef;
	size_t have = 0, pos;
	long records = 0;
	pid_t pids[WRITERS];
	int fds[2], i, status;
	bool ok = true;

	if (pipe(fds))
		ct_fatal("pipe: %m");
	if (pipe_size && fcntl(fds[0], F_SETPIPE_SZ, pipe_size) < 0)
		ct_fatal("F_SETPIPE_SZ %ld: %m", pipe_size);
	for (i = 0; i < WRITERS; i++) {
		args[i] = (struct writer_args){ .fd = fds[1], .rfd = fds[0], .id = i, .seed = seed };
		pids[i] = ct_spawn(writer, &args[i]);
		if (pids[i] < 0)
			ct_fatal("fork: %s", strerror(-pids[i]));
	}
	close(fds[1]);

	while (ok) {
		size_t want = 1 + rng_next(&rng) % (3 * PIPE_BUF);
		ssize_t n;

		if (want > sizeof(stream) - have)
			want = sizeof(stream) - have;
		n = read(fds[0], stream + have, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ct_fatal("read: %m");
		if (n == 0)
			break;
		have += n;

		/* Take apart every complete record at the front of the stream. */
		pos = 0;
		while (have - pos >= sizeof(struct rec_hdr)) {
			struct rec_hdr h;
			ssize_t bad;

			memcpy(&h, stream + pos, sizeof(h));
			if (h.magic != MAGIC || h.writer >= WRITERS ||
			    h.len < sizeof(h) || h.len > PIPE_BUF) {
				ct_expect(0, "pipe size %ld: torn record header at stream offset +%zu "
					  "(magic %#x writer %u len %u)", pipe_size, pos,
					  h.magic, h.writer, h.len);
				ok = false;
				break;
			}
			if (have - pos < h.len)
				break;
			bad = ct_pattern_check(stream + pos + sizeof(h), h.len - sizeof(h),
					       rec_seed(h.writer, h.seq), 0);
			if (!ct_expect(bad < 0, "pipe size %ld: writer %u record %u (len %u) "
				       "torn at byte %zd", pipe_size, h.writer, h.seq,
				       h.len, bad + (ssize_t)sizeof(h))) {
				ok = false;
				break;
			}
			if (!ct_expect(h.seq == next_seq[h.writer],
				       "writer %u: record %u after %u (lost or repeated)",
				       h.writer, h.seq, next_seq[h.writer])) {
				ok = false;
				break;
			}
			next_seq[h.writer]++;
			records++;
			pos += h.len;
		}
		memmove(stream, stream + pos, have - pos);
		have -= pos;
	}
	close(fds[0]);
	for (i = 0; i < WRITERS; i++) {
		status = ct_wait(pids[i]);
		if (ok)
			ok = ct_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
				       "writer %d: short or failed write (status %#x)",
				       i, status);
	}
	if (ok)
		ok = ct_expect(have == 0 && records == (long)WRITERS * RECORDS,
			       "pipe size %ld: %ld records and %zu stray bytes, want %d",
			       pipe_size, records, have, WRITERS * RECORDS);
	return ok ? records : -1;
}

int main(void)
{
	static const long sizes[] = { 0, 4096, 8192 };
	uint64_t seed = ct_seed();
	size_t i;

	ct_watchdog(90, "pipe_atomic_writes transfer stalled");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		long n = check_pipe(sizes[i], seed + i);

		if (n < 0)
			break;
		ct_log("pipe size %ld: %ld records from %d writers, none torn",
		       sizes[i], n, WRITERS);
	}
	return ct_result();
}
