// SPDX-License-Identifier: MIT
/*
 * selftest.c: known answers for the plugin's instruction decoders (x86-events.h,
 * a64-events.h) and cache model (cachesim.h). The byte tables were produced by GNU as (the
 * A64 one by aarch64-linux-gnu-as) from the assembly in each row's comment (objdump -d to
 * read it back). Exit 0 when every check passes; each failure is printed.
 *
 * `selftest -` instead reads one instruction a line, its bytes in hex ("f0 83 44 24 fc 00"),
 * and prints its events as a number a line; `selftest - a64` does the same for A64, each
 * line one instruction word as objdump prints it ("c85f7c20"). tests/test_qemu_plugin.py
 * feeds it every instruction objdump finds in a binary and checks the answers against
 * objdump's mnemonics.
 */
#include <stdio.h>
#include <string.h>

#include "../a64-events.h"
#include "../cachesim.h"
#include "../x86-events.h"

struct row {
	const char *what;
	unsigned char bytes[15];
	unsigned int len;
	unsigned int events;
};

#define L X86_LOCKED
#define MF X86_MFENCE
#define LF X86_LFENCE
#define SF X86_SFENCE
#define I X86_IRQFLAG

static const struct row rows[] = {
	/* locked read-modify-writes */
	{ "lock addl $0,-4(%rsp) (x86 smp_mb)", { 0xf0, 0x83, 0x44, 0x24, 0xfc, 0x00 }, 6, L },
	{ "lock incl (%rdi)", { 0xf0, 0xff, 0x07 }, 3, L },
	{ "lock cmpxchg %rsi,(%rdi)", { 0xf0, 0x48, 0x0f, 0xb1, 0x37 }, 5, L },
	{ "lock xadd %eax,(%rdi)", { 0xf0, 0x0f, 0xc1, 0x07 }, 4, L },
	{ "lock btsq $3,(%rdi)", { 0xf0, 0x48, 0x0f, 0xba, 0x2f, 0x03 }, 6, L },
	{ "lock cmpxchg16b (%rdi)", { 0xf0, 0x48, 0x0f, 0xc7, 0x0f }, 5, L },
	{ "lock orl $0,(%rsp)", { 0xf0, 0x83, 0x0c, 0x24, 0x00 }, 5, L },
	{ "lock subq $1,8(%r12)", { 0xf0, 0x49, 0x83, 0x6c, 0x24, 0x08, 0x01 }, 7, L },
	{ "lock addl $1,%fs:(%rdi)", { 0x64, 0xf0, 0x83, 0x07, 0x01 }, 5, L },
	{ "lock addw $1,(%rdi)", { 0x66, 0xf0, 0x83, 0x07, 0x01 }, 5, L },
	{ "lock with a REX before it (REX ignored)", { 0x48, 0xf0, 0xff, 0x07 }, 4, L },
	{ "ds lock addl $1,(%rdi)", { 0x3e, 0xf0, 0x83, 0x07, 0x01 }, 5, L },
	{ "ds xchg %eax,(%rdi)", { 0x3e, 0x87, 0x07 }, 3, L },
	{ "xchg %rax,(%rdi)", { 0x48, 0x87, 0x07 }, 3, L },
	{ "xchg %al,(%rdi)", { 0x86, 0x07 }, 2, L },
	{ "xchg %eax,8(%rsp)", { 0x87, 0x44, 0x24, 0x08 }, 4, L },
	/* not locked */
	{ "xchg %rax,%rbx", { 0x48, 0x93 }, 2, 0 },
	{ "xchg %eax,%r8d", { 0x41, 0x90 }, 2, 0 },
	{ "xchg %al,%bl", { 0x86, 0xc3 }, 2, 0 },
	{ "ds addl $0,-4(%rsp) (6.12's LOCK_PREFIX patched for one CPU)",
	  { 0x3e, 0x83, 0x44, 0x24, 0xfc, 0x00 }, 6, 0 },
	{ "ds cmpxchg %rsi,(%rdi)", { 0x3e, 0x48, 0x0f, 0xb1, 0x37 }, 5, 0 },
	{ "cmpxchg %rsi,(%rdi)", { 0x48, 0x0f, 0xb1, 0x37 }, 4, 0 },
	{ "xadd %eax,(%rdi)", { 0x0f, 0xc1, 0x07 }, 3, 0 },
	{ "addl $1,(%rdi)", { 0x83, 0x07, 0x01 }, 3, 0 },
	{ "mov (%rdi),%rax", { 0x48, 0x8b, 0x07 }, 3, 0 },
	{ "nop", { 0x90 }, 1, 0 },
	{ "pause", { 0xf3, 0x90 }, 2, 0 },
	{ "rep movsb", { 0xf3, 0xa4 }, 2, 0 },
	{ "rep stosq", { 0xf3, 0x48, 0xab }, 3, 0 },
	{ "cpuid", { 0x0f, 0xa2 }, 2, 0 },
	{ "serialize", { 0x0f, 0x01, 0xe8 }, 3, 0 },
	{ "vmovdqu (%rdi),%ymm0 (VEX)", { 0xc5, 0xfe, 0x6f, 0x07 }, 4, 0 },
	{ "vmovdqu64 (%rdi),%zmm0 (EVEX)", { 0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x07 }, 6, 0 },
	/* fences, and the instructions that share their opcode */
	{ "mfence", { 0x0f, 0xae, 0xf0 }, 3, MF },
	{ "lfence", { 0x0f, 0xae, 0xe8 }, 3, LF },
	{ "sfence", { 0x0f, 0xae, 0xf8 }, 3, SF },
	{ "lfence, rm 1 (same instruction)", { 0x0f, 0xae, 0xe9 }, 3, LF },
	{ "mfence with REX.W", { 0x48, 0x0f, 0xae, 0xf0 }, 4, MF },
	{ "clflush (%rdi)", { 0x0f, 0xae, 0x3f }, 3, 0 },
	{ "clflushopt (%rdi)", { 0x66, 0x0f, 0xae, 0x3f }, 4, 0 },
	{ "clwb (%rdi)", { 0x66, 0x0f, 0xae, 0x37 }, 4, 0 },
	{ "xsaveopt (%rdi)", { 0x0f, 0xae, 0x37 }, 3, 0 },
	{ "tpause %eax", { 0x66, 0x0f, 0xae, 0xf0 }, 4, 0 },
	{ "umwait %eax", { 0xf2, 0x0f, 0xae, 0xf0 }, 4, 0 },
	{ "umonitor %rax", { 0xf3, 0x0f, 0xae, 0xf0 }, 4, 0 },
	{ "rdfsbase %rax", { 0xf3, 0x48, 0x0f, 0xae, 0xc0 }, 5, 0 },
	/* interrupt flag */
	{ "cli", { 0xfa }, 1, I },
	{ "sti", { 0xfb }, 1, I },
	{ "popfq", { 0x9d }, 1, I },
	{ "popfw", { 0x66, 0x9d }, 2, I },
	{ "pushfq", { 0x9c }, 1, 0 },
	{ "iretq", { 0x48, 0xcf }, 2, 0 },
	/* cut short: nothing is read past the length */
	{ "a lone lock prefix", { 0xf0 }, 1, 0 },
	{ "0f ae without its ModRM", { 0x0f, 0xae }, 2, 0 },
	{ "xchg without its ModRM", { 0x87 }, 1, 0 },
	{ "nothing", { 0 }, 0, 0 },
};

#define LSE A64_LSE
#define LDEX A64_LDEX
#define STEX A64_STEX
#define ACQ A64_ACQUIRE
#define REL A64_RELEASE
#define ISH A64_DMB_ISH
#define ISHLD A64_DMB_ISHLD
#define ISHST A64_DMB_ISHST
#define DMBO A64_DMB_OTHER
#define DSB A64_DSB
#define ISB A64_ISB
#define DAIF A64_DAIF

/* Each word little-endian, as it sits in memory and as QEMU hands it over. */
static const struct row a64_rows[] = {
	{ "ldxr x0, [x1]", { 0x20, 0x7c, 0x5f, 0xc8 }, 4, LDEX },
	{ "ldxr w0, [x1]", { 0x20, 0x7c, 0x5f, 0x88 }, 4, LDEX },
	{ "ldxrb w0, [x1]", { 0x20, 0x7c, 0x5f, 0x08 }, 4, LDEX },
	{ "ldxrh w0, [x1]", { 0x20, 0x7c, 0x5f, 0x48 }, 4, LDEX },
	{ "ldaxr x0, [x1]", { 0x20, 0xfc, 0x5f, 0xc8 }, 4, LDEX | ACQ },
	{ "ldaxrb w0, [x1]", { 0x20, 0xfc, 0x5f, 0x08 }, 4, LDEX | ACQ },
	{ "stxr w2, x0, [x1]", { 0x20, 0x7c, 0x02, 0xc8 }, 4, STEX },
	{ "stxrb w2, w0, [x1]", { 0x20, 0x7c, 0x02, 0x08 }, 4, STEX },
	{ "stlxr w2, x0, [x1]", { 0x20, 0xfc, 0x02, 0xc8 }, 4, STEX | REL },
	{ "stlxrh w2, w0, [x1]", { 0x20, 0xfc, 0x02, 0x48 }, 4, STEX | REL },
	{ "ldxp x0, x3, [x1]", { 0x20, 0x0c, 0x7f, 0xc8 }, 4, LDEX },
	{ "ldaxp x0, x3, [x1]", { 0x20, 0x8c, 0x7f, 0xc8 }, 4, LDEX | ACQ },
	{ "stxp w2, x0, x3, [x1]", { 0x20, 0x0c, 0x22, 0xc8 }, 4, STEX },
	{ "stlxp w2, x0, x3, [x1]", { 0x20, 0x8c, 0x22, 0xc8 }, 4, STEX | REL },
	{ "ldar x0, [x1]", { 0x20, 0xfc, 0xdf, 0xc8 }, 4, ACQ },
	{ "ldarb w0, [x1]", { 0x20, 0xfc, 0xdf, 0x08 }, 4, ACQ },
	{ "ldlar x0, [x1]", { 0x20, 0x7c, 0xdf, 0xc8 }, 4, ACQ },
	{ "ldapr x0, [x1]", { 0x20, 0xc0, 0xbf, 0xf8 }, 4, ACQ },
	{ "ldaprb w0, [x1]", { 0x20, 0xc0, 0xbf, 0x38 }, 4, ACQ },
	{ "ldapur x0, [x1, #8]", { 0x20, 0x80, 0x40, 0xd9 }, 4, ACQ },
	{ "ldapursw x0, [x1, #-4]", { 0x20, 0xc0, 0x9f, 0x99 }, 4, ACQ },
	{ "stlr x0, [x1]", { 0x20, 0xfc, 0x9f, 0xc8 }, 4, REL },
	{ "stlrh w0, [x1]", { 0x20, 0xfc, 0x9f, 0x48 }, 4, REL },
	{ "stllr x0, [x1]", { 0x20, 0x7c, 0x9f, 0xc8 }, 4, REL },
	{ "stlur w0, [x1, #4]", { 0x20, 0x40, 0x00, 0x99 }, 4, REL },
	{ "ldadd x0, x2, [x1]", { 0x22, 0x00, 0x20, 0xf8 }, 4, LSE },
	{ "ldaddal w0, w2, [x1]", { 0x22, 0x00, 0xe0, 0xb8 }, 4, LSE | ACQ | REL },
	{ "ldadda x0, x2, [x1]", { 0x22, 0x00, 0xa0, 0xf8 }, 4, LSE | ACQ },
	{ "ldaddl x0, x2, [x1]", { 0x22, 0x00, 0x60, 0xf8 }, 4, LSE | REL },
	{ "stadd w0, [x1]", { 0x3f, 0x00, 0x20, 0xb8 }, 4, LSE },
	{ "staddl x0, [x1]", { 0x3f, 0x00, 0x60, 0xf8 }, 4, LSE | REL },
	{ "ldclr x0, x2, [x1]", { 0x22, 0x10, 0x20, 0xf8 }, 4, LSE },
	{ "ldeor w0, w2, [x1]", { 0x22, 0x20, 0x20, 0xb8 }, 4, LSE },
	{ "ldset x0, x2, [x1]", { 0x22, 0x30, 0x20, 0xf8 }, 4, LSE },
	{ "stset w0, [x1]", { 0x3f, 0x30, 0x20, 0xb8 }, 4, LSE },
	{ "ldsmax x0, x2, [x1]", { 0x22, 0x40, 0x20, 0xf8 }, 4, LSE },
	{ "ldumin w0, w2, [x1]", { 0x22, 0x70, 0x20, 0xb8 }, 4, LSE },
	{ "ldaddb w0, w2, [x1]", { 0x22, 0x00, 0x20, 0x38 }, 4, LSE },
	{ "swp x0, x2, [x1]", { 0x22, 0x80, 0x20, 0xf8 }, 4, LSE },
	{ "swpal w0, w2, [x1]", { 0x22, 0x80, 0xe0, 0xb8 }, 4, LSE | ACQ | REL },
	{ "swpab w0, w2, [x1]", { 0x22, 0x80, 0xa0, 0x38 }, 4, LSE | ACQ },
	{ "cas x0, x2, [x1]", { 0x22, 0x7c, 0xa0, 0xc8 }, 4, LSE },
	{ "casal w0, w2, [x1]", { 0x22, 0xfc, 0xe0, 0x88 }, 4, LSE | ACQ | REL },
	{ "casa x0, x2, [x1]", { 0x22, 0x7c, 0xe0, 0xc8 }, 4, LSE | ACQ },
	{ "casl x0, x2, [x1]", { 0x22, 0xfc, 0xa0, 0xc8 }, 4, LSE | REL },
	{ "casb w0, w2, [x1]", { 0x22, 0x7c, 0xa0, 0x08 }, 4, LSE },
	{ "caspal x0, x1, x2, x3, [x4]", { 0x82, 0xfc, 0x60, 0x48 }, 4, LSE | ACQ | REL },
	{ "casp w0, w1, w2, w3, [x4]", { 0x82, 0x7c, 0x20, 0x08 }, 4, LSE },
	{ "dmb ish", { 0xbf, 0x3b, 0x03, 0xd5 }, 4, ISH },
	{ "dmb ishld", { 0xbf, 0x39, 0x03, 0xd5 }, 4, ISHLD },
	{ "dmb ishst", { 0xbf, 0x3a, 0x03, 0xd5 }, 4, ISHST },
	{ "dmb sy", { 0xbf, 0x3f, 0x03, 0xd5 }, 4, DMBO },
	{ "dmb ld", { 0xbf, 0x3d, 0x03, 0xd5 }, 4, DMBO },
	{ "dmb st", { 0xbf, 0x3e, 0x03, 0xd5 }, 4, DMBO },
	{ "dmb osh", { 0xbf, 0x33, 0x03, 0xd5 }, 4, DMBO },
	{ "dmb nsh", { 0xbf, 0x37, 0x03, 0xd5 }, 4, DMBO },
	{ "dmb oshst", { 0xbf, 0x32, 0x03, 0xd5 }, 4, DMBO },
	{ "dsb ish", { 0x9f, 0x3b, 0x03, 0xd5 }, 4, DSB },
	{ "dsb sy", { 0x9f, 0x3f, 0x03, 0xd5 }, 4, DSB },
	{ "dsb ishst", { 0x9f, 0x3a, 0x03, 0xd5 }, 4, DSB },
	{ "dsb nsh", { 0x9f, 0x37, 0x03, 0xd5 }, 4, DSB },
	{ "isb", { 0xdf, 0x3f, 0x03, 0xd5 }, 4, ISB },
	{ "ssbb", { 0x9f, 0x30, 0x03, 0xd5 }, 4, 0 },
	{ "pssbb", { 0x9f, 0x34, 0x03, 0xd5 }, 4, 0 },
	{ "clrex", { 0x5f, 0x3f, 0x03, 0xd5 }, 4, 0 },
	{ "sb", { 0xff, 0x30, 0x03, 0xd5 }, 4, 0 },
	{ "msr daifset, #0x2", { 0xdf, 0x42, 0x03, 0xd5 }, 4, DAIF },
	{ "msr daifclr, #0x2", { 0xff, 0x42, 0x03, 0xd5 }, 4, DAIF },
	{ "msr daifset, #0xf", { 0xdf, 0x4f, 0x03, 0xd5 }, 4, DAIF },
	{ "msr daifclr, #0xf", { 0xff, 0x4f, 0x03, 0xd5 }, 4, DAIF },
	{ "msr daif, x0", { 0x20, 0x42, 0x1b, 0xd5 }, 4, DAIF },
	{ "msr daif, x3", { 0x23, 0x42, 0x1b, 0xd5 }, 4, DAIF },
	{ "mrs x0, daif", { 0x20, 0x42, 0x3b, 0xd5 }, 4, 0 },
	{ "msr spsel, #0x1", { 0xbf, 0x41, 0x00, 0xd5 }, 4, 0 },
	{ "msr pan, #0x1", { 0x9f, 0x41, 0x00, 0xd5 }, 4, 0 },
	{ "msr ssbs, #0x1", { 0x3f, 0x41, 0x03, 0xd5 }, 4, 0 },
	{ "msr icc_pmr_el1, x0", { 0x00, 0x46, 0x18, 0xd5 }, 4, 0 },
	{ "ldr x0, [x1]", { 0x20, 0x00, 0x40, 0xf9 }, 4, 0 },
	{ "str x0, [x1]", { 0x20, 0x00, 0x00, 0xf9 }, 4, 0 },
	{ "ldp x0, x1, [sp]", { 0xe0, 0x07, 0x40, 0xa9 }, 4, 0 },
	{ "stp x29, x30, [sp, #-16]!", { 0xfd, 0x7b, 0xbf, 0xa9 }, 4, 0 },
	{ "ldur x0, [x1, #-8]", { 0x20, 0x80, 0x5f, 0xf8 }, 4, 0 },
	{ "stur w0, [x1, #4]", { 0x20, 0x40, 0x00, 0xb8 }, 4, 0 },
	{ "ldtr x0, [x1]", { 0x20, 0x08, 0x40, 0xf8 }, 4, 0 },
	{ "prfm pldl1keep, [x1]", { 0x20, 0x00, 0x80, 0xf9 }, 4, 0 },
	{ "add x0, x1, x2", { 0x20, 0x00, 0x02, 0x8b }, 4, 0 },
	{ "nop", { 0x1f, 0x20, 0x03, 0xd5 }, 4, 0 },
	{ "yield", { 0x3f, 0x20, 0x03, 0xd5 }, 4, 0 },
	{ "wfe", { 0x5f, 0x20, 0x03, 0xd5 }, 4, 0 },
	{ "ret", { 0xc0, 0x03, 0x5f, 0xd6 }, 4, 0 },
	{ "svc #0x0", { 0x01, 0x00, 0x00, 0xd4 }, 4, 0 },
	{ "eret", { 0xe0, 0x03, 0x9f, 0xd6 }, 4, 0 },
	{ "mrs x0, tpidr_el1", { 0x80, 0xd0, 0x38, 0xd5 }, 4, 0 },
	{ "msr tpidr_el1, x0", { 0x80, 0xd0, 0x18, 0xd5 }, 4, 0 },
	{ "ld64b x0, [x1]", { 0x20, 0xd0, 0x3f, 0xf8 }, 4, 0 },
	{ "st64b x0, [x1]", { 0x20, 0x90, 0x3f, 0xf8 }, 4, 0 },
	{ "a word cut short", { 0xbf, 0x3b, 0x03 }, 3, 0 },
};

static int failures;

static void check(int ok, const char *what)
{
	if (!ok) {
		printf("FAIL %s\n", what);
		failures++;
	}
}

static void decode_table(const char *arch, const struct row *table, size_t n,
			 unsigned int (*events)(const uint8_t *, size_t))
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char buf[15];
		unsigned int got;

		/* bytes past the length are poison: a decoder that reads them sees a lock */
		memset(buf, 0xf0, sizeof(buf));
		memcpy(buf, table[i].bytes, table[i].len);
		got = events(buf, table[i].len);
		if (got != table[i].events) {
			printf("FAIL decode %s %s: got %#x, want %#x\n", arch, table[i].what, got,
			       table[i].events);
			failures++;
		}
	}
}

static void decoder(void)
{
	decode_table("x86", rows, sizeof(rows) / sizeof(rows[0]), x86_events);
	decode_table("a64", a64_rows, sizeof(a64_rows) / sizeof(a64_rows[0]), a64_events);
}

static void cache(void)
{
	struct cache c, l1;
	int i, pass, misses;

	check(cache_init(&c, 3 * 64, 1) == -1, "3 sets are refused");
	check(cache_init(&c, 100, 1) == -1, "a size that is not whole lines is refused");
	check(cache_init(&c, 64, 0) == -1, "0 ways are refused");
	/* 2 sets of 2 ways: lines 0, 2, 4, ... all go to set 0 */
	check(cache_init(&c, 2 * 2 * 64, 2) == 0, "2 sets x 2 ways");
	check(!cache_access(&c, 0), "first touch of line 0 misses");
	check(!cache_access(&c, 2), "first touch of line 2 misses");
	check(cache_access(&c, 0), "line 0 hits");
	check(!cache_access(&c, 4), "line 4 misses and evicts line 2, the least recently used");
	check(cache_access(&c, 0), "line 0 stayed");
	check(!cache_access(&c, 2), "line 2 was evicted");
	check(!cache_access(&c, 1), "line 1 (set 1) misses");
	check(cache_access(&c, 1), "line 1 hits");
	cache_invalidate(&c, 1);
	check(!cache_access(&c, 1), "an invalidated line misses");
	check(cache_access(&c, 2) && cache_access(&c, 0), "set 0 holds 0 and 2");

	/*
	 * A 32 KiB 8-way L1: a 32 KiB working set hits after its first pass; 36 KiB (9 lines
	 * a set) never does.
	 */
	check(cache_init(&l1, 32768, 8) == 0, "32 KiB 8-way");
	for (pass = 0, misses = 0; pass < 3; pass++)
		for (i = 0; i < 512; i++)
			misses += !cache_access(&l1, 1000 + i);
	check(misses == 512, "32 KiB swept 3 times: 512 cold misses only");
	for (pass = 0, misses = 0; pass < 3; pass++)
		for (i = 0; i < 576; i++)
			misses += !cache_access(&l1, 100000 + i);
	check(misses == 3 * 576, "36 KiB swept 3 times under LRU: every access misses");
}

/*
 * The memo of the last two lines changes nothing: a stream of accesses with locality (a
 * few lines in turn, sets that conflict, now and then a line anywhere, and lines dropped as
 * another CPU's store would) through the memo leaves the same hits and the same cache
 * state as the plain model. With 2 ways a memo's line can be evicted under it.
 */
static void memo(unsigned int ways)
{
	struct cache plain, fast;
	struct line_memo m;
	uint64_t seed = 12345, lines[8], pline, slot, sets = 4096 / 64 / ways;
	int i, hits_plain = 0, hits_fast = 0, through_memo = 0;

	check(cache_init(&plain, 4096, ways) == 0 && cache_init(&fast, 4096, ways) == 0,
	      "4 KiB caches");
	memo_forget(&m);
	for (i = 0; i < 8; i++)
		lines[i] = i * sets + (i & 1);	/* two sets: evictions under the memo */
	for (i = 0; i < 200000; i++) {
		uint64_t line;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		line = (seed >> 33) % 4 ? lines[(seed >> 40) % 3] : lines[(seed >> 40) % 8];
		if ((seed >> 20) % 97 == 0)
			line = (seed >> 24) % 4096;
		if ((seed >> 28) % 89 == 0) {
			cache_invalidate(&plain, lines[(seed >> 44) % 8]);
			cache_invalidate(&fast, lines[(seed >> 44) % 8]);
		}
		hits_plain += cache_access(&plain, line);
		if (memo_hit(&m, &fast, line, &pline)) {
			hits_fast++;
			through_memo++;
			if (pline != line) {
				check(0, "the memo's physical line is the one remembered");
				break;
			}
			continue;
		}
		hits_fast += cache_access_at(&fast, line, &slot);
		memo_put(&m, line, line, slot);
	}
	check(hits_plain == hits_fast, "the same hits with and without the memo");
	check(through_memo > 60000, "many accesses went through the memo");
	check(!memcmp(plain.tag, fast.tag, sets * ways * sizeof(*plain.tag)) &&
	      !memcmp(plain.used, fast.used, sets * ways * sizeof(*plain.used)) &&
	      plain.clock == fast.clock, "the same cache state with and without the memo");
}

static int filter(int a64)
{
	char line[256];

	while (fgets(line, sizeof(line), stdin)) {
		unsigned char buf[16];
		unsigned int n = 0, byte, word;
		char *p = line;
		int used;

		if (a64) {
			/* one word, as objdump prints it: the most significant byte first */
			if (sscanf(line, "%8x", &word) == 1)
				for (n = 0; n < 4; n++)
					buf[n] = word >> (8 * n);
			printf("%u\n", a64_events(buf, n));
			continue;
		}
		while (n < sizeof(buf) && sscanf(p, "%2x%n", &byte, &used) == 1) {
			buf[n++] = byte;
			p += used;
		}
		printf("%u\n", x86_events(buf, n));
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "-"))
		return filter(argc == 3 && !strcmp(argv[2], "a64"));
	decoder();
	cache();
	memo(4);
	memo(2);
	if (failures) {
		printf("%d failures\n", failures);
		return 1;
	}
	printf("ok: %zu x86 and %zu a64 decoder rows, cache model\n", sizeof(rows) / sizeof(rows[0]),
	       sizeof(a64_rows) / sizeof(a64_rows[0]));
	return 0;
}
