// SPDX-License-Identifier: MIT
/*
 * hist.c: log-linear latency histogram.
 *
 * Values below HIST_SUB ns get one bucket each.  Above that, every octave
 * [2^k, 2^(k+1)) is split into HIST_SUB equal buckets, so a bucket is never
 * wider than 1/HIST_SUB of its lower bound and its midpoint is within
 * 1/(2*HIST_SUB) of any value in it.  Recording is a shift and an add, cheap
 * enough to time every write().
 */
#include <stdlib.h>
#include <string.h>

#include "ipcbench.h"

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

static unsigned int top_bit(uint64_t v)
{
	return 63 - __builtin_clzll(v);
}

unsigned int hist_index(uint64_t ns)
{
	unsigned int k, idx;

	if (ns < HIST_SUB)
		return ns;
	k = top_bit(ns);
	idx = (k - HIST_SUB_BITS + 1) * HIST_SUB +
	      (unsigned int)((ns >> (k - HIST_SUB_BITS)) - HIST_SUB);
	return idx < HIST_BUCKETS ? idx : HIST_BUCKETS - 1;
}

uint64_t hist_lower(unsigned int idx)
{
	unsigned int k, sub;

	if (idx < HIST_SUB)
		return idx;
	k = idx / HIST_SUB + HIST_SUB_BITS - 1;
	sub = idx % HIST_SUB;
	return (uint64_t)(HIST_SUB + sub) << (k - HIST_SUB_BITS);
}

uint64_t hist_upper(unsigned int idx)
{
	unsigned int k;

	if (idx < HIST_SUB)
		return idx + 1;
	k = idx / HIST_SUB + HIST_SUB_BITS - 1;
	return hist_lower(idx) + (1ull << (k - HIST_SUB_BITS));
}

void hist_add(struct hist *h, uint64_t ns)
{
	h->bucket[hist_index(ns)]++;
	h->count++;
	h->sum += ns;
	if (ns > h->max)
		h->max = ns;
	if (ns < h->min)
		h->min = ns;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned int i;

	if (!src->count)
		return;
	for (i = 0; i < HIST_BUCKETS; i++)
		dst->bucket[i] += src->bucket[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->max > dst->max)
		dst->max = src->max;
	if (src->min < dst->min)
		dst->min = src->min;
}

double hist_mean(const struct hist *h)
{
	return h->count ? (double)(h->sum / h->count) : 0.0;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
	uint64_t rank, seen = 0, mid;
	unsigned int i;

	if (!h->count)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	/* nearest-rank definition: the smallest value with >= q of the mass */
	rank = (uint64_t)(q * (double)h->count);
	if ((double)rank < q * (double)h->count)
		rank++;
	if (!rank)
		rank = 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank)
			break;
	}
	if (i == HIST_BUCKETS)
		return h->max;
	mid = hist_lower(i) + (hist_upper(i) - 1 - hist_lower(i)) / 2;
	/* the extremes are known exactly; never report past them */
	if (mid > h->max)
		mid = h->max;
	if (mid < h->min)
		mid = h->min;
	return mid;
}

double hist_timing_cost_ns(unsigned int n)
{
	struct hist *h = malloc(sizeof(*h));
	uint64_t start, t0;
	unsigned int i;

	if (!h || !n) {
		free(h);
		return 0;
	}
	hist_init(h);
	/* the same statements a timed write executes, minus the write */
	start = now_ns();
	for (i = 0; i < n; i++) {
		t0 = now_ns();
		hist_add(h, now_ns() - t0);
	}
	t0 = now_ns();
	free(h);
	return (double)(t0 - start) / n;
}
