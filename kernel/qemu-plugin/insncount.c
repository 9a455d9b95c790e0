// SPDX-License-Identifier: MIT
/*
 * insncount.c: a QEMU TCG plugin that counts, at each code address and window by window,
 * the guest instructions executed and the events a cost model prices: locked
 * read-modify-writes, fences, interrupt-flag changes (x86-events.h; on arm64 atomics,
 * exclusives, acquire/release accesses, barriers by kind and DAIF writes, a64-events.h:
 * the target QEMU names picks the decoder), memory loads and stores, and the misses of a
 * two-level data cache model (cachesim.h).
 *
 * Two kinds of window, each closed by the guest entering a marker function:
 *
 * - profile windows (marker=ADDR, the kernel's __x64_sys_swapoff, which the guest's profile
 *   pass calls before and after each cell): every kernel block's counts since the last such
 *   marker, and all of user space as one line:
 *
 *     window N
 *     <block start address in hex> <counts>
 *     user <counts>
 *
 * - sample windows: the engine opens one at the start of each sample's measured section
 *   (open=ADDR, __x64_sys_swapon) and closes it at the end (close=ADDR, __x64_sys_quotactl)
 *   when IPCBENCH_MARK is set. Every open or close ends the window before it, and the
 *   windows are numbered from 1 as the engine numbers its marks (bench/src/counters.c);
 *   each gets one line of totals, all code and kernel code only:
 *
 *     sample N <counts of all code> <counts of kernel code>
 *
 * <counts> are the fields the first line names, in its order. The host maps addresses to
 * functions with the image's System.map. Counts are exact up to blocks cut short by an
 * exception, which are counted whole (their memory accesses are not: those are counted as
 * they happen).
 *
 * The cache model: one L1d per vCPU and one shared last level, both filled on every miss of
 * the level above; a store invalidates the line in the other vCPUs' L1s. It sees only the
 * accesses made inside a window, open sample windows and odd profile windows (model=all:
 * every access, at three times the cost of a boot): its state at the start of a sample is
 * what the samples before left, so each cell's warmup sample warms it. Indexed by guest
 * physical address (qemu_plugin_get_hwaddr), so that two processes' buffers at one virtual
 * address do not alias; an access QEMU cannot translate falls back to its virtual address,
 * and MMIO bypasses the caches (both counted on the last line). Accesses as QEMU performs
 * them: a `rep movsb` is one access per byte, as icount counts one instruction per
 * iteration.
 *
 * Only the plugin ABI is needed, so the few declarations below stand in for QEMU's
 * qemu-plugin.h (API version 1, QEMU 7.2), which Debian does not package.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a64-events.h"
#include "cachesim.h"
#include "x86-events.h"

typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_plugin_hwaddr;
/* Its first member is all the plugin reads; QEMU 7.2 has more after it. */
typedef struct qemu_info_t {
	const char *target_name;
} qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*vcpu_udata_cb)(unsigned int vcpu_index, void *userdata);
typedef void (*vcpu_mem_cb)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
			    uint64_t vaddr, void *userdata);
typedef void (*udata_cb)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, vcpu_udata_cb cb,
					  enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
					      enum qemu_plugin_op op, void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, vcpu_mem_cb cb,
				      enum qemu_plugin_cb_flags flags,
				      enum qemu_plugin_mem_rw rw, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
struct qemu_plugin_hwaddr *qemu_plugin_get_hwaddr(qemu_plugin_meminfo_t info, uint64_t vaddr);
bool qemu_plugin_hwaddr_is_io(const struct qemu_plugin_hwaddr *haddr);
uint64_t qemu_plugin_hwaddr_phys_addr(const struct qemu_plugin_hwaddr *haddr);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define KERNEL_START 0xffff800000000000ULL
#define MAX_VCPUS 64
#define LINE_SHIFT 6
#define PAGE_SIZE 4096

/*
 * The fields of every count line, in order: the target's static fields, per execution of a
 * block (known when it is translated: instructions, then one per event bit of its decoder,
 * bit 0 first), then the memory fields, counted as the accesses happen. A count array
 * keeps the static fields from 0 and the memory fields from NSTATIC_MAX.
 */
#define NSTATIC_MAX 13
enum { F_LOADS, F_STORES, F_L1_MISSES, F_LL_MISSES, NMEM };
#define NFIELDS (NSTATIC_MAX + NMEM)
static const char *const x86_field_names[] = {
	"insns", "locked", "mfences", "lfences", "sfences", "irqflags",
};
static const char *const a64_field_names[] = {
	"insns", "lse", "ldex", "stex", "acquire", "release", "dmb_ish", "dmb_ishld",
	"dmb_ishst", "dmb_other", "dsb", "isb", "daif",
};
static const char *const mem_field_names[NMEM] = { "loads", "stores", "l1_misses", "ll_misses" };

struct target {
	const char *name;	/* QEMU's target_name */
	unsigned int nstatic;
	const char *const *field_names;
	unsigned int (*events)(const uint8_t *p, size_t len);
};
#define TARGET(n, f, e) { n, sizeof(f) / sizeof(f[0]), f, e }
static const struct target targets[] = {
	TARGET("x86_64", x86_field_names, x86_events),
	TARGET("aarch64", a64_field_names, a64_events),
};
static const struct target *target;
_Static_assert(sizeof(a64_field_names) / sizeof(a64_field_names[0]) <= NSTATIC_MAX &&
	       sizeof(x86_field_names) / sizeof(x86_field_names[0]) <= NSTATIC_MAX,
	       "NSTATIC_MAX holds every target's static fields");

enum { PROFILE, SAMPLE, NSEQ };	/* the two kinds of window */
enum { M_PROFILE, M_OPEN, M_CLOSE, NMARKERS };

struct block {
	uint64_t vaddr;
	uint64_t runs;			/* executions, bumped inline by the translated code */
	uint64_t per_run[NSTATIC_MAX];	/* instructions and events in one execution */
	uint64_t mem[NMEM];		/* loads, stores, misses so far */
	uint64_t seen_runs[NSEQ];	/* runs and mem at the last window end of each kind */
	uint64_t seen_mem[NSEQ][NMEM];
};

static struct block **blocks;
static size_t nblocks, cap;
static uint64_t marker[NMARKERS];
static bool in_window[NSEQ];	/* a profile window or a sample window is open */
static bool model_always;
static unsigned long window[NSEQ];
static FILE *out;

/*
 * memory=off: no memory field, nothing called per access. memory=cache (the default): every
 * access calls on_memory(), which counts it and runs the cache model. QEMU 7.2's inline
 * memory counters are no cheaper way to count loads and stores: on a pipe write+read loop
 * the one registered for reads counted 1352.96 per loop, the callbacks' stores (1352.95),
 * and the one registered for writes 2744.32, every access (the callbacks' loads and stores
 * together: 2744.40).
 */
static enum { MEM_OFF, MEM_CACHE } memory = MEM_CACHE;
static bool virtual_index;	/* index=virtual: skip the physical address lookup */
static uint64_t l1_size = 32768, ll_size = 1ULL << 20;
static unsigned int l1_ways = 8, ll_ways = 8;
static struct cache *l1[MAX_VCPUS];
static struct cache ll;
static unsigned int nl1;		/* highest vCPU index seen + 1 */

/*
 * Each vCPU's two last lines (cachesim.h). The virtual-to-physical pairing stays right
 * because nothing can change the address space between two accesses of one vCPU with only
 * those two lines touched in between (a context switch touches many); the memos are
 * forgotten whenever a window opens or closes, since accesses outside windows pass by
 * without updating them.
 */
static struct line_memo recent[MAX_VCPUS];
static uint64_t memo_hits;
static uint64_t io_accesses, virtual_fallbacks;

static __attribute__((noinline)) struct cache *new_l1(unsigned int vcpu)
{
	l1[vcpu] = calloc(1, sizeof(*l1[vcpu]));
	if (!l1[vcpu] || cache_init(l1[vcpu], l1_size, l1_ways))
		abort();
	if (vcpu + 1 > nl1)
		nl1 = vcpu + 1;
	return l1[vcpu];
}

static inline struct cache *l1_of(unsigned int vcpu)
{
	if (__builtin_expect(vcpu >= MAX_VCPUS, 0))
		vcpu = MAX_VCPUS - 1;	/* more vCPUs than the lab boots: they share one L1 */
	return __builtin_expect(l1[vcpu] != NULL, 1) ? l1[vcpu] : new_l1(vcpu);
}

static void invalidate_others(unsigned int vcpu, uint64_t line)
{
	unsigned int v;

	for (v = 0; v < nl1; v++)
		if (v != vcpu && l1[v])
			cache_invalidate(l1[v], line);
}

/* The model's access to one line; *slot: where it now is in this vCPU's L1. */
static inline void touch_line(struct block *b, unsigned int vcpu, struct cache *c,
			      uint64_t line, bool store, uint64_t *slot)
{
	if (!cache_access_at(c, line, slot)) {
		b->mem[F_L1_MISSES]++;
		if (!cache_access(&ll, line))
			b->mem[F_LL_MISSES]++;
	}
	if (store && nl1 > 1)
		invalidate_others(vcpu, line);
}

static void forget_recent(void)
{
	unsigned int v;

	for (v = 0; v < MAX_VCPUS; v++)
		memo_forget(&recent[v]);
}

static struct line_memo *memo_of(unsigned int vcpu)
{
	return &recent[vcpu < MAX_VCPUS ? vcpu : MAX_VCPUS - 1];
}

static uint64_t address_of(qemu_plugin_meminfo_t info, uint64_t vaddr, bool *io)
{
	struct qemu_plugin_hwaddr *hw;

	*io = false;
	if (virtual_index)
		return vaddr;
	hw = qemu_plugin_get_hwaddr(info, vaddr);
	if (!hw) {
		virtual_fallbacks++;
		return vaddr;
	}
	if (qemu_plugin_hwaddr_is_io(hw)) {
		*io = true;
		return 0;
	}
	return qemu_plugin_hwaddr_phys_addr(hw);
}

static void on_memory(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr,
		      void *udata)
{
	struct block *b = udata;
	bool store = qemu_plugin_mem_is_store(info), io;
	uint64_t size = 1ULL << qemu_plugin_mem_size_shift(info);
	uint64_t last = vaddr + size - 1, addr;

	uint64_t slot;
	bool one_line = (vaddr >> LINE_SHIFT) == (last >> LINE_SHIFT);
	struct cache *c;

	b->mem[store ? F_STORES : F_LOADS]++;
	if (!in_window[PROFILE] && !in_window[SAMPLE] && !model_always)
		return;
	c = l1_of(vcpu);
	if (one_line && memo_hit(memo_of(vcpu), c, vaddr >> LINE_SHIFT, &addr)) {
		memo_hits++;
		if (store && nl1 > 1)
			invalidate_others(vcpu, addr);
		return;
	}
	addr = address_of(info, vaddr, &io);
	if (io) {
		io_accesses++;
		return;
	}
	touch_line(b, vcpu, c, addr >> LINE_SHIFT, store, &slot);
	if (one_line) {
		memo_put(memo_of(vcpu), vaddr >> LINE_SHIFT, addr >> LINE_SHIFT, slot);
		return;
	}
	/* The access spans two lines; past a page end the second one is elsewhere. */
	if ((vaddr / PAGE_SIZE) != (last / PAGE_SIZE))
		addr = address_of(info, last, &io);
	else
		addr += size - 1;
	if (!io)
		touch_line(b, vcpu, c, addr >> LINE_SHIFT, store, &slot);
}

/* What block b did since the last window end of kind seq, which then moves to now. */
static void take(struct block *b, int seq, uint64_t counts[NFIELDS])
{
	uint64_t runs = b->runs - b->seen_runs[seq];
	int f;

	for (f = 0; f < NSTATIC_MAX; f++)
		counts[f] = runs * b->per_run[f];
	for (f = 0; f < NMEM; f++) {
		counts[NSTATIC_MAX + f] = b->mem[f] - b->seen_mem[seq][f];
		b->seen_mem[seq][f] = b->mem[f];
	}
	b->seen_runs[seq] = b->runs;
}

/* Only the fields the memory mode counts are printed. */
static void print_counts(const uint64_t c[NFIELDS])
{
	unsigned int f;

	for (f = 0; f < target->nstatic; f++)
		fprintf(out, " %" PRIu64, c[f]);
	for (f = 0; memory == MEM_CACHE && f < NMEM; f++)
		fprintf(out, " %" PRIu64, c[NSTATIC_MAX + f]);
}

static bool any(const uint64_t c[NFIELDS])
{
	int f;

	for (f = 0; f < NFIELDS; f++)
		if (c[f])
			return true;
	return false;
}

static void end_profile_window(unsigned int vcpu, void *udata)
{
	uint64_t user[NFIELDS] = { 0 }, c[NFIELDS];
	size_t i;
	int f;

	(void)vcpu;
	(void)udata;
	forget_recent();
	fprintf(out, "window %lu\n", window[PROFILE]);
	/* window 2i + 1 is the ith cell's: the one each odd marker opens */
	in_window[PROFILE] = !(window[PROFILE]++ & 1);
	for (i = 0; i < nblocks; i++) {
		struct block *b = blocks[i];

		take(b, PROFILE, c);
		if (!any(c))
			continue;
		if (b->vaddr >= KERNEL_START) {
			fprintf(out, "%" PRIx64, b->vaddr);
			print_counts(c);
			fputc('\n', out);
		} else {
			for (f = 0; f < NFIELDS; f++)
				user[f] += c[f];
		}
	}
	fprintf(out, "user");
	print_counts(user);
	fputc('\n', out);
	fflush(out);
}

static void end_sample_window(unsigned int vcpu, void *udata)
{
	uint64_t all[NFIELDS] = { 0 }, kernel[NFIELDS] = { 0 }, c[NFIELDS];
	unsigned long n = window[SAMPLE]++;
	size_t i;
	int f;

	(void)vcpu;
	in_window[SAMPLE] = udata != NULL;	/* an open marker passes non-NULL */
	forget_recent();
	for (i = 0; i < nblocks; i++) {
		struct block *b = blocks[i];

		take(b, SAMPLE, c);
		for (f = 0; f < NFIELDS; f++) {
			all[f] += c[f];
			if (b->vaddr >= KERNEL_START)
				kernel[f] += c[f];
		}
	}
	/* Window 0 runs from boot to the first marker: nobody asks for it. */
	if (!n)
		return;
	fprintf(out, "sample %lu", n);
	print_counts(all);
	print_counts(kernel);
	fputc('\n', out);
	fflush(out);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	unsigned int f;
	struct block *b;

	(void)id;
	if (nblocks == cap) {
		cap = cap ? 2 * cap : 65536;
		blocks = realloc(blocks, cap * sizeof(*blocks));
		if (!blocks)
			abort();
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		abort();
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->per_run[0] = n;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		unsigned int ev = target->events(qemu_plugin_insn_data(insn),
						 qemu_plugin_insn_size(insn));

		for (f = 1; f < target->nstatic; f++)
			b->per_run[f] += (ev >> (f - 1)) & 1;
		if (memory == MEM_CACHE) {
			qemu_plugin_register_vcpu_mem_cb(insn, on_memory, QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW, b);
		}
	}
	blocks[nblocks++] = b;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->runs, 1);
	if (b->vaddr == marker[M_PROFILE])
		qemu_plugin_register_vcpu_tb_exec_cb(tb, end_profile_window,
						     QEMU_PLUGIN_CB_NO_REGS, NULL);
	if (marker[M_OPEN] && b->vaddr == marker[M_OPEN])
		qemu_plugin_register_vcpu_tb_exec_cb(tb, end_sample_window,
						     QEMU_PLUGIN_CB_NO_REGS, b);
	if (marker[M_CLOSE] && b->vaddr == marker[M_CLOSE])
		qemu_plugin_register_vcpu_tb_exec_cb(tb, end_sample_window,
						     QEMU_PLUGIN_CB_NO_REGS, NULL);
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	end_profile_window(0, NULL);
	fprintf(out, "# accesses to MMIO %" PRIu64 ", by virtual address %" PRIu64
		", L1 hits on a vCPU's last two lines %" PRIu64 "\n",
		io_accesses, virtual_fallbacks, memo_hits);
	fclose(out);
}

/* A decimal option value; -1 when it is not one. (QEMU splits the options at commas.) */
static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	*v = strtoull(s, &end, 10);
	return *s && !*end ? 0 : -1;
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	const char *path = NULL;
	uint64_t v;
	unsigned int t;
	int i, f;

	for (t = 0; t < sizeof(targets) / sizeof(targets[0]); t++)
		if (info && info->target_name && !strcmp(info->target_name, targets[t].name))
			target = &targets[t];
	if (!target) {
		fprintf(stderr, "insncount: no decoder for target %s\n",
			info && info->target_name ? info->target_name : "(none)");
		return -1;
	}
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];
		int bad = 0;

		if (!strncmp(a, "out=", 4))
			path = a + 4;
		else if (!strncmp(a, "marker=", 7))
			marker[M_PROFILE] = strtoull(a + 7, NULL, 16);
		else if (!strncmp(a, "open=", 5))
			marker[M_OPEN] = strtoull(a + 5, NULL, 16);
		else if (!strncmp(a, "close=", 6))
			marker[M_CLOSE] = strtoull(a + 6, NULL, 16);
		else if (!strcmp(a, "model=all"))
			model_always = true;
		else if (!strcmp(a, "memory=off"))
			memory = MEM_OFF;
		else if (!strcmp(a, "memory=cache"))
			memory = MEM_CACHE;
		else if (!strcmp(a, "index=virtual"))
			virtual_index = true;
		else if (!strncmp(a, "l1_size=", 8))
			bad = parse_u64(a + 8, &l1_size);
		else if (!strncmp(a, "ll_size=", 8))
			bad = parse_u64(a + 8, &ll_size);
		else if (!strncmp(a, "l1_ways=", 8))
			bad = parse_u64(a + 8, &v) || !(l1_ways = v);
		else if (!strncmp(a, "ll_ways=", 8))
			bad = parse_u64(a + 8, &v) || !(ll_ways = v);
		else
			bad = 1;
		if (bad) {
			fprintf(stderr, "insncount: bad argument %s\n", a);
			return -1;
		}
	}
	if (!path || !marker[M_PROFILE] || !marker[M_OPEN] != !marker[M_CLOSE]) {
		fprintf(stderr, "insncount: need out=FILE and marker=HEXADDR, and open= and close="
			" together\n");
		return -1;
	}
	if (memory == MEM_CACHE) {
		struct cache probe;

		if (cache_init(&probe, l1_size, l1_ways) || cache_init(&ll, ll_size, ll_ways)) {
			fprintf(stderr, "insncount: a cache level's size is not a power of two"
				" sets x its ways x 64 bytes\n");
			return -1;
		}
		free(probe.tag);
		free(probe.used);
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	fprintf(out, "# ipclab-insncount/2 fields:");
	for (f = 0; f < (int)target->nstatic; f++)
		fprintf(out, " %s", target->field_names[f]);
	for (f = 0; memory == MEM_CACHE && f < NMEM; f++)
		fprintf(out, " %s", mem_field_names[f]);
	fputc('\n', out);
	if (memory == MEM_CACHE)
		fprintf(out, "# cache l1d %" PRIu64 " bytes %u-way, last level %" PRIu64 " bytes"
			" %u-way, 64-byte lines, LRU, %s addresses\n",
			l1_size, l1_ways, ll_size, ll_ways, virtual_index ? "virtual" : "physical");
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
