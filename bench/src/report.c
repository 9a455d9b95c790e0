// SPDX-License-Identifier: MIT
/*
 * report.c: one result object per sample, as a JSON line (the contract in
 * bench/README.md) or as a small text table for people.
 *
 * Workloads add params, metrics, latency, counters and notes in any order;
 * report_emit() prints them and clears the object for the next cell, so a
 * --sweep or --ladder simply emits once per cell.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "strbuf.h"

struct report {
	const char *workload;
	bool json;
	const struct env_info *env;
	int sample;
	bool warmup;
	int emitted;
	struct timespec start;
	uint64_t start_mono;
	/* JSON fragments (comma lists without braces) */
	struct strbuf params, metrics, latency, counters, notes, sides;
	/* text rendering, built alongside */
	struct strbuf tparams, tbody;
	bool have_counters;
};

struct report *report_new(const char *workload, bool json, const struct env_info *env)
{
	struct report *r = calloc(1, sizeof(*r));

	if (!r) {
		fputs("ipcbench: error: out of memory\n", stderr);
		exit(EXIT_FAIL);
	}
	r->workload = workload;
	r->json = json;
	r->env = env;
	return r;
}

static void report_clear(struct report *r)
{
	sb_reset(&r->params);
	sb_reset(&r->metrics);
	sb_reset(&r->latency);
	sb_reset(&r->counters);
	sb_reset(&r->notes);
	sb_reset(&r->sides);
	sb_reset(&r->tparams);
	sb_reset(&r->tbody);
	r->have_counters = false;
	clock_gettime(CLOCK_REALTIME, &r->start);
	r->start_mono = now_ns();
}

void report_begin_sample(struct report *r, int index, bool warmup)
{
	r->sample = index;
	r->warmup = warmup;
	report_clear(r);
}

int report_emitted(const struct report *r)
{
	return r->emitted;
}

static void key(struct strbuf *sb, const char *k)
{
	sb_sep(sb);
	sb_json_str(sb, k);
	sb_printf(sb, ": ");
}

void report_param_int(struct report *r, const char *k, long long v)
{
	key(&r->params, k);
	sb_printf(&r->params, "%lld", v);
	sb_printf(&r->tparams, " %s=%lld", k, v);
}

void report_param_str(struct report *r, const char *k, const char *v)
{
	key(&r->params, k);
	sb_json_str(&r->params, v);
	sb_printf(&r->tparams, " %s=%s", k, v);
}

void report_param_bool(struct report *r, const char *k, bool v)
{
	key(&r->params, k);
	sb_printf(&r->params, v ? "true" : "false");
	sb_printf(&r->tparams, " %s=%s", k, v ? "yes" : "no");
}

void report_param_cpus(struct report *r, const struct common_opts *c)
{
	char cpus[32];

	if (c->cpus[0] < 0) {
		report_param_str(r, "cpus", "unpinned");
		return;
	}
	snprintf(cpus, sizeof(cpus), "%d,%d", c->cpus[0], c->cpus[1]);
	report_param_str(r, "cpus", cpus);
}

static const char *better_name(enum better b)
{
	switch (b) {
	case LOWER_IS_BETTER:
		return "lower";
	case HIGHER_IS_BETTER:
		return "higher";
	default:
		return "none";
	}
}

void report_metric(struct report *r, const char *k, double v, const char *unit,
		   enum better better)
{
	key(&r->metrics, k);
	sb_printf(&r->metrics, "{\"value\": ");
	sb_json_num(&r->metrics, v);
	sb_printf(&r->metrics, ", \"unit\": ");
	sb_json_str(&r->metrics, unit);
	sb_printf(&r->metrics, ", \"better\": \"%s\"}", better_name(better));
	sb_printf(&r->tbody, "  %-22s %14.6g %s\n", k, v, unit);
}

static const struct {
	const char *name;
	double q;
} quantiles[] = {
	{ "p50", 0.50 }, { "p90", 0.90 }, { "p99", 0.99 }, { "p99.9", 0.999 },
};

void report_latency(struct report *r, const char *k, const struct hist *h)
{
	struct strbuf *sb = &r->latency;
	unsigned int i;
	bool first = true;

	key(sb, k);
	sb_printf(sb, "{\"unit\": \"ns\", \"count\": %llu, \"mean\": ",
		  (unsigned long long)h->count);
	sb_json_num(sb, hist_mean(h));
	sb_printf(sb, ", \"min\": %llu", (unsigned long long)(h->count ? h->min : 0));
	for (i = 0; i < sizeof(quantiles) / sizeof(quantiles[0]); i++)
		sb_printf(sb, ", \"%s\": %llu", quantiles[i].name,
			  (unsigned long long)hist_quantile(h, quantiles[i].q));
	sb_printf(sb, ", \"max\": %llu, \"buckets\": [", (unsigned long long)h->max);
	for (i = 0; i < HIST_BUCKETS; i++) {
		if (!h->bucket[i])
			continue;
		sb_printf(sb, "%s[%llu, %llu, %llu]", first ? "" : ", ",
			  (unsigned long long)hist_lower(i),
			  (unsigned long long)hist_upper(i),
			  (unsigned long long)h->bucket[i]);
		first = false;
	}
	sb_printf(sb, "]}");

	sb_printf(&r->tbody, "  latency %-14s n=%llu mean=%.0f p50=%llu p90=%llu p99=%llu p99.9=%llu max=%llu ns\n",
		  k, (unsigned long long)h->count, hist_mean(h),
		  (unsigned long long)hist_quantile(h, 0.50),
		  (unsigned long long)hist_quantile(h, 0.90),
		  (unsigned long long)hist_quantile(h, 0.99),
		  (unsigned long long)hist_quantile(h, 0.999),
		  (unsigned long long)h->max);
}

void report_counters(struct report *r, const struct counters *c)
{
	struct strbuf *sb = &r->counters;

	sb_reset(sb);
	r->have_counters = true;
	sb_printf(sb, "\"source\": \"%s\", \"context_switches\": %llu, ",
		  c->perf ? "perf+rusage" : "rusage",
		  (unsigned long long)c->context_switches);
	if (c->perf)
		sb_printf(sb, "\"cpu_migrations\": %llu, ",
			  (unsigned long long)c->cpu_migrations);
	sb_printf(sb, "\"task_clock_ns\": %llu, \"page_faults\": %llu, "
		  "\"voluntary_cs\": %llu, \"involuntary_cs\": %llu, "
		  "\"minor_faults\": %llu, \"major_faults\": %llu, "
		  "\"user_s\": %.6f, \"sys_s\": %.6f",
		  (unsigned long long)c->task_clock_ns,
		  (unsigned long long)c->page_faults,
		  (unsigned long long)c->voluntary_cs,
		  (unsigned long long)c->involuntary_cs,
		  (unsigned long long)c->minor_faults,
		  (unsigned long long)c->major_faults, c->user_s, c->sys_s);
	if (c->window > 0)
		sb_printf(sb, ", \"window\": %ld", c->window);
	sb_printf(&r->tbody, "  counters (%s): cs=%llu (vol %llu, invol %llu) migrations=%s%llu task-clock=%.1f ms\n",
		  c->perf ? "perf" : "rusage",
		  (unsigned long long)c->context_switches,
		  (unsigned long long)c->voluntary_cs,
		  (unsigned long long)c->involuntary_cs,
		  c->perf ? "" : "n/a ", (unsigned long long)(c->perf ? c->cpu_migrations : 0),
		  c->task_clock_ns / 1e6);
	if (c->perf_denied)
		report_note(r, "counters", "perf_event_open refused (perf_event_paranoid?): "
			    "rusage only, no cpu_migrations");
}

void report_note(struct report *r, const char *k, const char *fmt, ...)
{
	char *buf;
	va_list ap;
	int n;

	/* notes have no length limit: a per-copy list of 1024 rates is one */
	va_start(ap, fmt);
	n = vasprintf(&buf, fmt, ap);
	va_end(ap);
	if (n < 0) {
		fputs("ipcbench: error: out of memory\n", stderr);
		abort();
	}
	key(&r->notes, k);
	sb_json_str(&r->notes, buf);
	sb_printf(&r->tbody, "  note %s: %s\n", k, buf);
	free(buf);
}

static void json_ll_or_null(struct strbuf *sb, long long v)
{
	if (v < 0)
		sb_printf(sb, "null");
	else
		sb_printf(sb, "%lld", v);
}

void report_sides(struct report *r, const char *const *roles, int per_copy,
		  const struct place *p, int n)
{
	struct strbuf *sb = &r->sides;
	int i;

	if (!p)
		return;
	sb_printf(&r->tbody, "  sides (cpu start->end, migrations):");
	for (i = 0; i < n; i++) {
		const char *role = roles ? roles[i % per_copy] : "copy";
		int copy = roles ? i / per_copy : i;

		sb_sep(sb);
		sb_printf(sb, "{\"role\": ");
		sb_json_str(sb, role);
		sb_printf(sb, ", \"copy\": %d, \"cpu_start\": ", copy);
		json_ll_or_null(sb, p[i].cpu_start);
		sb_printf(sb, ", \"cpu_end\": ");
		json_ll_or_null(sb, p[i].cpu_end);
		sb_printf(sb, ", \"migrations\": ");
		json_ll_or_null(sb, p[i].migrations);
		sb_printf(sb, "}");
		sb_printf(&r->tbody, " %s#%d %d->%d (%lld)", role, copy, p[i].cpu_start,
			  p[i].cpu_end, p[i].migrations);
	}
	sb_printf(&r->tbody, "\n");
}

static void iso_time(const struct timespec *ts, char *buf, size_t len)
{
	struct tm tm;
	size_t n;

	gmtime_r(&ts->tv_sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03ldZ", ts->tv_nsec / 1000000);
}

void report_emit(struct report *r)
{
	struct timespec end;
	char t0[40], t1[40];
	struct strbuf out = { 0 };
	double elapsed = (now_ns() - r->start_mono) / 1e9;

	clock_gettime(CLOCK_REALTIME, &end);
	iso_time(&r->start, t0, sizeof(t0));
	iso_time(&end, t1, sizeof(t1));
	sb_reset(&out);
	if (r->json) {
		sb_printf(&out, "{\"schema\": \"%s\", \"engine_version\": \"%s\", \"workload\": ",
			  IPCBENCH_SCHEMA, IPCBENCH_VERSION);
		sb_json_str(&out, r->workload);
		sb_printf(&out, ", \"warmup\": %s, \"sample\": %d, \"params\": {%s}, "
			  "\"metrics\": {%s}, \"latency\": {%s}, \"counters\": {%s}, "
			  "\"notes\": {%s}, ",
			  r->warmup ? "true" : "false", r->sample,
			  r->params.s, r->metrics.s, r->latency.s, r->counters.s,
			  r->notes.s);
		/* only where the workload records its sides */
		if (r->sides.len)
			sb_printf(&out, "\"sides\": [%s], ", r->sides.s);
		sb_printf(&out, "\"env\": ");
		env_json(r->env, &out);
		sb_printf(&out, ", \"start\": \"%s\", \"end\": \"%s\", \"elapsed_s\": %.6f}\n",
			  t0, t1, elapsed);
	} else {
		sb_printf(&out, "%s%s sample %d:%s\n%s", r->workload,
			  r->warmup ? " (warmup)" : "", r->sample, r->tparams.s,
			  r->tbody.s);
	}
	fputs(out.s, stdout);
	/* a consumer reading a pipe gets every finished sample, even if we die next */
	fflush(stdout);
	free(out.s);
	r->emitted++;
	report_clear(r);
}
