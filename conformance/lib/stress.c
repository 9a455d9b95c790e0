// SPDX-License-Identifier: MIT
/*
 * stress: shared machinery of the integrity stress tests (see stress.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct.h"
#include "stress.h"

static void usage_error(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try --help)\n");
	exit(2);
}

static double parse_num(const char *prog, const char *opt, const char *s, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		usage_error(prog, "--%s wants a number in [%g, %g], got '%s'", opt, lo, hi, s);
	return v;
}

void stress_parse(int argc, char **argv, struct stress_opts *o, const char *prog,
		  const char *about)
{
	static const struct option longopts[] = {
		{ "duration", required_argument, NULL, 'd' },
		{ "writers", required_argument, NULL, 'w' },
		{ "readers", required_argument, NULL, 'r' },
		{ "record-size", required_argument, NULL, 's' },
		{ "pipe-size", required_argument, NULL, 'p' },
		{ "depth", required_argument, NULL, 'q' },
		{ "stall", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 'S' },
		{ "tolerate-enomem", no_argument, NULL, 'E' },
		{ "packet", no_argument, NULL, 'P' },
		{ "splice", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': o->duration = parse_num(prog, "duration", optarg, 0.01, 86400); break;
		case 'w': o->writers = parse_num(prog, "writers", optarg, 1, STRESS_MAX_PROCS); break;
		case 'r': o->readers = parse_num(prog, "readers", optarg, 1, STRESS_MAX_PROCS); break;
		case 's': o->record_size = parse_num(prog, "record-size", optarg, 16, 1 << 20); break;
		case 'p': o->pipe_size = parse_num(prog, "pipe-size", optarg, 4096, 1 << 30); break;
		case 'q': o->depth = parse_num(prog, "depth", optarg, 1, 65536); break;
		case 't': o->stall = parse_num(prog, "stall", optarg, 0.1, 3600); break;
		case 'S': o->seed = parse_num(prog, "seed", optarg, 1, 1e18); break;
		case 'E': o->tolerate_enomem = true; break;
		case 'P': o->packet = true; break;
		case 'L': o->splice = true; break;
		case 'h':
			printf("usage: %s [options]\n%s\n"
			       "  --duration S        seconds the writers run (default %g)\n"
			       "  --writers N         writer/sender processes (default %d, max %d)\n"
			       "  --readers N         reader/receiver processes (default %d)\n"
			       "  --record-size B     bytes per record/message (default: the test's)\n"
			       "  --pipe-size B       pipe capacity via F_SETPIPE_SZ (pipe test)\n"
			       "  --depth N           mq_maxmsg (mqueue test)\n"
			       "  --packet            O_DIRECT packet-mode pipe (pipe test)\n"
			       "  --splice            records enter and leave the pipe by splice(2)\n"
			       "                      through a private pipe per process (pipe test)\n"
			       "  --stall S           seconds without progress = hang (default %g)\n"
			       "  --tolerate-enomem   for fault injection: retry ENOMEM (and continue\n"
			       "                      short writes where POSIX allows them)\n"
			       "  --seed N            seed (also CT_SEED)\n"
			       "Exit: 0 pass, 1 fail, 2 usage error, 77 skip.\n",
			       prog, about, o->duration, o->writers, STRESS_MAX_PROCS,
			       o->readers, o->stall);
			exit(0);
		default:
			usage_error(prog, "unknown option or missing argument '%s'",
				    argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error(prog, "unexpected argument '%s'", argv[optind]);
	if (o->writers + o->readers > STRESS_MAX_PROCS)
		usage_error(prog, "--writers + --readers must be at most %d", STRESS_MAX_PROCS);
}

struct stress_shared *stress_shared_new(int writers)
{
	size_t bm = (size_t)writers * STRESS_SEQ_BITS / 8;
	struct stress_shared *sh;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		ct_fatal("mmap: %m");
	/* Reserved, not touched: only the pages of sequence numbers used get memory. */
	sh->bitmap = mmap(NULL, bm, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (sh->bitmap == MAP_FAILED)
		ct_fatal("mmap bitmap: %m");
	return sh;
}

int stress_fail(struct stress_shared *sh, const char *fmt, ...)
{
	int expected = 0;
	va_list ap;

	if (atomic_compare_exchange_strong(&sh->failed, &expected, 1)) {
		va_start(ap, fmt);
		vsnprintf(sh->why, sizeof(sh->why), fmt, ap);
		va_end(ap);
	}
	atomic_store(&sh->stop, 1);
	return -1;
}

bool stress_mark(struct stress_shared *sh, int writer, uint64_t seq)
{
	uint64_t bit = (uint64_t)writer * STRESS_SEQ_BITS + seq;
	unsigned char mask = 1u << (bit & 7);

	return !(atomic_fetch_or(&sh->bitmap[bit >> 3], mask) & mask);
}

int64_t stress_first_missing(struct stress_shared *sh, int w)
{
	uint64_t n = atomic_load(&sh->sent[w]), seq;

	for (seq = 0; seq < n; seq++) {
		uint64_t bit = (uint64_t)w * STRESS_SEQ_BITS + seq;

		if (!(atomic_load(&sh->bitmap[bit >> 3]) & (1u << (bit & 7))))
			return (int64_t)seq;
	}
	return -1;
}

/* What a child runs, kept here so that stress_child() can mark it first. */
static int (*stress_child_fn)(void *);

/*
 * A writer or reader: with CT_MAKE_IT_FAIL=1 (the kernel lab's vm run
 * --fault-tasks workers) it opts in to fail_page_alloc and failslab before
 * it works, so that the failures land in its writes and reads, not in the
 * supervisor's or run.sh's forks and execs.  The fork itself is not marked.
 */
static int stress_child(void *arg)
{
	const char *mark = getenv("CT_MAKE_IT_FAIL");
	int fd;

	if (mark && !strcmp(mark, "1")) {
		fd = open("/proc/self/make-it-fail", O_WRONLY);
		if (fd < 0 || write(fd, "1", 1) != 1)
			ct_fatal("CT_MAKE_IT_FAIL: /proc/self/make-it-fail: %m");
		close(fd);
	}
	return stress_child_fn(arg);
}

static int stress_spawn(const struct stress_opts *o, int (*fn)(void *), int n, pid_t *pids)
{
	int i, tries;

	stress_child_fn = fn;
	for (i = 0; i < n; i++) {
		for (tries = 0;; tries++) {
			/* The index itself is the argument: nothing to keep alive. */
			pids[i] = ct_spawn(stress_child, (void *)(long)i);
			if (pids[i] > 0)
				break;
			if (!o->tolerate_enomem || tries >= 100)
				return pids[i];
			ct_sleep_ms(10);
		}
	}
	return 0;
}

void stress_start(const struct stress_opts *o, int (*writer)(void *), int (*reader)(void *),
		  pid_t *pids)
{
	int ret;

	ret = stress_spawn(o, writer, o->writers, pids);
	if (!ret)
		ret = stress_spawn(o, reader, o->readers, pids + o->writers);
	if (ret)
		ct_fatal("fork: %s", strerror(-ret));
}

static void dump_child(pid_t pid, const char *role, int idx)
{
	char path[64], stat[512] = "?", wchan[64] = "?", *p;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		n = read(fd, stat, sizeof(stat) - 1);
		stat[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		n = read(fd, wchan, sizeof(wchan) - 1);
		wchan[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	p = strrchr(stat, ')');
	ct_log("  %s %d (pid %d): state %c, wchan %s", role, idx, (int)pid,
	       p && p[1] ? p[2] : '?', wchan);
}

int stress_supervise(const struct stress_opts *o, struct stress_shared *sh,
		     pid_t *pids, int nr_writers, int nr_readers,
		     void (*writers_done)(void))
{
	int writers_left = nr_writers;
	uint64_t start = ct_now_ns(), last_change = start, last = 0, now;
	uint64_t run_ns = (uint64_t)(o->duration * 1e9);
	uint64_t stall_ns = (uint64_t)(ct_scale(o->stall) * 1e9);
	int total = nr_writers + nr_readers, left = total, i, status, bad = 0;
	bool stopping = false;

	while (left) {
		ct_sleep_ms(20);
		now = ct_now_ns();
		if (!stopping && (now - start >= run_ns || atomic_load(&sh->stop))) {
			atomic_store(&sh->stop, 1);
			stopping = true;
		}
		for (i = 0; i < total; i++) {
			if (!pids[i] || ct_try_wait(pids[i], &status) != 1)
				continue;
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				if (!bad)
					ct_log("%s %d exited with status %#x",
					       i < nr_writers ? "writer" : "reader",
					       i < nr_writers ? i : i - nr_writers, status);
				bad = 1;
				atomic_store(&sh->stop, 1);
			}
			pids[i] = 0;
			left--;
			last_change = now;
			if (i < nr_writers && !--writers_left && writers_done)
				writers_done();
		}
		/* A failure is final: do not wait for peers that may now block forever. */
		if (left && (bad || atomic_load(&sh->failed))) {
			ct_kill_children();
			return -1;
		}
		if (atomic_load(&sh->progress) != last) {
			last = atomic_load(&sh->progress);
			last_change = now;
		}
		if (left && now - last_change > stall_ns) {
			ct_log("no progress for %.1f s with %d processes left: lost wakeup or hang",
			       (double)(now - last_change) / 1e9, left);
			for (i = 0; i < total; i++)
				if (pids[i])
					dump_child(pids[i], i < nr_writers ? "writer" : "reader",
						   i < nr_writers ? i : i - nr_writers);
			stress_fail(sh, "stalled: no progress for %.1f s (sent %llu, received %llu)",
				    o->stall, (unsigned long long)atomic_load(&sh->bytes_sent),
				    (unsigned long long)atomic_load(&sh->bytes_received));
			ct_kill_children();
			return -1;
		}
	}
	return bad || atomic_load(&sh->failed) ? -1 : 0;
}

uint64_t stress_check(struct stress_shared *sh, int ret, int nr_writers, const char *writer,
		      const char *record)
{
	uint64_t sent = 0;
	int i;

	if (atomic_load(&sh->failed))
		ct_expect(0, "%s", sh->why);
	else
		ct_expect(ret == 0, "a child failed");
	for (i = 0; i < nr_writers; i++)
		sent += atomic_load(&sh->sent[i]);
	/* After a failure the children were stopped or killed mid-run: gaps say nothing new. */
	for (i = 0; i < nr_writers && !ct_failed(); i++) {
		int64_t miss = stress_first_missing(sh, i);

		ct_expect(miss < 0, "%s %d: %s %lld of %llu never arrived", writer, i, record,
			  (long long)miss, (unsigned long long)atomic_load(&sh->sent[i]));
	}
	return sent;
}
