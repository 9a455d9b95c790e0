/* SPDX-License-Identifier: MIT */
/*
 * x86-events.h: which costly kinds of instruction one x86-64 instruction is, from its bytes.
 *
 * The plugin hands every instruction QEMU translates to x86_events(), with its exact length
 * (QEMU has decoded it already, so the length is never in doubt). Only 64-bit code is
 * decoded right: in 16- and 32-bit code 0x40-0x4f are INC/DEC, not REX, and 0x62/0xc4/0xc5
 * are BOUND/LES/LDS, not EVEX/VEX. The guest runs such code only in firmware and early
 * boot, outside every window the lab reads.
 *
 * The kinds:
 * - X86_LOCKED: a locked read-modify-write. Any instruction with a LOCK prefix (0xf0), and
 *   XCHG with a memory operand (0x86/0x87, ModRM.mod != 3), which is locked without one.
 *   A DS prefix (0x3e) in the place of LOCK, which a 6.12 kernel patches in when it boots on
 *   one CPU, is not a lock.
 * - X86_MFENCE, X86_LFENCE, X86_SFENCE (X86_FENCE: any of them): 0f ae with ModRM.mod == 3
 *   and reg 6, 5, 7, without a 66, f2 or f3 prefix: with one of those the same bytes are
 *   TPAUSE, UMONITOR, UMWAIT, INCSSP and others, and with a memory operand CLFLUSH,
 *   XSAVEOPT, CLWB... They cost very differently, so each kind is told apart.
 * - X86_IRQFLAG: an instruction that may change the interrupt flag: CLI (0xfa), STI (0xfb)
 *   and POPF (0x9d). POPF is counted whether or not the popped value changes IF, which
 *   the bytes cannot tell; PUSHF only reads the flags and is not counted. IRET and SYSRET
 *   also load IF, but they are the system call's and interrupt's own way out, priced with
 *   them, not an interrupt-flag change a patch adds.
 */
#ifndef IPCLAB_X86_EVENTS_H
#define IPCLAB_X86_EVENTS_H

#include <stddef.h>
#include <stdint.h>

enum {
	X86_LOCKED = 1 << 0,
	X86_MFENCE = 1 << 1,
	X86_LFENCE = 1 << 2,
	X86_SFENCE = 1 << 3,
	X86_IRQFLAG = 1 << 4,
	X86_FENCE = X86_MFENCE | X86_LFENCE | X86_SFENCE,
};

static inline unsigned int x86_events(const uint8_t *p, size_t len)
{
	int lock = 0, simd_prefix = 0;
	size_t i = 0;
	uint8_t op, modrm;

	/*
	 * Legacy prefixes in any order, then at most one REX right before the opcode (a REX
	 * followed by another prefix is ignored by the CPU, so it is simply skipped here).
	 */
	for (; i < len; i++) {
		uint8_t b = p[i];

		if (b == 0xf0)
			lock = 1;
		else if (b == 0x66 || b == 0xf2 || b == 0xf3)
			simd_prefix = 1;
		else if (b == 0x67 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26 ||
			 b == 0x64 || b == 0x65 || (b >= 0x40 && b <= 0x4f))
			continue;
		else
			break;
	}
	if (i >= len)
		return 0;
	op = p[i++];
	if (op == 0xc4 || op == 0xc5 || op == 0x62)
		return 0;	/* VEX and EVEX: vector instructions, none of the kinds above */
	if (op == 0x0f) {
		if (i + 1 < len && p[i] == 0xae) {
			modrm = p[i + 1];
			unsigned int reg = (modrm >> 3) & 7;

			if ((modrm >> 6) == 3 && !simd_prefix && !lock && reg >= 5)
				return reg == 5 ? X86_LFENCE : reg == 6 ? X86_MFENCE : X86_SFENCE;
		}
		return lock ? X86_LOCKED : 0;
	}
	if ((op == 0x86 || op == 0x87) && i < len && (p[i] >> 6) != 3)
		return X86_LOCKED;
	if (op == 0xfa || op == 0xfb || op == 0x9d)
		return X86_IRQFLAG;
	return lock ? X86_LOCKED : 0;
}

#endif
