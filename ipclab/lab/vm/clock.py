# SPDX-License-Identifier: MIT
"""How a guest keeps time: timed (KVM, or TCG whose time is emulation noise) or deterministic
(single-threaded TCG with icount: guest time counts guest instructions), and the QEMU
options and records that say so."""

from __future__ import annotations

import dataclasses
import functools
import re

from ipclab import Error, proc

# shift=0: one guest instruction per nanosecond of guest time, so a time is an instruction
# count. sleep=off: an idle guest jumps to its next timer at once instead of waiting for the
# host's clock, which keeps host time out of the guest's entirely.
ICOUNT_SHIFT = 0
DETERMINISTIC_CPUS = 1
# Samples repeat to a few parts in 10^4 under icount, but a multi-process cell has the odd
# outlier (a timer tick that changes who runs when). Nine is the fewest for which the
# median's 95% interval leaves out the most extreme sample on each side.
DETERMINISTIC_REPS = 9


@dataclasses.dataclass(frozen=True)
class Clock:
    """How a guest keeps time.

    timed: KVM or multi-threaded TCG; guest time follows the host's, so under TCG it is
    emulation noise. deterministic: single-threaded TCG with icount; guest time counts the
    guest's instructions, whatever the host is doing.
    """
    deterministic: bool = False
    shift: int = ICOUNT_SHIFT

    @property
    def mode(self) -> str:
        return "deterministic" if self.deterministic else "timed"

    def qemu_opts(self, accel: str = "kvm") -> list[str]:
        # QEMU runs TCG single-threaded whenever icount is on.
        if self.deterministic:
            return ["-icount", f"shift={self.shift},sleep=off"]
        # Timed TCG asks for a host thread per vCPU, so that two vCPUs really run at once
        # (what the SMP counts rely on) rather than taking turns, whatever QEMU's default.
        return ["-accel", "tcg,thread=multi"] if accel == "tcg" else []

    def engine_clock(self) -> str:
        """IPCBENCH_CLOCK in the guest: what every sample's env.clock records."""
        return f"icount shift={self.shift}" if self.deterministic else "real"

    def record(self, accel: str, cpus: int) -> dict:
        rec = {"mode": self.mode, "accel": accel, "cpus": cpus, "qemu": qemu_version(),
               # whether the vCPUs run at the same time: KVM and multi-threaded TCG do; under
               # icount they take turns, one slice of instructions each
               "vcpus_concurrent": cpus > 1 and not self.deterministic}
        if self.deterministic:
            rec["icount"] = {"shift": self.shift, "sleep": False,
                             "ns_per_instruction": 2 ** self.shift}
        return rec


TIMED = Clock()
DETERMINISTIC = Clock(deterministic=True)


@functools.lru_cache(maxsize=1)
def qemu_version() -> str | None:
    try:
        out = proc.run(["qemu-system-x86_64", "--version"], 20, capture=True).out
    except Error:           # no QEMU here
        return None
    m = re.search(r"version (\S+)", out)
    return m.group(1) if m else None
