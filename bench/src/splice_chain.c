// SPDX-License-Identifier: MIT
/*
 * splice_chain.c: data moved between pipes and files by the kernel alone, in
 * the shapes of stress-ng's splice, vm-splice and tee stressors.
 *
 *  - --chain splice, one process: /dev/zero -> pipe 1 -> pipe 2 -> /dev/null,
 *    one splice(2) per hop of --bytes each round.
 *  - --chain vmsplice, one process: vmsplice(2) a buffer of --bytes into a
 *    pipe and splice it to /dev/null, then write one page into the pipe and
 *    vmsplice it back out into the buffer (the copy-out direction).
 *  - --chain tee, three processes: a writer write()s --write-size records
 *    into pipe 1; the tee process tee(2)s whatever pipe 1 holds into pipe 2
 *    and splices the same amount from pipe 1 to /dev/null; a reader read()s
 *    the records from pipe 2.
 *
 * Two rates.  throughput: the bytes of the chain's main path (into pipe 1,
 * through vmsplice, or through tee) over the whole run.  call_throughput:
 * the bytes the timed calls moved over the time spent inside them, each call
 * between two clock reads; the timed calls are stress-ng's: the two splices
 * out of pipes 1 and 2, the two vmsplices, the tee.  A round is one pass of
 * the loop (one tee call with --chain tee); --count N rounds, or --duration.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ipcbench.h"

#define SC_DEFAULT_DURATION	2.0
#define SC_PAGE			4096

struct sc_opts {
	const char *chain;
	long long bytes;
	long long write_size;
	long long pipe_size;
};

static const char *const sc_chains[] = { "splice", "vmsplice", "tee", NULL };

static const struct sc_opts sc_defaults = {
	.chain = "splice",
	.bytes = 64 * 1024,
	.write_size = 16,
};

#define SO(field) offsetof(struct sc_opts, field)

static const struct opt sc_opt_table[] = {
	{ "chain", OPT_CHOICE, SO(chain),
	  "splice: /dev/zero -> pipe -> pipe -> /dev/null in one process; vmsplice: memory "
	  "-> pipe -> /dev/null and a page back, one process; tee: writer -> pipe -tee-> "
	  "pipe -> reader, the first pipe spliced to /dev/null, three processes (default "
	  "splice)", 0, 0, sc_chains },
	{ "bytes", OPT_SIZE, SO(bytes),
	  "bytes per splice or vmsplice call (default 64K, as stress-ng)", SC_PAGE, 1 << 30 },
	{ "write-size", OPT_SIZE, SO(write_size),
	  "--chain tee: bytes per write() and read() of the writer and the reader (default 16, "
	  "as stress-ng's tee records)", 1, 1 << 20 },
	{ "pipe-size", OPT_SIZE, SO(pipe_size),
	  "capacity of every pipe (F_SETPIPE_SZ; default the kernel's)", SC_PAGE, 1 << 30 },
	OPT_END
};

/* What the timed process leaves for the engine. */
struct sc_shared {
	uint64_t rounds;
	uint64_t bytes;			/* the main path's bytes */
	uint64_t call_bytes, call_ns;	/* the timed calls */
	uint64_t read_bytes;		/* tee: what the reader got */
	uint64_t elapsed_ns;
	atomic_int stop;		/* tee: the writer stops */
	int err;
	char what[48];
	struct place side[3];
};

struct sc_ctx {
	const struct sc_opts *o;
	struct sc_shared *sh;
	uint64_t rounds;	/* 0 = until duration_ns */
	uint64_t duration_ns;
	int cpu, cpu_other;
	int p1[2], p2[2];
};

static const char *const sc_roles_tee[] = { "tee", "writer", "reader" };
static const char *const sc_roles_one[] = { "chain" };

static int sc_fail(struct sc_shared *sh, const char *what)
{
	sh->err = errno;
	snprintf(sh->what, sizeof(sh->what), "%s", what);
	return errno == EINVAL || errno == ENOSYS ? EXIT_SKIP : EXIT_FAIL;
}

static bool sc_done(const struct sc_ctx *x, uint64_t rounds, uint64_t start)
{
	/* the clock is read every 64 rounds at most, outside the timed calls */
	if (x->rounds)
		return rounds >= x->rounds;
	return !(rounds & 63) && now_ns() - start >= x->duration_ns;
}

/* One call between two clock reads, its bytes and time added up. */
#define SC_TIMED(sh, call) ({						\
	uint64_t t_ = now_ns();						\
	ssize_t n_ = (call);						\
	if (n_ > 0) {							\
		(sh)->call_ns += now_ns() - t_;				\
		(sh)->call_bytes += (uint64_t)n_;			\
	}								\
	n_;								\
})

static int sc_splice(struct sc_ctx *x)
{
	struct sc_shared *sh = x->sh;
	size_t len = (size_t)x->o->bytes;
	uint64_t start, rounds = 0;
	int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (zero < 0 || null < 0)
		return sc_fail(sh, "open /dev/zero or /dev/null");
	start = now_ns();
	do {
		ssize_t in = splice(zero, NULL, x->p1[1], NULL, len, 0), n;

		if (in < 0)
			return sc_fail(sh, "splice /dev/zero -> pipe 1");
		sh->bytes += (uint64_t)in;
		/* what came in goes on: a hop may move less than asked */
		for (n = 0; n < in;) {
			ssize_t m = SC_TIMED(sh, splice(x->p1[0], NULL, x->p2[1], NULL,
							(size_t)(in - n), 0));

			if (m <= 0)
				return sc_fail(sh, "splice pipe 1 -> pipe 2");
			n += m;
			while (m > 0) {
				ssize_t k = SC_TIMED(sh, splice(x->p2[0], NULL, null, NULL,
								(size_t)m, 0));

				if (k <= 0)
					return sc_fail(sh, "splice pipe 2 -> /dev/null");
				m -= k;
			}
		}
		rounds++;
	} while (!sc_done(x, rounds, start));
	sh->elapsed_ns = now_ns() - start;
	sh->rounds = rounds;
	return EXIT_OK;
}

static int sc_vmsplice(struct sc_ctx *x)
{
	struct sc_shared *sh = x->sh;
	size_t len = (size_t)x->o->bytes & ~(size_t)(SC_PAGE - 1);
	char *buf = alloc_buffer(len, true), *page = alloc_buffer(SC_PAGE, true);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	uint64_t start, rounds = 0;

	if (!buf || !page || null < 0)
		return sc_fail(sh, "buffers or /dev/null");
	memset(page, 'v', SC_PAGE);
	start = now_ns();
	do {
		struct iovec iov = { .iov_base = buf, .iov_len = len };
		ssize_t n = SC_TIMED(sh, vmsplice(x->p1[1], &iov, 1, 0)), m;

		if (n <= 0)
			return sc_fail(sh, "vmsplice into the pipe");
		sh->bytes += (uint64_t)n;
		while (n > 0) {
			m = splice(x->p1[0], NULL, null, NULL, (size_t)n, 0);
			if (m <= 0)
				return sc_fail(sh, "splice pipe -> /dev/null");
			n -= m;
		}
		if (write(x->p1[1], page, SC_PAGE) != SC_PAGE)
			return sc_fail(sh, "write a page into the pipe");
		iov.iov_len = SC_PAGE;
		if (SC_TIMED(sh, vmsplice(x->p1[0], &iov, 1, 0)) != SC_PAGE)
			return sc_fail(sh, "vmsplice out of the pipe");
		rounds++;
	} while (!sc_done(x, rounds, start));
	sh->elapsed_ns = now_ns() - start;
	sh->rounds = rounds;
	return EXIT_OK;
}

static int sc_tee_writer(void *arg)
{
	struct sc_ctx *x = arg;
	char *buf = calloc(1, (size_t)x->o->write_size);

	close(x->p1[0]);
	close(x->p2[0]);
	close(x->p2[1]);
	/* the tee process closing pipe 1 ends the run: expect EPIPE */
	signal(SIGPIPE, SIG_IGN);
	if (!buf || pin_cpu(x->cpu_other) < 0)
		return EXIT_FAIL;
	place_start(&x->sh->side[1]);
	/* until told, or until the tee process closes pipe 1 (EPIPE) */
	while (!atomic_load_explicit(&x->sh->stop, memory_order_relaxed))
		if (write_full(x->p1[1], buf, (size_t)x->o->write_size) < 0)
			break;
	place_end(&x->sh->side[1]);
	return EXIT_OK;
}

static int sc_tee_reader(void *arg)
{
	struct sc_ctx *x = arg;
	size_t size = (size_t)x->o->write_size;
	char *buf = calloc(1, size);
	uint64_t got = 0;
	ssize_t n;

	close(x->p1[0]);
	close(x->p1[1]);
	close(x->p2[1]);
	if (!buf || pin_cpu(x->cpu_other) < 0)
		return EXIT_FAIL;
	place_start(&x->sh->side[2]);
	/* EOF once the tee process, pipe 2's only writer, is gone */
	while ((n = read(x->p2[0], buf, size)) != 0) {
		if (n < 0 && errno != EINTR)
			return EXIT_FAIL;
		if (n > 0)
			got += (uint64_t)n;
	}
	place_end(&x->sh->side[2]);
	x->sh->read_bytes = got;
	return EXIT_OK;
}

static int sc_tee(struct sc_ctx *x)
{
	struct sc_shared *sh = x->sh;
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	uint64_t start, rounds = 0;
	ssize_t n, m;

	if (null < 0)
		return sc_fail(sh, "open /dev/null");
	start = now_ns();
	do {
		n = SC_TIMED(sh, tee(x->p1[0], x->p2[1], INT_MAX, 0));
		if (n <= 0)
			return sc_fail(sh, "tee pipe 1 -> pipe 2");
		sh->bytes += (uint64_t)n;
		while (n > 0) {
			m = splice(x->p1[0], NULL, null, NULL, (size_t)n, 0);
			if (m <= 0)
				return sc_fail(sh, "splice pipe 1 -> /dev/null");
			n -= m;
		}
		rounds++;
	} while (!sc_done(x, rounds, start));
	sh->elapsed_ns = now_ns() - start;
	sh->rounds = rounds;
	atomic_store(&sh->stop, 1);
	return EXIT_OK;
}

static int sc_child(void *arg)
{
	struct sc_ctx *x = arg;
	const char *chain = x->o->chain;
	int ret = pin_cpu(x->cpu);

	if (ret < 0) {
		errno = -ret;
		return sc_fail(x->sh, "pin");
	}
	if (!strcmp(chain, "tee")) {
		close(x->p1[1]);
		close(x->p2[0]);
	}
	place_start(&x->sh->side[0]);
	ret = !strcmp(chain, "splice") ? sc_splice(x) :
	      !strcmp(chain, "vmsplice") ? sc_vmsplice(x) : sc_tee(x);
	place_end(&x->sh->side[0]);
	return ret;
}

static int sc_validate(const struct common_opts *c, void *wopts)
{
	const struct sc_opts *o = wopts;

	if (c->count_set && c->duration_set)
		return usage_error("--count and --duration exclude each other");
	if (strcmp(o->chain, "tee") && o->write_size != sc_defaults.write_size)
		return usage_error("--write-size is the tee chain's writer and reader");
	return 0;
}

static int sc_run(const struct common_opts *c, void *wopts, struct report *r)
{
	const struct sc_opts *o = wopts;
	bool tee_chain = !strcmp(o->chain, "tee");
	struct sc_ctx x = {
		.o = o,
		.rounds = c->count_set ? (uint64_t)c->count : 0,
		.duration_ns = (uint64_t)((c->duration > 0 ? c->duration : SC_DEFAULT_DURATION) * 1e9),
		.cpu = c->cpus[0],
		.cpu_other = c->cpus[1],
		.p1 = { -1, -1 },
		.p2 = { -1, -1 },
	};
	struct counters cnt;
	pid_t pids[3] = { -1, -1, -1 };
	int i, st, nproc = tee_chain ? 3 : 1, ret = EXIT_FAIL;
	double secs;

	x.sh = mmap(NULL, sizeof(*x.sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		    -1, 0);
	if (x.sh == MAP_FAILED) {
		fail_reason("mmap: %s", strerror(errno));
		return EXIT_FAIL;
	}
	for (i = 0; i < 3; i++)
		x.sh->side[i] = (struct place) { -1, -1, -1, -1 };
	if (pipe2(x.p1, O_CLOEXEC) < 0 || pipe2(x.p2, O_CLOEXEC) < 0) {
		fail_reason("pipe: %s", strerror(errno));
		goto out;
	}
	if (o->pipe_size && (set_pipe_size(x.p1[1], o->pipe_size) < 0 ||
			     set_pipe_size(x.p2[1], o->pipe_size) < 0))
		goto out;

	counters_start(&cnt);
	pids[0] = spawn(sc_child, &x);
	if (tee_chain && pids[0] > 0) {
		pids[1] = spawn(sc_tee_writer, &x);
		if (pids[1] > 0)
			pids[2] = spawn(sc_tee_reader, &x);
	}
	for (i = 0; i < nproc; i++) {
		if (pids[i] < 0) {
			fail_reason("fork: %s", strerror(-pids[i]));
			kill_children();
			counters_stop(&cnt);
			goto out;
		}
	}
	/* the children alone hold the pipes now: EOF and EPIPE end the tee chain */
	for (i = 0; i < 2; i++) {
		close(x.p1[i]);
		close(x.p2[i]);
		x.p1[i] = x.p2[i] = -1;
	}
	st = reap(pids[0]);
	for (i = 1; i < nproc; i++)
		if (reap(pids[i]) && st == EXIT_OK)
			st = EXIT_FAIL;
	counters_stop(&cnt);
	if (st != EXIT_OK) {
		if (x.sh->what[0] && st == EXIT_SKIP)
			skip_reason("%s: %s", x.sh->what, strerror(x.sh->err));
		else if (x.sh->what[0])
			fail_reason("%s: %s", x.sh->what, strerror(x.sh->err));
		else
			fail_reason("a process of the chain exited with status %d", st);
		ret = st == EXIT_SKIP ? EXIT_SKIP : EXIT_FAIL;
		goto out;
	}

	secs = x.sh->elapsed_ns / 1e9;
	report_param_str(r, "chain", o->chain);
	report_param_int(r, "bytes", o->bytes);
	if (tee_chain)
		report_param_int(r, "write_size", o->write_size);
	report_param_int(r, "pipe_size", o->pipe_size);
	report_param_cpus(r, c);
	report_metric(r, "throughput", secs > 0 ? x.sh->bytes / secs / (1 << 30) : 0, "GiB/s",
		      HIGHER_IS_BETTER);
	report_metric(r, "call_throughput", x.sh->call_ns ?
		      (double)x.sh->call_bytes / x.sh->call_ns * 1e9 / (1 << 30) : 0, "GiB/s",
		      BETTER_NONE);
	report_metric(r, "rounds", (double)x.sh->rounds, "rounds", BETTER_NONE);
	report_metric(r, "bytes_moved", (double)x.sh->bytes, "B", BETTER_NONE);
	report_metric(r, "elapsed_s", secs, "s", BETTER_NONE);
	if (tee_chain)
		report_metric(r, "bytes_read", (double)x.sh->read_bytes, "B", BETTER_NONE);
	report_note(r, "call_throughput", "bytes over the time inside the %s calls, each timed "
		    "by two clock reads", !strcmp(o->chain, "splice") ? "splice pipe 1 -> pipe "
		    "2 and pipe 2 -> /dev/null" : tee_chain ? "tee" : "vmsplice");
	report_counters(r, &cnt);
	report_sides(r, tee_chain ? sc_roles_tee : sc_roles_one, nproc, x.sh->side, nproc);
	report_emit(r);
	ret = EXIT_OK;
out:
	for (i = 0; i < 2; i++) {
		if (x.p1[i] >= 0)
			close(x.p1[i]);
		if (x.p2[i] >= 0)
			close(x.p2[i]);
	}
	munmap(x.sh, sizeof(*x.sh));
	return ret;
}

const struct bench bench_splice_chain = {
	.name = "splice-chain",
	.summary = "splice, vmsplice and tee chains between pipes, /dev/zero and /dev/null "
		   "(stress-ng's splice, vm-splice and tee shapes): GiB/s",
	.opts = sc_opt_table,
	.opts_size = sizeof(struct sc_opts),
	.defaults = &sc_defaults,
	.validate = sc_validate,
	.run = sc_run,
};
