// SPDX-License-Identifier: MIT
/*
 * main.c: the ipcbench registry, common options and the sample loop.
 *
 *   ipcbench list [--json]
 *   ipcbench WORKLOAD [--help] [common options] [workload options]
 *
 * Option parsing is table driven (struct opt), so every workload gets the
 * same syntax, the same range checks and the same one-line errors (exit 2).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "core.h"
#include "strbuf.h"

extern const struct bench bench_pipe_sweep, bench_token_ring, bench_pipe_throughput,
	bench_pipe_context, bench_fastpipe, bench_mq_latency, bench_messaging,
	bench_splice_chain,
	bench_vcpu_slices;

static const struct bench *const benches[] = {
	&bench_pipe_sweep,
	&bench_token_ring,
	&bench_pipe_throughput,
	&bench_pipe_context,
	&bench_fastpipe,
	&bench_mq_latency,
	&bench_messaging,
	&bench_splice_chain,
	&bench_vcpu_slices,
};

#define NR_BENCHES (sizeof(benches) / sizeof(benches[0]))

/* Without --timeout the watchdog still guards against a hang. */
#define DEFAULT_TIMEOUT_S	600.0

/* ---- common options ------------------------------------------------------ */

#define CO(field) offsetof(struct common_opts, field)

static const char *const counter_sources[] = { "perf", "rusage", NULL };

static const struct opt common_table[] = {
	{ "duration", OPT_DOUBLE, CO(duration), "seconds of measurement per sample", 0.001, 86400 },
	{ "count", OPT_INT, CO(count), "operations per sample instead of a duration", 1, 1e15 },
	{ "samples", OPT_INT, CO(samples), "measured samples to emit (default 1)", 1, 100000 },
	{ "warmup", OPT_INT, CO(warmup), "extra samples first, marked \"warmup\" (default 0)", 0, 100000 },
	{ "cpus", OPT_STRING, 0, "A,B: pin the first side to CPU A, the second to B", 0, 0 },
	{ "timeout", OPT_DOUBLE, CO(timeout), "watchdog: kill everything after S seconds (default 600)", 0.001, 1e7 },
	{ "json", OPT_FLAG, CO(json), "one JSON object per line (default: text)", 0, 0 },
	{ "seed", OPT_INT, CO(seed), "seed for random choices (default 1)", 0, 9.2e18 },
	{ "counters", OPT_CHOICE, CO(counters),
	  "scheduler counters from inherited perf software events (which cost every context "
	  "switch a little) plus getrusage, or from getrusage alone (no migrations); the "
	  "default is the workload's", 0, 0, counter_sources },
	OPT_END
};

static void print_opts(const struct opt *o)
{
	static const char *const metavar[] = {
		[OPT_FLAG] = "", [OPT_INT] = " N", [OPT_SIZE] = " BYTES",
		[OPT_DOUBLE] = " X", [OPT_CHOICE] = " CHOICE", [OPT_STRING] = " S",
	};

	for (; o->name; o++) {
		char left[64];

		snprintf(left, sizeof(left), "--%s%s", o->name,
			 !strcmp(o->name, "cpus") ? " A,B" : metavar[o->type]);
		printf("  %-22s %s", left, o->help);
		if (o->type == OPT_CHOICE) {
			const char *const *c;

			printf(" (");
			for (c = o->choices; *c; c++)
				printf("%s%s", c == o->choices ? "" : "|", *c);
			printf(")");
		}
		printf("\n");
	}
}

static void print_usage(void)
{
	unsigned int i;

	printf("usage: ipcbench WORKLOAD [options]    (ipcbench WORKLOAD --help for its options)\n"
	       "       ipcbench list [--json]\n\n"
	       "Runs one Linux IPC experiment and prints one result per sample.\n"
	       "Exit: 0 ok, 1 failed, 2 usage error, 77 skipped (missing kernel feature).\n\n"
	       "workloads:\n");
	for (i = 0; i < NR_BENCHES; i++)
		printf("  %-16s %s\n", benches[i]->name, benches[i]->summary);
	printf("\ncommon options:\n");
	print_opts(common_table);
}

static const char *default_counters(const struct bench *b)
{
	return b->perf_counters ? "perf" : "rusage";
}

static void print_workload_help(const struct bench *b)
{
	printf("usage: ipcbench %s [options]\n\n%s\n\n%s options:\n", b->name, b->summary, b->name);
	print_opts(b->opts);
	printf("\ncommon options:\n");
	print_opts(common_table);
	printf("\n%s counts with --counters %s by default.\n", b->name, default_counters(b));
}

/* ---- value parsing --------------------------------------------------------- */

static int parse_size(const char *s, long long *out)
{
	char *end;
	double v;
	double mult = 1;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v))
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mult = 1024.0; end++; break;
	case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
	case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
	}
	if (*end == 'i' && mult > 1)
		end++;
	if ((*end == 'B' || *end == 'b') && end[1] == '\0')
		end++;
	if (*end)
		return -EINVAL;
	v *= mult;
	if (v != floor(v) || v > 9.2e18 || v < -9.2e18)
		return -EINVAL;
	*out = (long long)v;
	return 0;
}

static int parse_int(const char *s, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	if (end == s || *end || errno)
		return -EINVAL;
	return 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(*out))
		return -EINVAL;
	return 0;
}

static int parse_cpus(const char *s, struct common_opts *c)
{
	long nproc = sysconf(_SC_NPROCESSORS_CONF);
	char *end;
	long a, b;

	errno = 0;
	a = strtol(s, &end, 10);
	if (end == s || errno)
		return usage_error("--cpus '%s': expected A or A,B (CPU numbers)", s);
	b = a;
	if (*end == ',') {
		const char *second = end + 1;

		b = strtol(second, &end, 10);
		if (end == second || errno)
			return usage_error("--cpus '%s': expected A or A,B (CPU numbers)", s);
	}
	if (*end)
		return usage_error("--cpus '%s': expected A or A,B (CPU numbers)", s);
	if (a < 0 || b < 0)
		return usage_error("--cpus '%s': CPU numbers start at 0", s);
	/*
	 * A CPU this machine does not have is not a mistake in the command:
	 * a suite that pins to CPUs 0 and 1 also runs on one-CPU guests, and
	 * there the cell is skipped, with the reason, rather than failed.
	 */
	if (a >= nproc || b >= nproc) {
		skip_reason("--cpus '%s': this machine has CPUs 0..%ld only", s, nproc - 1);
		return -ENODEV;
	}
	c->cpus[0] = a;
	c->cpus[1] = b;
	return 0;
}

/* Apply one option to its struct; returns 0 or -EINVAL after printing why. */
static int apply_opt(const struct opt *o, void *base, const char *value)
{
	char *field = (char *)base + o->offset;
	long long ll;
	double d;

	switch (o->type) {
	case OPT_FLAG:
		*(bool *)field = true;
		return 0;
	case OPT_INT:
	case OPT_SIZE:
		if ((o->type == OPT_INT ? parse_int(value, &ll) : parse_size(value, &ll)) < 0)
			return usage_error("--%s '%s': not %s", o->name, value,
					   o->type == OPT_INT ? "an integer" :
					   "a size (bytes, or with K/M/G)");
		if ((double)ll < o->min || (double)ll > o->max)
			return usage_error("--%s %s: must be between %.15g and %.15g",
					   o->name, value, o->min, o->max);
		*(long long *)field = ll;
		return 0;
	case OPT_DOUBLE:
		if (parse_double(value, &d) < 0)
			return usage_error("--%s '%s': not a number", o->name, value);
		if (d < o->min || d > o->max)
			return usage_error("--%s %s: must be between %.15g and %.15g",
					   o->name, value, o->min, o->max);
		*(double *)field = d;
		return 0;
	case OPT_CHOICE: {
		const char *const *c;

		for (c = o->choices; *c; c++) {
			if (!strcmp(*c, value)) {
				*(const char **)field = *c;
				return 0;
			}
		}
		return usage_error("--%s '%s': not one of the choices (see --help)",
				   o->name, value);
	}
	case OPT_STRING:
		*(const char **)field = value;
		return 0;
	}
	return -EINVAL;
}

static const struct opt *find_opt(const struct opt *table, const char *name, size_t len)
{
	for (; table->name; table++)
		if (strlen(table->name) == len && !strncmp(table->name, name, len))
			return table;
	return NULL;
}

/*
 * Parse argv[first..] into @c and @wopts.  Accepts --name value and
 * --name=value.  Returns 0, 1 for --help, or -EINVAL.
 */
static int parse_args(int argc, char **argv, int first, const struct bench *b,
		      struct common_opts *c, void *wopts)
{
	struct { long long samples, warmup, count, seed; } ints = { 1, 0, 0, 1 };
	int i;

	for (i = first; i < argc; i++) {
		const char *arg = argv[i], *name, *value = NULL, *eq;
		const struct opt *o;
		void *base;
		size_t len;
		int ret;

		if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
			return 1;
		if (strncmp(arg, "--", 2) || !arg[2])
			return usage_error("unexpected argument '%s' (options start with --)", arg);
		name = arg + 2;
		eq = strchr(name, '=');
		len = eq ? (size_t)(eq - name) : strlen(name);
		base = c;
		o = find_opt(common_table, name, len);
		if (!o) {
			base = wopts;
			o = find_opt(b->opts, name, len);
		}
		if (!o)
			return usage_error("unknown option '--%.*s' (see ipcbench %s --help)",
					   (int)len, name, b->name);
		if (o->type == OPT_FLAG) {
			if (eq)
				return usage_error("--%s takes no value", o->name);
		} else if (eq) {
			value = eq + 1;
		} else if (i + 1 < argc) {
			value = argv[++i];
		} else {
			return usage_error("--%s needs a value", o->name);
		}
		/* the common integers are not long long in struct common_opts */
		if (base == c && o->type == OPT_INT) {
			struct opt tmp = *o;
			long long *dst = !strcmp(o->name, "samples") ? &ints.samples :
					 !strcmp(o->name, "warmup") ? &ints.warmup :
					 !strcmp(o->name, "count") ? &ints.count : &ints.seed;

			tmp.offset = 0;
			ret = apply_opt(&tmp, dst, value);
			if (!strcmp(o->name, "count"))
				c->count_set = true;
		} else if (base == c && !strcmp(o->name, "cpus")) {
			ret = parse_cpus(value, c);
		} else {
			ret = apply_opt(o, base, value);
			if (base == c && !strcmp(o->name, "duration"))
				c->duration_set = true;
		}
		if (ret < 0)
			return ret;
	}
	c->samples = ints.samples;
	c->warmup = ints.warmup;
	c->count = ints.count;
	c->seed = ints.seed;
	return 0;
}

/* ---- signals and the watchdog ------------------------------------------------ */

static void say(const char *msg)
{
	ssize_t r = write(STDERR_FILENO, msg, strlen(msg));

	(void)r;
}

static void on_signal(int sig)
{
	if (!is_engine_process())
		_exit(128 + sig);
	if (sig == SIGALRM)
		say("ipcbench: error: watchdog: --timeout expired; killing every child\n");
	else
		say("ipcbench: interrupted; killing every child\n");
	engine_cleanup();
	_exit(sig == SIGALRM ? EXIT_FAIL : 128 + sig);
}

static void arm_watchdog(double seconds)
{
	struct itimerval it = { 0 };

	it.it_value.tv_sec = (time_t)seconds;
	it.it_value.tv_usec = (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6);
	if (!it.it_value.tv_sec && !it.it_value.tv_usec)
		it.it_value.tv_usec = 1;
	setitimer(ITIMER_REAL, &it, NULL);
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigfillset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* a closed pipe must show up as EPIPE in the workload, not kill the engine */
	signal(SIGPIPE, SIG_IGN);
}

/* ---- ipcbench list -------------------------------------------------------------- */

/*
 * One line of JSON, so that a front end takes workload names, default
 * counters and grids from the engine it runs rather than from its own copy.
 */
static int print_list_json(void)
{
	struct strbuf sb = { 0 };
	unsigned int i;
	int ret = EXIT_OK;

	sb_reset(&sb);
	sb_printf(&sb, "{\"schema\":\"%s\",\"version\":\"%s\",\"workloads\":[",
		  IPCBENCH_LIST_SCHEMA, IPCBENCH_VERSION);
	for (i = 0; i < NR_BENCHES; i++) {
		const struct bench *b = benches[i];

		sb_printf(&sb, "%s{\"name\":", i ? "," : "");
		sb_json_str(&sb, b->name);
		sb_printf(&sb, ",\"summary\":");
		sb_json_str(&sb, b->summary);
		sb_printf(&sb, ",\"counters\":\"%s\"", default_counters(b));
		if (b->describe) {
			sb_printf(&sb, ",");
			b->describe(&sb);
		}
		sb_printf(&sb, "}");
	}
	sb_printf(&sb, "]}\n");
	/* a consumer must not mistake a truncated object for the registry */
	if (fputs(sb.s, stdout) == EOF || fflush(stdout) == EOF) {
		fail_reason("writing the list: %s", strerror(errno));
		ret = EXIT_FAIL;
	}
	free(sb.s);
	return ret;
}

static int cmd_list(int argc, char **argv)
{
	bool json = false;
	int i;

	msg_set_workload("list");
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: ipcbench list [--json]\n\n"
			       "The workloads, one per line; with --json one JSON object "
			       "(\"schema\": \"%s\") giving each workload's default "
			       "--counters and, where it has them, its --sweep grid or "
			       "--ladder rungs.\n", IPCBENCH_LIST_SCHEMA);
			return EXIT_OK;
		} else {
			usage_error("unexpected argument '%s' (ipcbench list takes only --json)",
				    argv[i]);
			return EXIT_USAGE;
		}
	}
	if (json)
		return print_list_json();
	for (i = 0; i < (int)NR_BENCHES; i++)
		printf("%-16s %s\n", benches[i]->name, benches[i]->summary);
	return EXIT_OK;
}

/* ---- main ------------------------------------------------------------------------ */

static const struct bench *find_bench(const char *name)
{
	unsigned int i;

	for (i = 0; i < NR_BENCHES; i++)
		if (!strcmp(benches[i]->name, name))
			return benches[i];
	return NULL;
}

static void exit_cleanup(void)
{
	engine_cleanup();
}

int main(int argc, char **argv)
{
	struct common_opts c = { .cpus = { -1, -1 }, .timeout = DEFAULT_TIMEOUT_S };
	const struct bench *b;
	struct env_info env;
	struct report *r;
	void *wopts;
	int i, ret = EXIT_OK;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		print_usage();
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("ipcbench %s (%s)\n", IPCBENCH_VERSION, IPCBENCH_SCHEMA);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "list"))
		return cmd_list(argc, argv);
	b = find_bench(argv[1]);
	if (!b) {
		fprintf(stderr, "ipcbench: unknown workload '%s' (ipcbench list shows them)\n",
			argv[1]);
		return EXIT_USAGE;
	}
	msg_set_workload(b->name);

	wopts = calloc(1, b->opts_size ? b->opts_size : 1);
	if (!wopts)
		return EXIT_FAIL;
	if (b->defaults)
		memcpy(wopts, b->defaults, b->opts_size);
	ret = parse_args(argc, argv, 2, b, &c, wopts);
	if (ret == 1) {
		print_workload_help(b);
		return EXIT_OK;
	}
	if (ret == -ENODEV)
		return EXIT_SKIP;
	if (ret < 0)
		return EXIT_USAGE;
	if (b->validate && b->validate(&c, wopts) < 0)
		return EXIT_USAGE;

	counters_use_perf(c.counters ? !strcmp(c.counters, "perf") : b->perf_counters);
	proc_init();
	install_signals();
	atexit(exit_cleanup);
	arm_watchdog(c.timeout);

	env_probe(&env);
	r = report_new(b->name, c.json, &env);
	for (i = 0; i < c.warmup + c.samples; i++) {
		bool warmup = i < c.warmup;

		report_begin_sample(r, warmup ? i : i - c.warmup, warmup);
		ret = b->run(&c, wopts, r);
		/* whatever the workload leaves running is a bug; never let it leak */
		kill_children();
		if (ret != EXIT_OK)
			break;
	}
	return ret;
}
