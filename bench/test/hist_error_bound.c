// SPDX-License-Identifier: MIT
/*
 * hist_error_bound: the latency histogram reports every value from 100 ns
 * to 10 s within 1% of the truth, and its quantiles match exact ones on
 * known inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ipcbench.h"

static int failures;

static void check(bool ok, const char *what, double got, double want)
{
	if (!ok) {
		printf("FAIL %s: got %.0f want %.0f\n", what, got, want);
		failures++;
	}
}

static double rel_err(double got, double want)
{
	return fabs(got - want) / want;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(void)
{
	static struct hist h;
	static uint64_t vals[100000];
	const double qs[] = { 0.5, 0.9, 0.99, 0.999 };
	uint64_t state = 42, v;
	unsigned int i, q;

	/* buckets tile the line with no gap or overlap */
	for (i = 0; i + 1 < HIST_BUCKETS; i++) {
		check(hist_upper(i) == hist_lower(i + 1), "contiguous", hist_upper(i), hist_lower(i + 1));
		check(hist_index(hist_lower(i)) == i, "index(lower)", hist_index(hist_lower(i)), i);
		check(hist_index(hist_upper(i) - 1) == i, "index(upper-1)", hist_index(hist_upper(i) - 1), i);
	}

	/* a single value anywhere from 100 ns to 10 s: every quantile within 1% */
	for (v = 100; v <= 10000000000ull; v = v * 1.013 + 1) {
		/* far neighbours on both sides, so clamping to min/max cannot help */
		hist_init(&h);
		hist_add(&h, v / 10);
		hist_add(&h, v);
		hist_add(&h, v * 10);
		check(rel_err(hist_quantile(&h, 0.5), v) <= 0.01, "single value p50", hist_quantile(&h, 0.5), v);
		check(h.max == v * 10 && h.min == v / 10, "extremes exact", h.max, v * 10);
	}

	/* log-uniform random values from 100 ns to 10 s against exact nearest-rank quantiles */
	hist_init(&h);
	for (i = 0; i < 100000; i++) {
		double u = (rng_next(&state) >> 11) / 9007199254740992.0;

		vals[i] = (uint64_t)(100.0 * pow(1e8, u));
		hist_add(&h, vals[i]);
	}
	qsort(vals, 100000, sizeof(vals[0]), cmp_u64);
	for (q = 0; q < sizeof(qs) / sizeof(qs[0]); q++) {
		uint64_t exact = vals[(size_t)ceil(qs[q] * 100000) - 1];

		check(rel_err(hist_quantile(&h, qs[q]), exact) <= 0.01, "random quantile",
		      hist_quantile(&h, qs[q]), exact);
	}
	check(h.count == 100000, "count", h.count, 100000);
	check(h.min == vals[0] && h.max == vals[99999], "extremes", h.max, vals[99999]);

	/* merging two halves equals adding everything to one */
	{
		static struct hist a, b;

		hist_init(&a);
		hist_init(&b);
		for (i = 0; i < 100000; i++)
			hist_add(i % 2 ? &a : &b, vals[i]);
		hist_merge(&a, &b);
		for (q = 0; q < sizeof(qs) / sizeof(qs[0]); q++)
			check(hist_quantile(&a, qs[q]) == hist_quantile(&h, qs[q]), "merge",
			      hist_quantile(&a, qs[q]), hist_quantile(&h, qs[q]));
		check(fabs(hist_mean(&a) - hist_mean(&h)) < 1e-6 * hist_mean(&h), "merged mean",
		      hist_mean(&a), hist_mean(&h));
	}

	if (failures)
		printf("%d checks failed\n", failures);
	return failures ? EXIT_FAIL : EXIT_OK;
}
