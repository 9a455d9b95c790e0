/* SPDX-License-Identifier: MIT */
/*
 * a64-events.h: which costly kinds of instruction one A64 (arm64) instruction is, from its
 * 32-bit word, as x86-events.h does for x86-64. Every A64 instruction is one little-endian
 * word, so there is nothing to find first; only the classes below are looked at.
 *
 * The kinds (one bit each, in the order of the plugin's arm64 fields):
 * - A64_LSE: an ARMv8.1 atomic: LDADD, LDCLR, LDEOR, LDSET, LD{S,U}{MAX,MIN} (and their
 *   ST* aliases, which are the same instructions with Rt = XZR), SWP, CAS and CASP, in all
 *   sizes and orderings.
 * - A64_LDEX, A64_STEX: a load- or store-exclusive, single or pair (LDXR, LDAXR, LDXP,
 *   LDAXP; STXR, STLXR, STXP, STLXP): an LL/SC loop runs one of each per attempt, so STEX
 *   counts the attempts of an atomic the kernel built without LSE.
 * - A64_ACQUIRE, A64_RELEASE: the access orders what follows (acquire) or what precedes it
 *   (release): LDAR, LDAPR, LDAPUR, LDLAR; STLR, STLUR, STLLR; and the acquire or release
 *   forms of the exclusives and LSE atomics (LDAXR, STLXR, LDADDAL, CASA, ...), which are
 *   then counted under both kinds.
 * - A64_DMB_ISH, A64_DMB_ISHLD, A64_DMB_ISHST: the inner-shareable DMBs that smp_mb(),
 *   smp_rmb() and smp_wmb() are on arm64; A64_DMB_OTHER: a DMB of any other domain or type
 *   (SY, OSH, NSH, LD, ST, ...: what mb(), rmb(), wmb() and the dma_ barriers are).
 * - A64_DSB: DSB of any domain or type, nXS forms too (not SSBB and PSSBB, which share its
 *   encoding but are speculation barriers); A64_ISB.
 * - A64_DAIF: a write of the interrupt masks: MSR DAIFSet, MSR DAIFClr (what
 *   local_irq_disable/enable are) and MSR DAIF, Xt (local_irq_restore). Counted whether or
 *   not it changes a mask, as x86's POPF is.
 *
 * Not counted: CLREX, SB, the hint space (YIELD, WFE, ...), and writes of ICC_PMR_EL1, the
 * interrupt priority mask that replaces DAIF only in a kernel built with pseudo-NMIs.
 */
#ifndef IPCLAB_A64_EVENTS_H
#define IPCLAB_A64_EVENTS_H

#include <stddef.h>
#include <stdint.h>

enum {
	A64_LSE = 1 << 0,
	A64_LDEX = 1 << 1,
	A64_STEX = 1 << 2,
	A64_ACQUIRE = 1 << 3,
	A64_RELEASE = 1 << 4,
	A64_DMB_ISH = 1 << 5,
	A64_DMB_ISHLD = 1 << 6,
	A64_DMB_ISHST = 1 << 7,
	A64_DMB_OTHER = 1 << 8,
	A64_DSB = 1 << 9,
	A64_ISB = 1 << 10,
	A64_DAIF = 1 << 11,
	A64_DMB = A64_DMB_ISH | A64_DMB_ISHLD | A64_DMB_ISHST | A64_DMB_OTHER,
	A64_BARRIER = A64_DMB | A64_DSB | A64_ISB,
};

#define A64_BIT(w, n) (((w) >> (n)) & 1u)

/*
 * The load/store exclusive and ordered class: size[31:30] 001000 o2[23] L[22] o1[21]
 * Rs[20:16] o0[15] Rt2[14:10] Rn Rt. o2 o1 = 00: exclusives; 01: exclusive pairs (size 1x)
 * or CASP (size 0x); 10: LDAR/STLR (o0 = 1) and LDLAR/STLLR (o0 = 0); 11: CAS.
 */
static inline unsigned int a64_exclusive_class(uint32_t w)
{
	unsigned int o2 = A64_BIT(w, 23), load = A64_BIT(w, 22), o1 = A64_BIT(w, 21);
	unsigned int o0 = A64_BIT(w, 15);

	if (o2 && !o1)
		return load ? A64_ACQUIRE : A64_RELEASE;
	if (o1 && (o2 || !A64_BIT(w, 31))) {
		/* CAS (o2 = 1) or CASP (o2 = 0, size 0x): L is acquire, o0 release */
		if (((w >> 10) & 0x1f) != 0x1f)
			return 0;	/* unallocated: CAS and CASP have Rt2 = 11111 */
		return A64_LSE | (load ? A64_ACQUIRE : 0) | (o0 ? A64_RELEASE : 0);
	}
	/* LDXR, LDAXR, STXR, STLXR and their pairs: o0 orders them */
	if (load)
		return A64_LDEX | (o0 ? A64_ACQUIRE : 0);
	return A64_STEX | (o0 ? A64_RELEASE : 0);
}

/*
 * Atomic memory operations: size 111 V=0 00 A R 1 Rs o3 opc[14:12] 00 Rn Rt. o3 = 0 is the
 * eight LD<op>s; o3 = 1 is SWP (opc 000), LDAPR (opc 100, A = 1, R = 0) or the 64-byte
 * single-copy loads and stores (ST64B, LD64B, ...), which are none of the kinds.
 */
static inline unsigned int a64_atomic_class(uint32_t w)
{
	unsigned int acq = A64_BIT(w, 23), rel = A64_BIT(w, 22), o3 = A64_BIT(w, 15);
	unsigned int opc = (w >> 12) & 7;
	unsigned int order = (acq ? A64_ACQUIRE : 0) | (rel ? A64_RELEASE : 0);

	if (!o3 || opc == 0)
		return A64_LSE | order;
	if (opc == 4 && acq && !rel)
		return A64_ACQUIRE;	/* LDAPR */
	return 0;
}

static inline unsigned int a64_barrier(uint32_t w)
{
	unsigned int crm = (w >> 8) & 0xf, op2 = (w >> 5) & 7;

	switch (op2) {
	case 1:		/* DSB <option>nXS: CRm = imm2:10 */
		return (crm & 3) == 2 ? A64_DSB : 0;
	case 4:		/* DSB; CRm 0000 and 0100 are SSBB and PSSBB */
		return crm == 0 || crm == 4 ? 0 : A64_DSB;
	case 5:
		return crm == 0xb ? A64_DMB_ISH : crm == 0x9 ? A64_DMB_ISHLD :
		       crm == 0xa ? A64_DMB_ISHST : A64_DMB_OTHER;
	case 6:
		return A64_ISB;
	}
	return 0;	/* CLREX (2), SB (7) */
}

static inline unsigned int a64_events(const uint8_t *p, size_t len)
{
	uint32_t w;

	if (len != 4)
		return 0;
	w = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	if ((w & 0x3f000000) == 0x08000000)
		return a64_exclusive_class(w);
	if ((w & 0x3f200c00) == 0x38200000)
		return a64_atomic_class(w);
	if ((w & 0x3f200c00) == 0x19000000)	/* LDAPUR*, STLUR (opc 00) */
		return ((w >> 22) & 3) ? A64_ACQUIRE : A64_RELEASE;
	if ((w & 0xfffff01f) == 0xd503301f)
		return a64_barrier(w);
	if ((w & 0xfffff0df) == 0xd50340df || (w & 0xffffffe0) == 0xd51b4220)
		return A64_DAIF;	/* MSR DAIFSet/DAIFClr, #imm; MSR DAIF, Xt */
	return 0;
}

#endif
