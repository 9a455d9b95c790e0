// SPDX-License-Identifier: MIT
/*
 * fastpipe.c: push buffers through one pipe as fast as possible, after
 * "How fast are Linux pipes anyway?" (https://mazzo.li/posts/fast-pipes.html),
 * in GiB/s.
 *
 * A writer process fills the pipe with write(2) or vmsplice(2); a reader
 * process drains it with read(2) or splice(2) to /dev/null.  The reader
 * times from the end of its first transfer to the end of its last one and
 * the parent reports bytes / 2^30 / seconds.  --ladder runs the post's five
 * rungs in order: write/read, vmsplice/read, vmsplice/splice, + huge pages,
 * + busy loop.
 *
 * Buffers are laid out as the post's programs get them, because the figures
 * depend on it:
 * - vmsplice double buffering: two buffers of --buf-size each, the pipe
 *   sized to half of one, each vmsplice call offered a whole buffer.  When
 *   the call for buffer B returns, every page of B went into a pipe that
 *   holds at most half of B, so all of A has been consumed and A may be
 *   refilled (--verify checks it).
 * - Placement: the post malloc()s its buffers, and glibc serves a buffer of
 *   128 KiB or more from its own mmap, 16 bytes past a page boundary; with
 *   huge pages it uses aligned_alloc(2 MiB).  --buf-offset defaults to the
 *   same 16 and 0.  The offset is not a detail.  Page aligned, 128 KiB of
 *   buffer fills the 32-slot pipe exactly, writer and reader fall into
 *   lockstep with a sleep and a cross-CPU wakeup per pipeful on each side,
 *   and vmsplice->splice ran at half the post's figure on the project VM
 *   (10-14 GiB/s, ~100k switches/s); 16 bytes off, every 128 KiB spans 33
 *   pages, the two sides overlap and hardly sleep (21-27 GiB/s, ~5k/s).
 *   read(2) into a 16-byte offset buffer, on the other hand, copies at about
 *   60% of the aligned speed there.  --buf-offset 0 shows the aligned case.
 * - Each buffer lives in its own 2 MiB aligned mapping, so buffers never
 *   share a page-table page (or a huge page), per the post's closing notes.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ipcbench.h"
#include "strbuf.h"

#define FP_HUGE_SIZE		(2ul << 20)
#define FP_DEFAULT_BUF		(256ll << 10)
#define FP_DEFAULT_DURATION	2.0
#define FP_CLOCK_EVERY		(4ull << 20)	/* bytes between clock reads */
#define FP_THP_ENABLED		"/sys/kernel/mm/transparent_hugepage/enabled"

struct fp_opts {
	const char *write_mode;		/* NULL: not given (write) */
	const char *read_mode;		/* NULL: not given (read) */
	bool huge_pages;
	bool busy_loop;
	bool dont_touch;
	bool verify;
	bool ladder;
	long long buf_size;
	long long buf_offset;		/* -1: the post's placement (16, 0 with huge pages) */
	long long pipe_size;		/* 0: buf/2 with vmsplice, else kernel default */
	long long bytes;		/* 0: run for --duration */
};

static const struct fp_opts fp_defaults = {
	.buf_size = FP_DEFAULT_BUF,
	.buf_offset = -1,
};

static const char *const fp_write_modes[] = { "write", "vmsplice", NULL };
static const char *const fp_read_modes[] = { "read", "splice", NULL };

#define FO(field) offsetof(struct fp_opts, field)

static const struct opt fp_opt_table[] = {
	{ "write", OPT_CHOICE, FO(write_mode),
	  "writer: write(2) copies; vmsplice(2) gives the pages (double buffered) (default write)",
	  0, 0, fp_write_modes },
	{ "read", OPT_CHOICE, FO(read_mode),
	  "reader: read(2) copies out; splice(2) moves the pages to /dev/null (default read)",
	  0, 0, fp_read_modes },
	{ "huge-pages", OPT_FLAG, FO(huge_pages),
	  "back the buffers with 2 MiB THP (madvise); AnonHugePages is checked and reported" },
	{ "busy-loop", OPT_FLAG, FO(busy_loop),
	  "never sleep: O_NONBLOCK / SPLICE_F_NONBLOCK and spin on EAGAIN" },
	{ "dont-touch", OPT_FLAG, FO(dont_touch),
	  "leave the writer's buffers unwritten (the post's untouched-pages effect)" },
	{ "buf-size", OPT_SIZE, FO(buf_size),
	  "buffer the writer pushes whole per round (two of them, alternating, with vmsplice) "
	  "and the reader asks for per call (default 256K; even and at least 8K with vmsplice)",
	  4096, 1 << 30 },
	{ "buf-offset", OPT_INT, FO(buf_offset),
	  "bytes past a page boundary where each buffer starts (default 16 as the post's "
	  "malloc gave it, 0 with --huge-pages as its aligned_alloc did)",
	  0, 4095 },
	{ "pipe-size", OPT_SIZE, FO(pipe_size),
	  "pipe capacity (F_SETPIPE_SZ); default buf-size/2 with vmsplice, else the kernel's",
	  4096, 1 << 30 },
	{ "bytes", OPT_SIZE, FO(bytes),
	  "bytes per sample instead of --duration (default: 2 s); --count N means N buffers",
	  1, 9e18 },
	{ "verify", OPT_FLAG, FO(verify),
	  "check every byte read against a position pattern the writer regenerates per buffer; "
	  "needs --read read (splice sends the data to /dev/null); with vmsplice it checks the "
	  "double buffering; costs throughput",
	  0, 0 },
	{ "ladder", OPT_FLAG, FO(ladder),
	  "run the post's rungs in order: write-read, vmsplice-read, vmsplice-splice, "
	  "huge-pages, busy-loop (one result each)" },
	OPT_END
};

/* One run: a ladder rung or the modes given on the command line. */
struct fp_cfg {
	const char *rung;		/* NULL outside --ladder */
	bool vmsplice, splice, huge, busy, dont_touch, verify;
	size_t buf_size;
	long long buf_offset;		/* -1: the post's placement */
	long long pipe_size;		/* requested; 0 = kernel default */
	uint64_t bytes;			/* 0 = run for duration_ns */
	uint64_t duration_ns;
	int cpu_w, cpu_r;
};

/* Written by the children into a MAP_SHARED page, read by the parent. */
struct fp_shared {
	uint64_t bytes_total;		/* reader: everything received */
	uint64_t bytes_timed;		/* reader: after the first transfer */
	uint64_t elapsed_ns;		/* reader: first transfer done -> last done */
	uint64_t transfers;		/* reader: read/splice calls that moved data */
	uint64_t bytes_verified;	/* reader */
	long long huge_kb[2];		/* writer, reader; -1 = not measured */
	int huge_maps[2];		/* how many mappings those kB came from */
	/*
	 * reader: ns per MiB of each stretch of at least FP_CLOCK_EVERY bytes,
	 * so that a preempted stretch is one outlier and p50 stays usable
	 */
	struct hist ns_per_mib;
	struct place side[2];		/* writer, reader */
};

static const char *const fp_roles[] = { "writer", "reader" };

struct fp_ctx {
	const struct fp_cfg *cfg;
	struct fp_shared *sh;
	int pfd[2];
};

static const struct {
	const char *rung;
	bool vmsplice, splice, huge, busy;
} fp_rungs[] = {
	{ "write-read",		false,	false,	false,	false },
	{ "vmsplice-read",	true,	false,	false,	false },
	{ "vmsplice-splice",	true,	true,	false,	false },
	{ "huge-pages",		true,	true,	true,	false },
	{ "busy-loop",		true,	true,	true,	true },
};

/* ---- content pattern for --verify -------------------------------------- */

/*
 * Byte @off of the stream is byte (off % 8) of a 64-bit word that depends on
 * off / 8, so lost, repeated, reordered or overwritten data all show up.
 */
static inline uint64_t fp_word(uint64_t idx)
{
	return idx * 0x9e3779b97f4a7c15ull ^ 0x5a5a5a5a5a5a5a5aull;
}

static inline unsigned char fp_byte(uint64_t off)
{
	return fp_word(off >> 3) >> ((off & 7) * 8);
}

static void fp_fill(unsigned char *p, size_t len, uint64_t off)
{
	for (; len && (off & 7); len--)
		*p++ = fp_byte(off++);
	for (; len >= 8; len -= 8, p += 8, off += 8) {
		uint64_t w = htole64(fp_word(off >> 3));

		memcpy(p, &w, 8);
	}
	for (; len; len--)
		*p++ = fp_byte(off++);
}

/* Offset of the first wrong byte in [off, off + len), or UINT64_MAX. */
static uint64_t fp_check(const unsigned char *p, size_t len, uint64_t off)
{
	for (; len && (off & 7); len--, p++, off++)
		if (*p != fp_byte(off))
			return off;
	for (; len >= 8; len -= 8, p += 8, off += 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		if (w != htole64(fp_word(off >> 3)))
			break;
	}
	for (; len; len--, p++, off++)
		if (*p != fp_byte(off))
			return off;
	return UINT64_MAX;
}

/* ---- buffers and huge pages ----------------------------------------------- */

static size_t fp_round_up(size_t v, size_t to)
{
	return (v + to - 1) / to * to;
}

/*
 * A buffer @offset bytes into its own 2 MiB aligned, 2 MiB rounded mapping:
 * THP needs that,
 * and it keeps separately allocated buffers in separate page-table pages.
 * Without --huge-pages the range is marked MADV_NOHUGEPAGE, so that a
 * machine with THP "always" still runs the 4 KiB rungs with 4 KiB pages.
 */
static void *fp_alloc(size_t len, size_t offset, bool huge, bool touch)
{
	size_t span = fp_round_up(len + offset, FP_HUGE_SIZE), total = span + FP_HUGE_SIZE;
	char *raw, *p;

	raw = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	p = (char *)fp_round_up((uintptr_t)raw, FP_HUGE_SIZE);
	if (p > raw)
		munmap(raw, p - raw);
	if (raw + total > p + span)
		munmap(p + span, raw + total - (p + span));
	/*
	 * A failure here (no THP in the kernel) is not fatal: the smaps
	 * check afterwards reports what the kernel really gave.
	 */
	madvise(p, span, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	p += offset;
	if (touch)
		memset(p, 'X', len);
	return p;
}

/*
 * AnonHugePages (kB) of the mapping that holds @addr, from /proc/self/smaps;
 * its start goes to @start so callers can skip a mapping seen twice.
 */
static long long fp_anon_huge_kb(const void *addr, unsigned long *start)
{
	unsigned long a = (unsigned long)addr, lo, hi;
	char line[512];
	long long kb = -ENOENT;
	bool inside = false;
	FILE *f;

	f = fopen("/proc/self/smaps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			inside = a >= lo && a < hi;
			if (inside)
				*start = lo;
			continue;
		}
		if (inside && sscanf(line, "AnonHugePages: %lld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

/* Sum AnonHugePages over the distinct mappings holding bufs[0..n). */
static void fp_huge_check(char *const bufs[], int n, long long *kb, int *maps)
{
	unsigned long seen[2] = { 0, 0 }, start;
	int i;

	*kb = 0;
	*maps = 0;
	for (i = 0; i < n && i < 2; i++) {
		long long v = fp_anon_huge_kb(bufs[i], &start);

		if (v < 0)
			continue;
		if (*maps && seen[0] == start)
			continue;
		seen[(*maps)++] = start;
		*kb += v;
	}
}

static void fp_thp_mode(char *out, size_t len)
{
	char buf[128], *lb, *rb;

	if (sysctl_read(FP_THP_ENABLED, buf, sizeof(buf)) < 0) {
		snprintf(out, len, "unavailable");
		return;
	}
	lb = strchr(buf, '[');
	rb = lb ? strchr(lb, ']') : NULL;
	if (!lb || !rb) {
		snprintf(out, len, "%.*s", (int)len - 1, buf);
		return;
	}
	snprintf(out, len, "%.*s", (int)(rb - lb - 1), lb + 1);
}

/* ---- the two processes ------------------------------------------------------ */

static size_t fp_offset(const struct fp_cfg *cfg)
{
	if (cfg->buf_offset >= 0)
		return cfg->buf_offset;
	return cfg->huge ? 0 : 16;
}

static int fp_writer(void *arg)
{
	struct fp_ctx *x = arg;
	const struct fp_cfg *cfg = x->cfg;
	size_t chunk = cfg->buf_size;
	int nbufs = cfg->vmsplice ? 2 : 1, fd = x->pfd[1], ix = 0, i, ret;
	char *bufs[2] = { NULL, NULL };
	uint64_t off = 0;

	close(x->pfd[0]);
	/* the reader closing its end is how a run ends: expect EPIPE */
	signal(SIGPIPE, SIG_IGN);
	ret = pin_cpu(cfg->cpu_w);
	if (ret < 0) {
		fail_reason("writer: pin to cpu %d: %s", cfg->cpu_w, strerror(-ret));
		return EXIT_FAIL;
	}
	for (i = 0; i < nbufs; i++) {
		bufs[i] = fp_alloc(chunk, fp_offset(cfg), cfg->huge, !cfg->dont_touch);
		if (!bufs[i]) {
			fail_reason("writer: buffer of %zu bytes: %s", chunk, strerror(errno));
			return EXIT_FAIL;
		}
	}
	if (cfg->busy && !cfg->vmsplice && fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		fail_reason("writer: O_NONBLOCK: %s", strerror(errno));
		return EXIT_FAIL;
	}

	place_start(&x->sh->side[0]);
	for (;;) {
		char *p = bufs[ix];
		size_t left = chunk;

		if (cfg->verify)
			fp_fill((unsigned char *)p, chunk, off);
		while (left) {
			ssize_t n;

			if (cfg->vmsplice) {
				struct iovec iov = { .iov_base = p, .iov_len = left };

				n = vmsplice(fd, &iov, 1, cfg->busy ? SPLICE_F_NONBLOCK : 0);
			} else {
				n = write(fd, p, left);
			}
			if (n < 0) {
				if (errno == EAGAIN || errno == EINTR)
					continue;
				if (errno == EPIPE)
					goto out_done;
				if (cfg->vmsplice && (errno == ENOSYS || errno == EINVAL)) {
					skip_reason("vmsplice: %s", strerror(errno));
					return EXIT_SKIP;
				}
				fail_reason("writer: %s: %s", cfg->vmsplice ? "vmsplice" : "write",
					    strerror(errno));
				return EXIT_FAIL;
			}
			p += n;
			left -= n;
		}
		off += chunk;
		ix = (ix + 1) % nbufs;
	}
out_done:
	place_end(&x->sh->side[0]);
	/* checked at the end: with --dont-touch the pages only exist by now */
	if (cfg->huge)
		fp_huge_check(bufs, nbufs, &x->sh->huge_kb[0], &x->sh->huge_maps[0]);
	return EXIT_OK;
}

static int fp_reader(void *arg)
{
	struct fp_ctx *x = arg;
	const struct fp_cfg *cfg = x->cfg;
	struct fp_shared *sh = x->sh;
	uint64_t total = 0, first = 0, t0 = 0, t = 0, next_clock = 0, mark = 0, t_mark = 0;
	int fd = x->pfd[0], out = -1, ret;
	char *buf = NULL;

	close(x->pfd[1]);
	ret = pin_cpu(cfg->cpu_r);
	if (ret < 0) {
		fail_reason("reader: pin to cpu %d: %s", cfg->cpu_r, strerror(-ret));
		return EXIT_FAIL;
	}
	if (cfg->splice) {
		out = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (out < 0) {
			fail_reason("reader: /dev/null: %s", strerror(errno));
			return EXIT_FAIL;
		}
	} else {
		buf = fp_alloc(cfg->buf_size, fp_offset(cfg), cfg->huge, true);
		if (!buf) {
			fail_reason("reader: buffer: %s", strerror(errno));
			return EXIT_FAIL;
		}
	}
	if (cfg->busy && !cfg->splice && fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		fail_reason("reader: O_NONBLOCK: %s", strerror(errno));
		return EXIT_FAIL;
	}

	place_start(&sh->side[1]);
	for (;;) {
		size_t want = cfg->buf_size;
		ssize_t n;

		if (cfg->bytes && cfg->bytes - total < want)
			want = cfg->bytes - total;
		if (cfg->splice)
			n = splice(fd, NULL, out, NULL, want, cfg->busy ? SPLICE_F_NONBLOCK : 0);
		else
			n = read(fd, buf, want);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			if (cfg->splice && (errno == ENOSYS || errno == EINVAL)) {
				skip_reason("splice to /dev/null: %s", strerror(errno));
				return EXIT_SKIP;
			}
			fail_reason("reader: %s: %s", cfg->splice ? "splice" : "read",
				    strerror(errno));
			return EXIT_FAIL;
		}
		if (n == 0) {
			fail_reason("reader: the writer closed the pipe after %llu bytes",
				    (unsigned long long)total);
			return EXIT_FAIL;
		}
		if (cfg->verify) {
			uint64_t bad = fp_check((unsigned char *)buf, n, total);

			if (bad != UINT64_MAX) {
				fail_reason("verify: byte at stream offset %llu is 0x%02x, "
					    "expected 0x%02x",
					    (unsigned long long)bad,
					    (unsigned char)buf[bad - total], fp_byte(bad));
				return EXIT_FAIL;
			}
			sh->bytes_verified += n;
		}
		total += n;
		sh->transfers++;
		if (!t0) {
			/* the clock starts when the first transfer is done */
			t = t0 = t_mark = now_ns();
			mark = first = total;
			next_clock = total + FP_CLOCK_EVERY;
		} else if (total >= next_clock || (cfg->bytes && total >= cfg->bytes)) {
			t = now_ns();
			hist_add(&sh->ns_per_mib, (t - t_mark) * (1ull << 20) / (total - mark));
			t_mark = t;
			mark = total;
			next_clock = total + FP_CLOCK_EVERY;
			if (cfg->bytes ? total >= cfg->bytes : t - t0 >= cfg->duration_ns)
				break;
		}
		if (cfg->bytes && total >= cfg->bytes)
			break;
	}
	place_end(&sh->side[1]);
	sh->bytes_total = total;
	sh->bytes_timed = total - first;
	sh->elapsed_ns = t - t0;
	if (cfg->huge && buf)
		fp_huge_check(&buf, 1, &sh->huge_kb[1], &sh->huge_maps[1]);
	/* the writer gets EPIPE from here on */
	close(fd);
	return EXIT_OK;
}

/* ---- one run, as one result object ------------------------------------------ */

static void fp_report_huge(struct report *r, const struct fp_cfg *cfg, const struct fp_shared *sh)
{
	char thp[128];
	bool ok_w = sh->huge_kb[0] > 0, ok_r = cfg->splice || sh->huge_kb[1] > 0;

	fp_thp_mode(thp, sizeof(thp));
	report_param_bool(r, "huge_pages_verified", ok_w && ok_r);
	if (cfg->splice)
		report_note(r, "huge_pages", "writer AnonHugePages %lld kB in %d mapping(s): %s",
			    sh->huge_kb[0], sh->huge_maps[0],
			    ok_w ? "verified" : "not granted");
	else
		report_note(r, "huge_pages", "writer AnonHugePages %lld kB in %d mapping(s): %s; "
			    "reader %lld kB: %s", sh->huge_kb[0], sh->huge_maps[0],
			    ok_w ? "verified" : "not granted", sh->huge_kb[1],
			    ok_r ? "verified" : "not granted");
	if (!ok_w && cfg->dont_touch)
		report_note(r, "huge_pages_why", "--dont-touch: the writer never wrote its buffers, "
			    "and %s only reads them, so no anonymous huge page was allocated "
			    "(THP mode %s)", cfg->vmsplice ? "vmsplice" : "write", thp);
	else if (!ok_w || !ok_r)
		report_note(r, "huge_pages_why", "THP mode %s; madvise(MADV_HUGEPAGE) was applied "
			    "but the kernel gave 4 KiB pages (fragmentation or THP policy)", thp);
}

static int fp_run_one(const struct common_opts *c, const struct fp_cfg *cfg,
		      const char *pinning, struct report *r)
{
	struct fp_shared *sh;
	struct fp_ctx ctx;
	struct counters cnt;
	long long want_pipe = cfg->pipe_size;
	int granted = 0, st_r, st_w, ret = EXIT_FAIL;
	pid_t reader, writer;
	double gib_s;
	char cpus[32];

	(void)c;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		fail_reason("mmap: %s", strerror(errno));
		return EXIT_FAIL;
	}
	sh->huge_kb[0] = sh->huge_kb[1] = -1;
	hist_init(&sh->ns_per_mib);
	sh->side[0] = sh->side[1] = (struct place) { -1, -1, -1, -1 };
	ctx.cfg = cfg;
	ctx.sh = sh;
	if (pipe(ctx.pfd) < 0) {
		fail_reason("pipe: %s", strerror(errno));
		goto out_unmap;
	}
	if (!want_pipe && cfg->vmsplice)
		want_pipe = cfg->buf_size / 2;
	if (want_pipe) {
		int got = set_pipe_size(ctx.pfd[1], want_pipe);

		if (got < 0) {
			ret = got == -EPERM ? EXIT_USAGE : EXIT_FAIL;
			goto out_close;
		}
	}
	granted = fcntl(ctx.pfd[1], F_GETPIPE_SZ);

	counters_start(&cnt);
	reader = spawn(fp_reader, &ctx);
	if (reader < 0) {
		fail_reason("fork: %s", strerror(-reader));
		goto out_close;
	}
	writer = spawn(fp_writer, &ctx);
	if (writer < 0) {
		fail_reason("fork: %s", strerror(-writer));
		goto out_kill;
	}
	close(ctx.pfd[0]);
	close(ctx.pfd[1]);
	ctx.pfd[0] = ctx.pfd[1] = -1;
	st_r = reap(reader);
	st_w = reap(writer);
	counters_stop(&cnt);
	if (st_w == EXIT_SKIP || st_r == EXIT_SKIP) {
		ret = EXIT_SKIP;
		goto out_close;
	}
	if (st_r || st_w) {
		fail_reason("reader exited with status %d, writer with %d", st_r, st_w);
		goto out_close;
	}
	if (!sh->elapsed_ns || !sh->bytes_timed) {
		fail_reason("too little data to time (%llu bytes): raise --bytes or --duration",
			    (unsigned long long)sh->bytes_total);
		goto out_close;
	}

	gib_s = (double)sh->bytes_timed / (1ull << 30) / (sh->elapsed_ns / 1e9);
	if (cfg->rung)
		report_param_str(r, "rung", cfg->rung);
	report_param_str(r, "write", cfg->vmsplice ? "vmsplice" : "write");
	report_param_str(r, "read", cfg->splice ? "splice" : "read");
	report_param_bool(r, "huge_pages", cfg->huge);
	report_param_bool(r, "busy_loop", cfg->busy);
	report_param_bool(r, "dont_touch", cfg->dont_touch);
	report_param_bool(r, "verify", cfg->verify);
	report_param_int(r, "buf_size", cfg->buf_size);
	report_param_int(r, "buf_offset", fp_offset(cfg));
	report_param_int(r, "pipe_size", granted);
	report_param_int(r, "bytes", (long long)cfg->bytes);
	if (cfg->cpu_w >= 0 || cfg->cpu_r >= 0)
		snprintf(cpus, sizeof(cpus), "%d,%d", cfg->cpu_w, cfg->cpu_r);
	else
		snprintf(cpus, sizeof(cpus), "unpinned");
	report_param_str(r, "cpus", cpus);
	report_param_str(r, "pinning", pinning);
	if (cfg->huge)
		fp_report_huge(r, cfg, sh);

	report_metric(r, "throughput", gib_s, "GiB/s", HIGHER_IS_BETTER);
	report_metric(r, "bytes_timed", (double)sh->bytes_timed, "B", BETTER_NONE);
	report_metric(r, "elapsed", sh->elapsed_ns / 1e9, "s", BETTER_NONE);
	report_metric(r, "bytes_per_transfer", (double)sh->bytes_total / sh->transfers, "B",
		      BETTER_NONE);
	if (cfg->vmsplice && granted > (long long)cfg->buf_size)
		report_note(r, "double_buffering", "pipe size %d > buf-size %zu: the writer may "
			    "refill a buffer the pipe still references", granted, cfg->buf_size);
	if (sh->ns_per_mib.count) {
		report_latency(r, "ns_per_mib", &sh->ns_per_mib);
		report_note(r, "latency", "ns_per_mib: reader's ns per MiB over each stretch of "
			    "%llu MiB or more; GiB/s = 976562.5 / ns_per_mib",
			    FP_CLOCK_EVERY >> 20);
	}
	if (cfg->verify)
		report_note(r, "verify", "%llu bytes checked, all correct",
			    (unsigned long long)sh->bytes_verified);
	report_counters(r, &cnt);
	report_sides(r, fp_roles, 2, sh->side, 2);
	report_emit(r);
	ret = EXIT_OK;
	goto out_close;

out_kill:
	kill_children();
out_close:
	if (ctx.pfd[0] >= 0)
		close(ctx.pfd[0]);
	if (ctx.pfd[1] >= 0)
		close(ctx.pfd[1]);
out_unmap:
	munmap(sh, sizeof(*sh));
	return ret;
}

static int fp_validate(const struct common_opts *c, void *wopts)
{
	const struct fp_opts *o = wopts;
	bool vmsplice = o->write_mode && !strcmp(o->write_mode, "vmsplice");
	bool splice = o->read_mode && !strcmp(o->read_mode, "splice");

	if (o->ladder && (o->write_mode || o->read_mode || o->huge_pages || o->busy_loop))
		return usage_error("--ladder sets --write/--read/--huge-pages/--busy-loop "
				   "itself; drop them");
	if (o->ladder && o->verify)
		return usage_error("--verify cannot run with --ladder: three rungs splice to "
				   "/dev/null; verify one mode at a time");
	if (o->verify && splice)
		return usage_error("--verify needs --read read: splice sends the data to "
				   "/dev/null, so there is nothing to check");
	if (o->verify && o->dont_touch)
		return usage_error("--verify writes the buffers, which --dont-touch forbids");
	if ((vmsplice || o->ladder) && (o->buf_size % 2 || o->buf_size < 8192))
		return usage_error("--buf-size %lld: with vmsplice it must be even and at least "
				   "8K (the pipe is sized to half of it)", o->buf_size);
	if (o->bytes && c->count_set)
		return usage_error("--bytes and --count both set the amount; give one");
	if ((o->bytes || c->count_set) && c->duration_set)
		return usage_error("--duration conflicts with --%s; give one",
				   o->bytes ? "bytes" : "count");
	if (o->bytes && o->bytes < 2 * o->buf_size)
		return usage_error("--bytes %lld: at least 2 x --buf-size is needed (the first "
				   "transfer is not timed)", o->bytes);
	if (c->count_set && c->count < 2)
		return usage_error("--count %lld: at least 2 buffers are needed (the first "
				   "transfer is not timed)", c->count);
	return 0;
}

static int fp_run(const struct common_opts *c, void *wopts, struct report *r)
{
	const struct fp_opts *o = wopts;
	struct fp_cfg cfg = {
		.vmsplice = o->write_mode && !strcmp(o->write_mode, "vmsplice"),
		.splice = o->read_mode && !strcmp(o->read_mode, "splice"),
		.huge = o->huge_pages,
		.busy = o->busy_loop,
		.dont_touch = o->dont_touch,
		.verify = o->verify,
		.buf_size = o->buf_size,
		.buf_offset = o->buf_offset,
		.pipe_size = o->pipe_size,
		.duration_ns = (uint64_t)((c->duration > 0 ? c->duration : FP_DEFAULT_DURATION) * 1e9),
		.cpu_w = c->cpus[0],
		.cpu_r = c->cpus[1],
	};
	const char *pinning = "--cpus";
	unsigned int i;
	int ret;

	if (o->bytes)
		cfg.bytes = o->bytes;
	else if (c->count_set)
		cfg.bytes = (uint64_t)c->count * o->buf_size;
	/* the post pins writer and reader with taskset; so do we unless told */
	if (c->cpus[0] < 0) {
		if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
			cfg.cpu_w = 0;
			cfg.cpu_r = 1;
			pinning = "default 0,1";
		} else {
			pinning = "none (one CPU)";
		}
	}
	if ((o->huge_pages || o->ladder) && access(FP_THP_ENABLED, F_OK) < 0) {
		if (o->huge_pages) {
			skip_reason("--huge-pages: no transparent huge pages (%s missing)",
				    FP_THP_ENABLED);
			return EXIT_SKIP;
		}
	}

	if (!o->ladder)
		return fp_run_one(c, &cfg, pinning, r);
	for (i = 0; i < sizeof(fp_rungs) / sizeof(fp_rungs[0]); i++) {
		cfg.rung = fp_rungs[i].rung;
		cfg.vmsplice = fp_rungs[i].vmsplice;
		cfg.splice = fp_rungs[i].splice;
		cfg.huge = fp_rungs[i].huge;
		cfg.busy = fp_rungs[i].busy;
		ret = fp_run_one(c, &cfg, pinning, r);
		if (ret != EXIT_OK)
			return ret;
	}
	return EXIT_OK;
}

/*
 * Each rung as the options that select its modes on their own, in the order
 * a user would type them: a front end runs a rung as one cell with these and
 * compares them with the args of older results, so their spelling is fixed.
 */
static void fp_describe(struct strbuf *sb)
{
	unsigned int i;

	sb_printf(sb, "\"ladder\":[");
	for (i = 0; i < sizeof(fp_rungs) / sizeof(fp_rungs[0]); i++) {
		sb_printf(sb, "%s{\"rung\":", i ? "," : "");
		sb_json_str(sb, fp_rungs[i].rung);
		sb_printf(sb, ",\"args\":[\"--write\",\"%s\",\"--read\",\"%s\"%s%s]}",
			  fp_rungs[i].vmsplice ? "vmsplice" : "write",
			  fp_rungs[i].splice ? "splice" : "read",
			  fp_rungs[i].huge ? ",\"--huge-pages\"" : "",
			  fp_rungs[i].busy ? ",\"--busy-loop\"" : "");
	}
	sb_printf(sb, "]");
}

const struct bench bench_fastpipe = {
	.name = "fastpipe",
	.summary = "writer -> pipe -> reader in GiB/s: write/read, vmsplice, splice, huge pages, "
		   "busy loop (after mazzo.li/posts/fast-pipes.html); pinned to CPUs 0,1 "
		   "unless --cpus",
	.opts = fp_opt_table,
	.opts_size = sizeof(struct fp_opts),
	.defaults = &fp_defaults,
	.validate = fp_validate,
	.run = fp_run,
	.describe = fp_describe,
};
