// SPDX-License-Identifier: MIT
/*
 * pipe_sweep.c: W writers and R readers share one pipe; every write() is
 * timed into a histogram.
 *
 * The experiment of Breno Leitao's series "fs/pipe: bulk pre-allocate pages
 * outside pipe->mutex in anon_pipe_write" (linux-kernel, 2026-05-15): 64 KiB
 * writes into a 1 MiB pipe, writers {1,2,5} x readers {1,5,10} with --sweep,
 * optionally under stress-ng --vm memory pressure, reporting MB/s and write
 * latency.
 *
 * Writers stop when the parent raises a shared stop flag at the deadline (or
 * after --count writes each).  Readers read until EOF, which comes only once
 * every write end is closed, so every byte written is read and counted.
 * Throughput is bytes read over the measured time from the start signal to
 * the last reader's EOF, not over the nominal duration.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ipcbench.h"
#include "pressure.h"
#include "strbuf.h"

#define SWEEP_DEFAULT_DURATION	10.0
#define SWEEP_MAX_WORKERS	1024
#define SWEEP_TIMING_PROBES	200000	/* rounds of hist_timing_cost_ns(): a few ms */
#define PIPE_MAX_SIZE_PATH	"/proc/sys/fs/pipe-max-size"

struct sweep_opts {
	long long writers;
	long long readers;
	long long write_size;
	long long pipe_size;
	bool threads;
	bool sweep;
	bool no_latency;
	bool read_latency;
	bool packet;
	bool fill;
	bool verify;
	bool memory_pressure;
	struct pressure_opts pressure;
};

static const struct sweep_opts sweep_defaults = {
	.writers = 1,
	.readers = 1,
	.write_size = 64 * 1024,
	.pipe_size = 1024 * 1024,
	.pressure = {
		.vm = PRESSURE_DEFAULT_VM,
		.vm_bytes = PRESSURE_DEFAULT_VM_BYTES,
	},
};

/*
 * --sweep: every writers x readers cell.  The help text and ipcbench list
 * --json are built from these too, so they cannot disagree with the run.
 */
#define SWEEP_WRITERS	1, 2, 5
#define SWEEP_READERS	1, 5, 10
#define SWEEP_STR_(...)	#__VA_ARGS__
#define SWEEP_STR(...)	SWEEP_STR_(__VA_ARGS__)

static const int sweep_writers[] = { SWEEP_WRITERS };
static const int sweep_readers[] = { SWEEP_READERS };

#define NR_SWEEP_WRITERS	(sizeof(sweep_writers) / sizeof(sweep_writers[0]))
#define NR_SWEEP_READERS	(sizeof(sweep_readers) / sizeof(sweep_readers[0]))

#define SO(field) offsetof(struct sweep_opts, field)

static const struct opt sweep_opt_table[] = {
	{ "writers", OPT_INT, SO(writers), "writer processes (default 1)",
	  1, SWEEP_MAX_WORKERS },
	{ "readers", OPT_INT, SO(readers), "reader processes (default 1)",
	  1, SWEEP_MAX_WORKERS },
	{ "write-size", OPT_SIZE, SO(write_size),
	  "bytes per write(), any size (default 64K)", 1, 1 << 30 },
	{ "pipe-size", OPT_SIZE, SO(pipe_size),
	  "pipe capacity set with F_SETPIPE_SZ (default 1M; the kernel rounds up)",
	  1, 1 << 30 },
	{ "threads", OPT_FLAG, SO(threads),
	  "writers and readers are threads of the engine, not processes" },
	{ "sweep", OPT_FLAG, SO(sweep),
	  "the seed's matrix: writers {" SWEEP_STR(SWEEP_WRITERS) "} x readers {"
	  SWEEP_STR(SWEEP_READERS) "}, one result per cell" },
	{ "no-latency", OPT_FLAG, SO(no_latency),
	  "do not time each write() (to measure what the timing costs)" },
	{ "read-latency", OPT_FLAG, SO(read_latency),
	  "also time each read(); includes the wait for data" },
	{ "packet", OPT_FLAG, SO(packet),
	  "open the pipe with O_DIRECT (packet mode): each write() up to a page is one "
	  "packet in a slot of its own and each read() takes at most one packet, as "
	  "stress-ng's pipe stressor does" },
	{ "fill", OPT_FLAG, SO(fill),
	  "the writers produce each write's bytes anew (an incrementing pattern, as "
	  "stress-ng 0.15's pipe writer does) instead of writing one buffer again" },
	{ "verify", OPT_FLAG, SO(verify),
	  "with --fill, one writer and one reader: the reader checks every byte (costs it "
	  "time; not for measuring)" },
	{ "memory-pressure", OPT_FLAG, SO(memory_pressure),
	  "run stress-ng --vm alongside, started anew for each sample (needs stress-ng in PATH)" },
	{ "vm", OPT_INT, SO(pressure.vm),
	  "stress-ng --vm workers for --memory-pressure (default 2)", 1, 256 },
	{ "vm-bytes", OPT_STRING, SO(pressure.vm_bytes),
	  "stress-ng --vm-bytes, shared by all workers: N% of available memory or a size (default 50%)" },
	{ "vm-method", OPT_STRING, SO(pressure.vm_method),
	  "stress-ng --vm-method (default: stress-ng's own)" },
	{ "vm-no-keep", OPT_FLAG, SO(pressure.vm_no_keep),
	  "do not pass --vm-keep (workers unmap and remap their memory)" },
	OPT_END
};

/* One worker's results, in memory shared with the engine. */
struct sweep_slot {
	uint64_t bytes;
	uint64_t ops;
	uint64_t end_ns;
	uint64_t verified;	/* reader: bytes checked against the --fill pattern */
	int err;		/* errno of the call that failed, 0 if none */
	struct place place;
	struct hist hist;
} __attribute__((aligned(64)));

struct sweep_shared {
	/* raised once by the engine at the deadline, polled by every writer */
	atomic_int stop __attribute__((aligned(64)));
	struct sweep_slot slot[];
};

/* One cell of the sweep, as the workers see it. */
struct sweep_run {
	struct sweep_shared *sh;
	size_t write_size;
	uint64_t count;		/* writes per writer; 0: until stop */
	bool time_writes;
	bool time_reads;
	bool fill;
	bool verify;		/* --fill with one writer and one reader */
	bool threads;
	int go_rd;		/* EOF on it releases every worker at once */
	int go_wr;
	int pipe_rd;
	int pipe_wr;
};

struct sweep_worker {
	struct sweep_run *run;
	struct sweep_slot *slot;
	bool writer;
	int fd;			/* the pipe end this worker uses */
	int cpu;		/* -1: not pinned */
	bool started;
	pid_t pid;
	pthread_t thread;
};

static int sweep_validate(const struct common_opts *c, void *wopts)
{
	struct sweep_opts *o = wopts;
	long long max;

	if (c->count_set && c->duration_set)
		return usage_error("--count (writes per writer) and --duration exclude each other");
	max = sysctl_read_ll(PIPE_MAX_SIZE_PATH);
	/*
	 * Above fs/pipe-max-size F_SETPIPE_SZ needs CAP_SYS_RESOURCE, which
	 * root in a container may lack; root raises the sysctl instead (see
	 * raise_pipe_max_size()).
	 */
	if (o->verify && (!o->fill || o->sweep || o->writers != 1 || o->readers != 1))
		return usage_error("--verify checks the --fill pattern of one writer read by one "
				   "reader: give --fill, no --sweep, one writer and one reader");
	if (max > 0 && o->pipe_size > max && geteuid() != 0)
		return usage_error("--pipe-size %lld: above %s (%lld); needs root",
				   o->pipe_size, PIPE_MAX_SIZE_PATH, max);
	if (o->memory_pressure)
		return pressure_validate(&o->pressure);
	return 0;
}

/* write() all of buf, counting in @bytes what really went in. */
static int pipe_write(int fd, const char *buf, size_t len, uint64_t *bytes)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		*bytes += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/* A worker's totals and end time, for the parent; passes @ret through. */
static int finish_slot(struct sweep_slot *s, uint64_t bytes, uint64_t ops, int ret)
{
	s->bytes = bytes;
	s->ops = ops;
	s->end_ns = now_ns();
	place_end(&s->place);
	s->err = -ret;
	return ret;
}

/* --fill: byte @off of the stream is (write number + offset in it), mod 256. */
static unsigned char fill_byte(uint64_t off, size_t write_size)
{
	return (unsigned char)(off / write_size + off % write_size);
}

static void fill_write(char *buf, size_t len, uint64_t nth)
{
	unsigned char v = (unsigned char)nth;
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (char)v++;
}

static int writer_loop(struct sweep_worker *w, char *buf)
{
	struct sweep_run *run = w->run;
	struct sweep_slot *s = w->slot;
	uint64_t bytes = 0, ops = 0, t0;
	int ret = 0;

	while (!atomic_load_explicit(&run->sh->stop, memory_order_relaxed)) {
		if (run->count && ops == run->count)
			break;
		if (run->fill)
			fill_write(buf, run->write_size, ops);
		if (run->time_writes) {
			t0 = now_ns();
			ret = pipe_write(w->fd, buf, run->write_size, &bytes);
			hist_add(&s->hist, now_ns() - t0);
		} else {
			ret = pipe_write(w->fd, buf, run->write_size, &bytes);
		}
		if (ret)
			break;
		ops++;
	}
	return finish_slot(s, bytes, ops, ret);
}

static int reader_loop(struct sweep_worker *w, char *buf)
{
	struct sweep_run *run = w->run;
	struct sweep_slot *s = w->slot;
	uint64_t bytes = 0, ops = 0, t0 = 0;
	ssize_t n;
	int ret = 0;

	for (;;) {
		if (run->time_reads)
			t0 = now_ns();
		n = read(w->fd, buf, run->write_size);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		if (n == 0)
			break;		/* every write end is closed */
		if (run->time_reads)
			hist_add(&s->hist, now_ns() - t0);
		if (run->verify) {
			ssize_t k;

			for (k = 0; k < n; k++) {
				if ((unsigned char)buf[k] != fill_byte(bytes + k, run->write_size)) {
					ret = -EILSEQ;
					break;
				}
			}
			if (ret)
				break;
			s->verified += n;
		}
		bytes += n;
		ops++;
	}
	return finish_slot(s, bytes, ops, ret);
}

static int worker_main(struct sweep_worker *w)
{
	struct sweep_run *run = w->run;
	char *buf, c;
	int ret;

	if (!run->threads) {
		/* keep only our own end, or the readers would never see EOF */
		close(run->go_wr);
		close(w->writer ? run->pipe_rd : run->pipe_wr);
	}
	if (w->cpu >= 0) {
		ret = pin_cpu(w->cpu);
		if (ret) {
			w->slot->err = -ret;
			goto out_close;
		}
	}
	buf = alloc_buffer(run->write_size, true);
	if (!buf) {
		ret = -ENOMEM;
		w->slot->err = ENOMEM;
		goto out_close;
	}
	while (read(run->go_rd, &c, 1) < 0 && errno == EINTR)
		;
	place_start(&w->slot->place);
	if (w->writer)
		ret = writer_loop(w, buf);
	else
		ret = reader_loop(w, buf);
	munmap(buf, run->write_size);
out_close:
	/* a writer thread owns a dup of the write end; the last close is EOF */
	if (run->threads && w->writer)
		close(w->fd);
	return ret;
}

static int worker_process(void *arg)
{
	return worker_main(arg) ? EXIT_FAIL : EXIT_OK;
}

static void *worker_thread(void *arg)
{
	return (void *)(intptr_t)worker_main(arg);
}

static int start_worker(struct sweep_worker *w)
{
	struct sweep_run *run = w->run;
	int ret;

	if (!run->threads) {
		w->pid = spawn(worker_process, w);
		if (w->pid < 0)
			return w->pid;
		w->started = true;
		return 0;
	}
	if (w->writer) {
		w->fd = fcntl(run->pipe_wr, F_DUPFD_CLOEXEC, 0);
		if (w->fd < 0)
			return -errno;
	}
	ret = pthread_create(&w->thread, NULL, worker_thread, w);
	if (ret) {
		if (w->writer)
			close(w->fd);
		return -ret;
	}
	w->started = true;
	return 0;
}

/* Wait for one worker; 0 if it ran to the end without error. */
static int finish_worker(struct sweep_worker *w)
{
	void *res;
	int ret;

	if (!w->started)
		return 0;
	w->started = false;
	if (!w->run->threads) {
		ret = reap(w->pid);
		return ret == 0 ? 0 : -ECHILD;
	}
	pthread_join(w->thread, &res);
	return (int)(intptr_t)res;
}

static void sleep_until(uint64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = deadline_ns / 1000000000ull,
		.tv_nsec = deadline_ns % 1000000000ull,
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void report_cell_params(struct report *r, const struct sweep_opts *o,
			       int writers, int readers, int granted)
{
	report_param_int(r, "writers", writers);
	report_param_int(r, "readers", readers);
	report_param_int(r, "write_size", o->write_size);
	report_param_int(r, "pipe_size", granted);
	report_param_bool(r, "threads", o->threads);
	report_param_bool(r, "packet", o->packet);
	report_param_bool(r, "fill", o->fill);
	report_param_bool(r, "latency", !o->no_latency);
	report_param_bool(r, "memory_pressure", o->memory_pressure);
	if (o->memory_pressure) {
		report_param_int(r, "vm", o->pressure.vm);
		report_param_str(r, "vm_bytes", o->pressure.vm_bytes);
		report_param_bool(r, "vm_keep", !o->pressure.vm_no_keep);
		if (o->pressure.vm_method)
			report_param_str(r, "vm_method", o->pressure.vm_method);
	}
}

static void report_pressure(struct report *r, const struct pressure *p)
{
	if (p->pid <= 0)
		return;
	report_note(r, "memory_pressure",
		    "stress-ng pid %d: %d vm workers, %llu MiB resident (target %llu MiB), ready after %.2f s",
		    (int)p->pid, p->workers,
		    (unsigned long long)(p->rss_bytes >> 20),
		    (unsigned long long)(p->target_bytes >> 20), p->ready_s);
}

/*
 * One (writers, readers) cell from set-up to report.  Set-up hands the
 * running workers to collect, which hands the sums to report; the workers
 * point at @run, so the state stays where it is until the cell is freed.
 */
struct sweep_cell_state {
	const struct common_opts *c;
	const struct sweep_opts *o;
	int writers, readers, nr;
	struct sweep_shared *sh;	/* NULL until mapped */
	size_t sh_len;
	struct sweep_worker *workers;
	struct sweep_run run;
	struct counters cnt;
	int granted;			/* pipe size F_SETPIPE_SZ gave */
	int pfd[2], go[2];
	bool failed;			/* a worker did not start */
	double timing_ns;
	uint64_t start;
	/* collected */
	uint64_t end, written, read_bytes, writes, reads;
	struct hist *wh, *rh;
	double elapsed;
};

/*
 * Map the shared results, make the pipe and the start gate, start every
 * worker and release them.  EXIT_OK with the workers running (a worker
 * that failed to start is left for sweep_cell_collect() to report), else
 * EXIT_FAIL (EXIT_SKIP where the kernel has no packet mode) with no
 * descriptor left open.
 */
static int sweep_cell_setup(struct sweep_cell_state *s)
{
	const struct common_opts *c = s->c;
	const struct sweep_opts *o = s->o;
	struct sweep_shared *sh;
	int i, err;

	s->nr = s->writers + s->readers;
	s->sh_len = sizeof(*sh) + (size_t)s->nr * sizeof(sh->slot[0]);
	sh = mmap(NULL, s->sh_len, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		fail_reason("mmap %zu bytes of shared results: %s", s->sh_len, strerror(errno));
		return EXIT_FAIL;
	}
	s->sh = sh;
	s->workers = calloc(s->nr, sizeof(*s->workers));
	if (!s->workers) {
		fail_reason("out of memory");
		return EXIT_FAIL;
	}
	if (pipe2(s->pfd, O_CLOEXEC | (o->packet ? O_DIRECT : 0)) < 0) {
		if (o->packet && errno == EINVAL) {
			skip_reason("--packet: pipe2(O_DIRECT): %s", strerror(errno));
			return EXIT_SKIP;
		}
		fail_reason("pipe: %s", strerror(errno));
		return EXIT_FAIL;
	}
	s->granted = set_pipe_size(s->pfd[1], o->pipe_size);
	if (s->granted < 0)
		goto out_close_pipe;
	if (pipe2(s->go, O_CLOEXEC) < 0) {
		fail_reason("pipe: %s", strerror(errno));
		goto out_close_pipe;
	}

	s->run.sh = sh;
	s->run.write_size = o->write_size;
	s->run.count = c->count_set ? (uint64_t)c->count : 0;
	s->run.time_writes = !o->no_latency;
	s->run.time_reads = o->read_latency;
	s->run.fill = o->fill;
	s->run.verify = o->verify;
	s->run.threads = o->threads;
	s->run.go_rd = s->go[0];
	s->run.go_wr = s->go[1];
	s->run.pipe_rd = s->pfd[0];
	s->run.pipe_wr = s->pfd[1];
	for (i = 0; i < s->nr; i++) {
		struct sweep_worker *w = &s->workers[i];

		hist_init(&sh->slot[i].hist);
		sh->slot[i].place = (struct place) { -1, -1, -1, -1 };
		w->run = &s->run;
		w->slot = &sh->slot[i];
		w->writer = i < s->writers;
		w->fd = i < s->writers ? s->pfd[1] : s->pfd[0];
		/* --cpus A,B: the first writer on A, the first reader on B */
		w->cpu = i == 0 ? c->cpus[0] : i == s->writers ? c->cpus[1] : -1;
	}

	/* before the counters: the probe is not part of the run */
	if (s->run.time_writes)
		s->timing_ns = hist_timing_cost_ns(SWEEP_TIMING_PROBES);
	counters_start(&s->cnt);
	for (i = 0; i < s->nr; i++) {
		err = start_worker(&s->workers[i]);
		if (err) {
			fail_reason("starting %s %d: %s", i < s->writers ? "writer" : "reader",
				    i, strerror(-err));
			s->failed = true;
			/* writers that see stop at once close their ends: readers get EOF */
			atomic_store(&sh->stop, 1);
			break;
		}
	}
	/* The engine keeps no pipe end: EOF must follow the last writer's close. */
	close(s->pfd[1]);
	if (!o->threads)
		close(s->pfd[0]);
	s->start = now_ns();
	close(s->go[1]);
	return EXIT_OK;

out_close_pipe:
	close(s->pfd[0]);
	close(s->pfd[1]);
	return EXIT_FAIL;
}

/*
 * Stop the writers at the deadline, wait for every worker, and sum the
 * writers' and the readers' bytes, operations and histograms.  EXIT_FAIL
 * if a worker failed, after saying which.
 */
static int sweep_cell_collect(struct sweep_cell_state *s)
{
	const struct common_opts *c = s->c;
	struct sweep_shared *sh = s->sh;
	int i;

	/* with --count the writers stop by themselves */
	if (!s->failed && !s->run.count) {
		sleep_until(s->start + (uint64_t)((c->duration_set ? c->duration :
						   SWEEP_DEFAULT_DURATION) * 1e9));
		atomic_store(&sh->stop, 1);
	}
	for (i = 0; i < s->nr; i++) {
		if (finish_worker(&s->workers[i]))
			s->failed = true;
	}
	counters_stop(&s->cnt);
	close(s->go[0]);
	if (s->o->threads)
		close(s->pfd[0]);
	if (s->failed) {
		for (i = 0; i < s->nr; i++) {
			if (sh->slot[i].err) {
				fail_reason("%s %d: %s", s->workers[i].writer ? "writer" : "reader",
					    i, strerror(sh->slot[i].err));
				break;
			}
		}
		if (i == s->nr)
			fail_reason("a worker died (see above)");
		return EXIT_FAIL;
	}

	s->wh = malloc(sizeof(*s->wh));
	s->rh = malloc(sizeof(*s->rh));
	if (!s->wh || !s->rh) {
		fail_reason("out of memory");
		return EXIT_FAIL;
	}
	hist_init(s->wh);
	hist_init(s->rh);
	for (i = 0; i < s->nr; i++) {
		struct sweep_slot *slot = &sh->slot[i];

		if (i < s->writers) {
			s->written += slot->bytes;
			s->writes += slot->ops;
			hist_merge(s->wh, &slot->hist);
		} else {
			s->read_bytes += slot->bytes;
			s->reads += slot->ops;
			hist_merge(s->rh, &slot->hist);
			if (slot->end_ns > s->end)
				s->end = slot->end_ns;
		}
	}
	s->elapsed = s->end > s->start ? (s->end - s->start) / 1e9 : 0;
	return EXIT_OK;
}

/*
 * Emit the cell's result.  Bytes lost between the writers and the readers
 * still emit it, with the error in its notes, and fail the run.
 */
static int sweep_cell_report(const struct sweep_cell_state *s, const struct pressure *pr,
			     long long raised_from, struct report *r)
{
	const struct sweep_opts *o = s->o;
	double elapsed = s->elapsed;

	report_cell_params(r, o, s->writers, s->readers, s->granted);
	report_metric(r, "throughput", elapsed > 0 ? s->read_bytes / elapsed / 1e6 : 0,
		      "MB/s", HIGHER_IS_BETTER);
	report_metric(r, "bytes_written", s->written, "B", BETTER_NONE);
	report_metric(r, "bytes_read", s->read_bytes, "B", BETTER_NONE);
	report_metric(r, "elapsed_s", elapsed, "s", BETTER_NONE);
	report_metric(r, "writes", s->writes, "writes", BETTER_NONE);
	report_metric(r, "reads", s->reads, "reads", BETTER_NONE);
	if (s->run.time_writes) {
		report_latency(r, "write", s->wh);
		report_metric(r, "timing_cost", s->timing_ns, "ns/write", BETTER_NONE);
		report_metric(r, "timing_share", elapsed > 0 ?
			      100.0 * s->timing_ns * s->writes / (elapsed * 1e9 * s->writers) : 0,
			      "%", BETTER_NONE);
		report_note(r, "timing", "each write is timed by two clock reads and a "
			    "histogram add, which cost %.1f ns here (probed before the run): "
			    "timing_share is that times the writes, over the writers' time",
			    s->timing_ns);
	}
	if (s->run.time_reads)
		report_latency(r, "read", s->rh);
	report_counters(r, &s->cnt);
	{
		static const char *const writer[] = { "writer" }, *const reader[] = { "reader" };
		struct place pl[s->nr];
		int i;

		for (i = 0; i < s->nr; i++)
			pl[i] = s->sh->slot[i].place;
		report_sides(r, writer, 1, pl, s->writers);
		report_sides(r, reader, 1, pl + s->writers, s->readers);
	}
	report_pressure(r, pr);
	if (s->run.verify)
		report_note(r, "fill", "%llu bytes read, every one as written",
			    (unsigned long long)s->sh->slot[s->writers].verified);
	if (raised_from)
		report_note(r, "pipe_max_size", "raised from %lld to %lld for this run, restored on exit",
			    raised_from, o->pipe_size);
	if (s->written != s->read_bytes) {
		report_note(r, "error", "bytes read %llu != bytes written %llu",
			    (unsigned long long)s->read_bytes, (unsigned long long)s->written);
		report_emit(r);
		fail_reason("bytes read (%llu) differ from bytes written (%llu)",
			    (unsigned long long)s->read_bytes, (unsigned long long)s->written);
		return EXIT_FAIL;
	}
	report_emit(r);
	return EXIT_OK;
}

static void sweep_cell_free(struct sweep_cell_state *s)
{
	free(s->wh);
	free(s->rh);
	free(s->workers);
	if (s->sh)
		munmap(s->sh, s->sh_len);
}

/* Run one (writers, readers) cell and emit its result. */
static int sweep_cell(const struct common_opts *c, const struct sweep_opts *o,
		      int writers, int readers, const struct pressure *pr,
		      long long raised_from, struct report *r)
{
	struct sweep_cell_state s = {
		.c = c, .o = o, .writers = writers, .readers = readers,
	};
	int ret;

	ret = sweep_cell_setup(&s);
	if (ret == EXIT_OK)
		ret = sweep_cell_collect(&s);
	if (ret == EXIT_OK)
		ret = sweep_cell_report(&s, pr, raised_from, r);
	sweep_cell_free(&s);
	return ret;
}

/*
 * Let F_SETPIPE_SZ grant a size above fs/pipe-max-size: root raises the
 * sysctl through sysctl_set(), and the core puts the old value back on every
 * exit path.  Non-root was turned away in sweep_validate().
 */
static int raise_pipe_max_size(const struct sweep_opts *o, long long *old)
{
	long long max;
	char value[32];
	int ret;

	*old = 0;
	max = sysctl_read_ll(PIPE_MAX_SIZE_PATH);
	if (max <= 0 || o->pipe_size <= max)
		return 0;
	snprintf(value, sizeof(value), "%lld", o->pipe_size);
	ret = sysctl_set(PIPE_MAX_SIZE_PATH, value);
	if (ret) {
		fail_reason("--pipe-size %lld is above %s (%lld) and raising it failed: %s",
			    o->pipe_size, PIPE_MAX_SIZE_PATH, max, strerror(-ret));
		return ret;
	}
	*old = max;
	return 0;
}

static int sweep_run(const struct common_opts *c, void *wopts, struct report *r)
{
	const struct sweep_opts *o = wopts;
	struct pressure pr = { 0 };
	long long raised_from;
	double budget;
	unsigned int i, j, cells;
	int ret = EXIT_OK;

	if (raise_pipe_max_size(o, &raised_from))
		return EXIT_FAIL;
	if (o->memory_pressure) {
		/* stress-ng's own timeout, should the engine die with SIGKILL */
		cells = o->sweep ? NR_SWEEP_WRITERS * NR_SWEEP_READERS : 1;
		budget = c->timeout + cells * (c->duration_set ? c->duration :
					       SWEEP_DEFAULT_DURATION);
		if (pressure_start(&pr, &o->pressure, budget))
			return EXIT_FAIL;
	}
	if (!o->sweep) {
		ret = sweep_cell(c, o, o->writers, o->readers, &pr,
				 raised_from, r);
		goto out_pressure;
	}
	for (i = 0; i < NR_SWEEP_WRITERS; i++) {
		for (j = 0; j < NR_SWEEP_READERS; j++) {
			ret = sweep_cell(c, o, sweep_writers[i], sweep_readers[j], &pr,
					 raised_from, r);
			if (ret != EXIT_OK)
				goto out_pressure;
		}
	}
out_pressure:
	pressure_stop(&pr);
	return ret;
}

static void sweep_axis(struct strbuf *sb, const char *key, const int *v, unsigned int n)
{
	unsigned int i;

	sb_printf(sb, "\"%s\":[", key);
	for (i = 0; i < n; i++)
		sb_printf(sb, "%s%d", i ? "," : "", v[i]);
	sb_printf(sb, "]");
}

static void sweep_describe(struct strbuf *sb)
{
	sb_printf(sb, "\"sweep\":{");
	sweep_axis(sb, "writers", sweep_writers, NR_SWEEP_WRITERS);
	sb_printf(sb, ",");
	sweep_axis(sb, "readers", sweep_readers, NR_SWEEP_READERS);
	sb_printf(sb, "}");
}

const struct bench bench_pipe_sweep = {
	.name = "pipe-sweep",
	.summary = "W writers x R readers on one pipe: MB/s and per-write() latency "
		   "(after Breno Leitao's pipe prealloc patches; --sweep, --memory-pressure; "
		   "default 10 s, --count N = writes per writer)",
	.opts = sweep_opt_table,
	.opts_size = sizeof(struct sweep_opts),
	.defaults = &sweep_defaults,
	.validate = sweep_validate,
	.run = sweep_run,
	.describe = sweep_describe,
};
