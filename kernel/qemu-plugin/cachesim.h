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

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * Touch a line: 1 on a hit, 0 on a miss (the line is then filled, over the LRU way). *slot,
 * when given, is where the line now is, for cache_touch_slot().
 */
static inline int cache_access_at(struct cache *c, uint64_t line, uint64_t *slot)
{
	uint64_t base = (line & (c->sets - 1)) * c->ways, oldest = UINT64_MAX;
	unsigned int w, victim = 0;

	c->clock++;
	for (w = 0; w < c->ways; w++) {
		uint64_t i = base + w;

		if (c->tag[i] == line + 1) {
			c->used[i] = c->clock;
			if (slot)
				*slot = i;
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
	if (slot)
		*slot = base + victim;
	return 0;
}

static inline int cache_access(struct cache *c, uint64_t line)
{
	return cache_access_at(c, line, NULL);
}

/*
 * A hit on `line` where cache_access_at() last put it, if it is still there: the same as
 * cache_access() on a hit, without the search. 0 (and nothing changed) when it is not.
 */
static inline int cache_touch_slot(struct cache *c, uint64_t slot, uint64_t line)
{
	if (c->tag[slot] != line + 1)
		return 0;
	c->used[slot] = ++c->clock;
	return 1;
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

/*
 * The two lines one CPU touched last: most accesses fall in one of them (a stack frame,
 * both sides of a rep movs), and then the caller needs neither the line's physical address
 * (it keeps the pairing of virtual and physical line) nor the search of its set. A hit
 * through the memo changes the cache exactly as cache_access() would.
 */
struct line_memo {
	uint64_t vline[2], pline[2], slot[2];
	bool valid[2];
	unsigned int older;
};

/* 1 and *pline when vline is one of the two and still in cache c (a hit, made); else 0. */
static inline int memo_hit(struct line_memo *m, struct cache *c, uint64_t vline,
			   uint64_t *pline)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (m->valid[i] && m->vline[i] == vline &&
		    cache_touch_slot(c, m->slot[i], m->pline[i])) {
			m->older = !i;
			*pline = m->pline[i];
			return 1;
		}
	}
	return 0;
}

/* After cache_access_at(c, pline, &slot) for virtual line vline. */
static inline void memo_put(struct line_memo *m, uint64_t vline, uint64_t pline,
			    uint64_t slot)
{
	unsigned int i = m->valid[0] && m->vline[0] == vline ? 0 :
			 m->valid[1] && m->vline[1] == vline ? 1 : m->older;

	m->vline[i] = vline;
	m->pline[i] = pline;
	m->slot[i] = slot;
	m->valid[i] = true;
	m->older = !i;
}

static inline void memo_forget(struct line_memo *m)
{
	memset(m, 0, sizeof(*m));
}

#endif
