/* SPDX-License-Identifier: MIT */
/*
 * cachesim.h: one set-associative cache level of the plugin's cost model.
 *
 * 64-byte lines (the caller passes line numbers), a power-of-two number of sets indexed by
 * the low bits of the line number, true LRU replacement within a set, allocate on every
 * miss, reads and writes alike (no dirty state, no write-back traffic). The model is
 * deterministic: the same stream of line numbers gives the same hits and misses.
 */
#ifndef IPCLAB_CACHESIM_H
#define IPCLAB_CACHESIM_H

#include <stdint.h>
#include <stdlib.h>

struct cache {
	uint64_t sets;		/* a power of two */
	unsigned int ways;
	uint64_t *tag;		/* sets * ways: line number + 1, 0 for an empty way */
	uint64_t *used;		/* sets * ways: when the way was last touched */
	uint64_t clock;
};

/* 0, or -1 when the geometry is not size = sets * ways * 64 with sets a power of two. */
static inline int cache_init(struct cache *c, uint64_t size, unsigned int ways)
{
	uint64_t sets;

	if (!ways || size % (64ULL * ways))
		return -1;
	sets = size / (64ULL * ways);
	if (!sets || (sets & (sets - 1)))
		return -1;
	c->sets = sets;
	c->ways = ways;
	c->clock = 0;
	c->tag = calloc(sets * ways, sizeof(*c->tag));
	c->used = calloc(sets * ways, sizeof(*c->used));
	return c->tag && c->used ? 0 : -1;
}

/* Touch a line: 1 on a hit, 0 on a miss (the line is then filled, over the LRU way). */
static inline int cache_access(struct cache *c, uint64_t line)
{
	uint64_t base = (line & (c->sets - 1)) * c->ways, oldest = UINT64_MAX;
	unsigned int w, victim = 0;

	c->clock++;
	for (w = 0; w < c->ways; w++) {
		uint64_t i = base + w;

		if (c->tag[i] == line + 1) {
			c->used[i] = c->clock;
			return 1;
		}
		/* an empty way has used == 0, older than any touched one */
		if (c->used[i] < oldest) {
			oldest = c->used[i];
			victim = w;
		}
	}
	c->tag[base + victim] = line + 1;
	c->used[base + victim] = c->clock;
	return 0;
}

/* Drop a line if present (another CPU wrote it). */
static inline void cache_invalidate(struct cache *c, uint64_t line)
{
	uint64_t base = (line & (c->sets - 1)) * c->ways;
	unsigned int w;

	for (w = 0; w < c->ways; w++) {
		if (c->tag[base + w] == line + 1) {
			c->tag[base + w] = 0;
			c->used[base + w] = 0;
		}
	}
}

#endif
