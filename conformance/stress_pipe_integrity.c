// SPDX-License-Identifier: MIT
/*
 * stress_pipe_integrity: N writers and M readers hammer one pipe for T
 * seconds; no record may be lost, duplicated or corrupted, and no one may
 * sleep forever (a lost wakeup fails the test instead of hanging it).
 *
 * A record is a header (magic, writer, length, sequence number, header
 * checksum) and a payload derived from the header, so every byte of it can
 * be checked.  Records of at most PIPE_BUF bytes are written with one
 * write() each, which POSIX makes atomic.
 *  - With one reader, record sizes are random (16 bytes to PIPE_BUF) and
 *    the reader reads random amounts and reassembles the stream: per writer
 *    the sequence numbers must come in order, with no gap.
 *  - With several readers, every record has the same size R (default 512)
 *    and every read() asks for exactly R bytes.  A record then never spans
 *    two pipe buffers (a write merges into a buffer only if it fits whole),
 *    so each read returns one whole record; a short read is reported.  With
 *    --packet the pipe is O_DIRECT, where one read returning one packet is
 *    the documented contract.  Readers mark (writer, seq) in a shared
 *    bitmap: a second mark is a duplicate; at the end, every record each
 *    writer sent must be marked.
 *  - Records larger than PIPE_BUF (--record-size, one writer only, since
 *    such writes may interleave) may be written partially; the writer then
 *    continues with the rest, as POSIX allows.
 *
 * --splice takes the splice(2) paths instead: a writer writes each record
 * into a private, empty pipe and splices it from there into the shared one
 * (a one-buffer move, so it stays whole); a reader splices from the shared
 * pipe into its own private pipe and reads it back from there.
 *
 * --tolerate-enomem is for runs under fault injection (fail_page_alloc):
 * a write or read failing with ENOMEM is retried and counted, a fork that
 * fails is retried; everything else is still a failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"
#include "stress.h"

#define MAGIC 0x5712e55u

struct rec_hdr {
	uint32_t magic;
	uint16_t writer;
	uint16_t pad;
	uint32_t len;		/* whole record */
	uint32_t seq;
	uint32_t check;		/* hash of the fields above */
};

#ifndef STRESS_DEFAULT_SPLICE
#define STRESS_DEFAULT_SPLICE false
#endif

static struct stress_opts opts = {
	.duration = 3, .writers = 8, .readers = 4, .stall = 10,
	.splice = STRESS_DEFAULT_SPLICE,
};
/* With --splice: this process's private pipe. */
static int priv[2];
static struct stress_shared *sh;
static int fds[2];

static uint32_t hdr_check(const struct rec_hdr *h)
{
	return (uint32_t)ct_hash(h, offsetof(struct rec_hdr, check), 0x5eed);
}

static uint64_t payload_seed(const struct rec_hdr *h)
{
	return ((uint64_t)h->writer << 40) ^ ((uint64_t)h->seq << 8) ^ h->len ^ opts.seed;
}

static void build(char *buf, int writer, uint32_t seq, size_t len)
{
	struct rec_hdr *h = (struct rec_hdr *)buf;

	*h = (struct rec_hdr){ .magic = MAGIC, .writer = writer, .len = len, .seq = seq };
	h->check = hdr_check(h);
	ct_pattern_fill(buf + sizeof(*h), len - sizeof(*h), payload_seed(h), 0);
}

/* Validate one whole record; 0 or -1 after stress_fail(). */
static int verify(const char *buf, size_t have, const char *who)
{
	struct rec_hdr h;
	ssize_t bad;

	memcpy(&h, buf, sizeof(h));
	if (h.magic != MAGIC || h.check != hdr_check(&h) || h.writer >= opts.writers ||
	    h.len < sizeof(h) || h.len > have)
		return stress_fail(sh, "%s: corrupt record header (magic %#x writer %u len %u "
				   "seq %u)", who, h.magic, h.writer, h.len, h.seq);
	bad = ct_pattern_check(buf + sizeof(h), h.len - sizeof(h), payload_seed(&h), 0);
	if (bad >= 0)
		return stress_fail(sh, "%s: writer %u record %u: byte %zd corrupt", who,
				   h.writer, h.seq, bad + (ssize_t)sizeof(h));
	if (!stress_mark(sh, h.writer, h.seq))
		return stress_fail(sh, "%s: writer %u record %u received twice", who,
				   h.writer, h.seq);
	atomic_fetch_add(&sh->received, 1);
	atomic_fetch_add(&sh->bytes_received, h.len);
	atomic_fetch_add(&sh->progress, 1);
	return 0;
}

/*
 * After a call failed: true when it is to be made again, for EINTR, and for
 * ENOMEM with --tolerate-enomem (counted).  Under fault injection every
 * pipe write, splice and pipe() of ours may fail with ENOMEM, the private
 * pipes' as much as the shared one's.
 */
static bool again(void)
{
	if (errno == EINTR)
		return true;
	if (errno == ENOMEM && opts.tolerate_enomem) {
		atomic_fetch_add(&sh->enomem_retries, 1);
		return true;
	}
	return false;
}

/*
 * --splice: this process's private pipe, or -1 (errno set).  pipe() says
 * ENFILE when it cannot allocate the pipe's inode (create_pipe_files()),
 * so under --tolerate-enomem that is retried as ENOMEM is.
 */
static int priv_pipe(void)
{
	while (pipe(priv)) {
		if (errno == ENFILE && opts.tolerate_enomem)
			errno = ENOMEM;
		if (!again())
			return -1;
	}
	return 0;
}

/* --splice: the record into the private pipe, then one splice into the shared one. */
static int put_splice(const char *buf, size_t len, int id)
{
	ssize_t n;

	/* At most PIPE_BUF bytes into an empty pipe: all of it or, failing, nothing. */
	while ((n = write(priv[1], buf, len)) < 0 && again())
		;
	if (n != (ssize_t)len)
		return stress_fail(sh, "writer %d: write to the private pipe: %s", id,
				   n < 0 ? ct_errname(errno) : "short write");
	for (;;) {
		n = splice(priv[0], NULL, fds[1], NULL, len, 0);
		if (n < 0 && again())
			continue;
		if (n < 0)
			return stress_fail(sh, "writer %d: splice: %s", id, ct_errname(errno));
		if ((size_t)n != len)
			return stress_fail(sh, "writer %d: splice moved %zd of a %zu-byte record",
					   id, n, len);
		return 0;
	}
}

static int put(const char *buf, size_t len, int id)
{
	size_t done = 0;
	ssize_t n;

	if (opts.splice)
		return put_splice(buf, len, id);
	while (done < len) {
		n = write(fds[1], buf + done, len - done);
		if (n < 0 && again())
			continue;
		if (n < 0)
			return stress_fail(sh, "writer %d: write: %s", id, ct_errname(errno));
		if ((size_t)n < len - done) {
			if (len <= PIPE_BUF)
				return stress_fail(sh, "writer %d: short write %zd of %zu: a write "
						   "of <= PIPE_BUF bytes was split", id, n, len);
			atomic_fetch_add(&sh->short_writes, 1);
		}
		done += n;
	}
	return 0;
}

static int writer(void *arg)
{
	int id = (int)(long)arg, i;
	uint64_t rng = opts.seed * 977 + id + 1;
	size_t max = opts.record_size > PIPE_BUF ? opts.record_size : PIPE_BUF;
	char *buf = malloc(max);
	uint32_t seq;

	close(fds[0]);
	if (!buf || (opts.splice && priv_pipe()))
		return stress_fail(sh, "writer %d: setup: %s", id, ct_errname(errno)), 1;
	for (seq = 0; !atomic_load(&sh->stop); seq++) {
		size_t len = opts.record_size;

		if (seq >= STRESS_SEQ_BITS) {
			atomic_fetch_add(&sh->capped, 1);
			break;
		}
		if (!len)
			len = sizeof(struct rec_hdr) +
			      rng_next(&rng) % (PIPE_BUF - sizeof(struct rec_hdr) + 1);
		build(buf, id, seq, len);
		if (put(buf, len, id))
			return 1;
		/* Count only after the write: a record is "sent" once it is in the pipe. */
		atomic_fetch_add(&sh->sent[id], 1);
		atomic_fetch_add(&sh->bytes_sent, len);
		atomic_fetch_add(&sh->progress, 1);
		/* Now and then a pause, so the readers also find the pipe empty. */
		if (rng_next(&rng) % 512 == 0)
			for (i = 0; i < 1000; i++)
				__asm__ volatile("" ::: "memory");
	}
	free(buf);
	return 0;
}

/*
 * Take up to @len bytes from the shared pipe into @buf: read(), or with
 * --splice a splice into the private pipe and a read of all of it back.
 */
static ssize_t get(char *buf, size_t len, int id)
{
	ssize_t n;

	for (;;) {
		if (opts.splice) {
			n = splice(fds[0], NULL, priv[1], NULL, len, 0);
			if (n > 0 && read_full(priv[0], buf, n) < 0)
				return stress_fail(sh, "reader %d: the private pipe did not give "
						   "back %zd bytes", id, n);
		} else {
			n = read(fds[0], buf, len);
		}
		if (n >= 0)
			return n;
		if (again())
			continue;
		return stress_fail(sh, "reader %d: %s: %s", id, opts.splice ? "splice" : "read",
				   ct_errname(errno));
	}
}

/* One reader: random read sizes, the stream reassembled, strict order. */
static int stream_reader(void *arg)
{
	size_t cap = 4 * (opts.record_size > PIPE_BUF ? opts.record_size : PIPE_BUF);
	uint32_t *next = calloc(opts.writers, sizeof(*next));
	uint64_t rng = opts.seed ^ 0x4ead;
	char *buf = malloc(cap);
	size_t have = 0, pos;
	ssize_t n;
	int id = (int)(long)arg;

	close(fds[1]);
	if (!buf || !next || (opts.splice && priv_pipe()))
		return stress_fail(sh, "reader: setup: %s", ct_errname(errno)), 1;
	for (;;) {
		size_t want = 1 + rng_next(&rng) % (cap - have);

		n = get(buf + have, want, id);
		if (n < 0)
			return 1;
		if (n == 0)
			break;
		have += n;
		pos = 0;
		while (have - pos >= sizeof(struct rec_hdr)) {
			struct rec_hdr h;

			memcpy(&h, buf + pos, sizeof(h));
			if (h.magic == MAGIC && h.len >= sizeof(h) && h.len <= cap &&
			    have - pos < h.len)
				break;	/* incomplete; a bad header fails in verify() */
			if (verify(buf + pos, have - pos, "reader"))
				return 1;
			if (h.seq != next[h.writer])
				return stress_fail(sh, "writer %u: record %u arrived after %u "
						   "(lost or reordered)", h.writer, h.seq,
						   next[h.writer]), 1;
			next[h.writer]++;
			pos += h.len;
		}
		memmove(buf, buf + pos, have - pos);
		have -= pos;
	}
	if (have)
		return stress_fail(sh, "reader: %zu stray bytes at EOF", have), 1;
	return 0;
}

/* Several readers: one read per fixed-size record. */
static int record_reader(void *arg)
{
	int id = (int)(long)arg;
	char *buf = malloc(opts.record_size + 1);
	ssize_t n;

	close(fds[1]);
	if (!buf || (opts.splice && priv_pipe()))
		return stress_fail(sh, "reader %d: setup: %s", id, ct_errname(errno)), 1;
	for (;;) {
		/* Ask for one byte more: a read must still stop at one record. */
		n = get(buf, opts.record_size + (opts.packet ? 1 : 0), id);
		if (n < 0)
			return 1;
		if (n == 0)
			return 0;
		if (n != opts.record_size)
			return stress_fail(sh, "reader %d: read returned %zd bytes, records are "
					   "%ld", id, n, opts.record_size), 1;
		if (verify(buf, n, "reader"))
			return 1;
	}
}

int main(int argc, char **argv)
{
	pid_t pids[STRESS_MAX_PROCS];
	uint64_t sent;
	int ret;

	stress_parse(argc, argv, &opts, "stress_pipe_integrity",
		     "N writers x M readers on one pipe; checksummed, sequence-numbered records.");
	if (!opts.seed)
		opts.seed = ct_seed();
	if (opts.readers > 1 && !opts.record_size)
		opts.record_size = 512;
	if (opts.record_size > PIPE_BUF && (opts.writers > 1 || opts.readers > 1)) {
		fprintf(stderr, "stress_pipe_integrity: --record-size over PIPE_BUF (%d) needs "
			"--writers 1 --readers 1: such writes may interleave\n", PIPE_BUF);
		return 2;
	}
	if (opts.splice && (opts.packet || opts.record_size > PIPE_BUF)) {
		fprintf(stderr, "stress_pipe_integrity: --splice works with records of at most "
			"PIPE_BUF (%d) bytes and without --packet\n", PIPE_BUF);
		return 2;
	}
	if (opts.record_size && opts.record_size < (long)sizeof(struct rec_hdr)) {
		fprintf(stderr, "stress_pipe_integrity: --record-size must be at least %zu\n",
			sizeof(struct rec_hdr));
		return 2;
	}
	/* Global backstop; stress_supervise() normally reports a stall first. */
	ct_watchdog((unsigned int)(opts.duration + 4 * opts.stall + 30), "stress_pipe_integrity");
	sh = stress_shared_new(opts.writers);
	if (pipe2(fds, opts.packet ? O_DIRECT : 0))
		ct_fatal("pipe2: %m");
	if (opts.pipe_size && fcntl(fds[0], F_SETPIPE_SZ, opts.pipe_size) < 0)
		ct_fatal("F_SETPIPE_SZ %ld: %m", opts.pipe_size);
	ct_log("%d writers x %d readers, %.2f s, records %s, pipe %d bytes%s%s",
	       opts.writers, opts.readers, opts.duration,
	       opts.record_size ? "fixed" : "16..PIPE_BUF", fcntl(fds[0], F_GETPIPE_SZ),
	       opts.packet ? ", packet mode" : opts.splice ? ", through splice" : "",
	       opts.tolerate_enomem ? ", ENOMEM tolerated" : "");

	stress_start(&opts, writer, opts.readers == 1 ? stream_reader : record_reader, pids);
	close(fds[0]);
	close(fds[1]);

	ret = stress_supervise(&opts, sh, pids, opts.writers, opts.readers, NULL);
	sent = stress_check(sh, ret, opts.writers, "writer", "record");
	if (!ct_failed())
		ct_expect(atomic_load(&sh->received) == sent &&
			  atomic_load(&sh->bytes_received) == atomic_load(&sh->bytes_sent),
			  "received %llu records / %llu bytes, sent %llu / %llu",
			  (unsigned long long)atomic_load(&sh->received),
			  (unsigned long long)atomic_load(&sh->bytes_received),
			  (unsigned long long)sent, (unsigned long long)atomic_load(&sh->bytes_sent));
	ct_log("records sent %llu, received %llu, bytes %llu; ENOMEM retries %llu, "
	       "short writes continued %llu, writers capped %llu",
	       (unsigned long long)sent, (unsigned long long)atomic_load(&sh->received),
	       (unsigned long long)atomic_load(&sh->bytes_received),
	       (unsigned long long)atomic_load(&sh->enomem_retries),
	       (unsigned long long)atomic_load(&sh->short_writes),
	       (unsigned long long)atomic_load(&sh->capped));
	return ct_result();
}
