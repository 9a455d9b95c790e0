// SPDX-License-Identifier: MIT
/*
 * cost-probe.c: what the events the plugin counts cost on this machine's CPU, in user space,
 * for the weights of the lab's cost model (scripts/cost-calibrate runs it and writes
 * ipclab/reference/cost-model.json).
 *
 * Every figure is nanoseconds per operation from the thread's CPU clock (the task clock perf
 * counts, CLOCK_THREAD_CPUTIME_ID: time the probe was not running is left out, which on a
 * shared machine matters) over a loop long enough (milliseconds) that the clock's own cost
 * vanishes, pinned to one CPU. Each round
 * measures every loop once, in a fixed order; the rounds are printed one JSON line each and
 * the caller takes medians. The loops:
 *
 *   add_chain    dependent register adds: one cycle each on any current x86 core, the unit
 *                that turns the other figures into cycles
 *   add_mem      addl $1,(mem), over ten cache lines in turn, so that no add waits for
 *                the one before (the kernel's atomics seldom follow one another on one line)
 *   lock_add     lock addl $1,(mem), the same: minus add_mem, what the LOCK adds
 *   nop          nop: the loop's floor for the fences
 *   mfence       mfence, lfence, sfence: each minus nop
 *   lfence
 *   sfence
 *   popf         pushf; popf (minus pushf; pop): POPF cannot change IF in user space, and CLI
 *                and STI fault there, so this is reported, not used as a weight
 *   chase_SIZE   a pointer chase through one pointer per 64-byte line of a SIZE buffer, in a
 *                random cyclic order: every step's load waits for the last one, so a step
 *                costs the latency of the level the buffer fits in: 16 KiB (L1d), 512 KiB
 *                (L2), 16 MiB (past L2), 1 GiB (memory)
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define REP10(s) s s s s s s s s s s
#define REP100(s) REP10(REP10(s))

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static uint32_t lines[10 * 16] __attribute__((aligned(64)));

#define TEN_LINES(op) op " 0(%0)\n\t" op " 64(%0)\n\t" op " 128(%0)\n\t" op " 192(%0)\n\t" \
	op " 256(%0)\n\t" op " 320(%0)\n\t" op " 384(%0)\n\t" op " 448(%0)\n\t"	\
	op " 512(%0)\n\t" op " 576(%0)\n\t"

/* Each loop runs `n` iterations of 100 operations and returns ns per operation. */
static double add_chain(uint64_t n)
{
	uint64_t x = 0, i;
	double t = now_ns();

	for (i = 0; i < n; i++)
		asm volatile(REP100("add $1, %0\n\t") : "+r"(x));
	return (now_ns() - t) / (n * 100.0);
}

static double add_mem(uint64_t n)
{
	uint64_t i;
	double t = now_ns();

	for (i = 0; i < n; i++)
		asm volatile(REP10(TEN_LINES("addl $1,")) : : "r"(lines) : "memory", "cc");
	return (now_ns() - t) / (n * 100.0);
}

static double lock_add(uint64_t n)
{
	uint64_t i;
	double t = now_ns();

	for (i = 0; i < n; i++)
		asm volatile(REP10(TEN_LINES("lock addl $1,")) : : "r"(lines) : "memory", "cc");
	return (now_ns() - t) / (n * 100.0);
}

#define SIMPLE_LOOP(name, insn)						\
static double name(uint64_t n)						\
{									\
	uint64_t i;							\
	double t = now_ns();						\
									\
	for (i = 0; i < n; i++)						\
		asm volatile(REP100(insn "\n\t") : : : "memory");	\
	return (now_ns() - t) / (n * 100.0);				\
}
SIMPLE_LOOP(nop, "nop")
SIMPLE_LOOP(mfence, "mfence")
SIMPLE_LOOP(lfence, "lfence")
SIMPLE_LOOP(sfence, "sfence")
SIMPLE_LOOP(pushf_popf, "pushfq; popfq")
SIMPLE_LOOP(push_pop, "pushq %%rax; popq %%rax")

struct chase {
	const char *name;
	size_t size;
	void **ring;
};

/* One pointer per line, linked in a random single cycle (Sattolo's shuffle, fixed seed). */
static void **chase_ring(size_t size)
{
	size_t lines = size / 64, i, whole = (size + (2 << 20) - 1) & ~(size_t)((2 << 20) - 1);
	size_t *order = malloc(lines * sizeof(*order));
	void **buf = NULL;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;

	/*
	 * Whole 2 MiB pages where the kernel gives them (THP), also under a small buffer: the
	 * chase should measure the caches, not the TLB.
	 */
	if (!order || posix_memalign((void **)&buf, 2 << 20, whole))
		return NULL;
	madvise(buf, whole, MADV_HUGEPAGE);
	for (i = 0; i < lines; i++)
		order[i] = i;
	for (i = lines - 1; i > 0; i--) {
		size_t j, tmp;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		j = seed % i;
		tmp = order[i];
		order[i] = order[j];
		order[j] = tmp;
	}
	for (i = 0; i < lines; i++)
		buf[order[i] * 8] = &buf[order[(i + 1) % lines] * 8];
	free(order);
	return buf;
}

static void *volatile sink;

static double chase(void **ring, uint64_t steps)
{
	void **p = ring;
	uint64_t i;
	double t = now_ns();

	for (i = 0; i < steps / 10; i++) {
		p = *p; p = *p; p = *p; p = *p; p = *p;
		p = *p; p = *p; p = *p; p = *p; p = *p;
	}
	sink = p;
	return (now_ns() - t) / (steps / 10 * 10.0);
}

int main(int argc, char **argv)
{
	struct chase chases[] = {
		{ "chase_16k", 16 << 10, NULL },	/* L1d: 32 KiB */
		{ "chase_512k", 512 << 10, NULL },	/* L2: 1 MiB */
		{ "chase_16m", 16 << 20, NULL },	/* L3: 32 MiB */
		{ "chase_1g", 1 << 30, NULL },		/* memory */
	};
	int rounds = argc > 1 ? atoi(argv[1]) : 11, cpu = argc > 2 ? atoi(argv[2]) : -1, r;
	size_t c, nchases = sizeof(chases) / sizeof(chases[0]);
	const uint64_t n = 100000;	/* 1e7 operations: a few milliseconds each */

	if (rounds < 1) {
		fprintf(stderr, "usage: cost-probe [ROUNDS [CPU]]\n");
		return 2;
	}
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			perror("sched_setaffinity");
			return 1;
		}
	}
	for (c = 0; c < nchases; c++) {
		chases[c].ring = chase_ring(chases[c].size);
		if (!chases[c].ring) {
			fprintf(stderr, "cost-probe: cannot allocate %zu bytes\n", chases[c].size);
			return 1;
		}
		chase(chases[c].ring, chases[c].size / 64);	/* touch every line once */
	}
	for (r = 0; r < rounds; r++) {
		printf("{\"round\": %d, \"add_chain\": %.4f, \"add_mem\": %.4f, \"lock_add\": %.4f,"
		       " \"nop\": %.4f, \"mfence\": %.4f, \"lfence\": %.4f, \"sfence\": %.4f,"
		       " \"pushf_popf\": %.4f, \"push_pop\": %.4f",
		       r, add_chain(n), add_mem(n), lock_add(n / 10), nop(n), mfence(n / 10),
		       lfence(n / 10), sfence(n / 10), pushf_popf(n / 10), push_pop(n));
		for (c = 0; c < nchases; c++)
			printf(", \"%s\": %.4f", chases[c].name,
			       chase(chases[c].ring, chases[c].size > (1 << 20) ? 100000 : 1000000));
		printf("}\n");
		fflush(stdout);
	}
	return 0;
}
