# SPDX-License-Identifier: MIT
"""How a guest keeps time: the mode (ipclab/mode.py: timed, or deterministic under icount)
with the QEMU options and records that say so."""

from __future__ import annotations

import dataclasses
import functools
import re

from ipclab import Error, proc
from ipclab.mode import DETERMINISTIC_REPS, ICOUNT_SHIFT, Mode  # noqa: F401 (vm's names)

DETERMINISTIC_CPUS = 1


@dataclasses.dataclass(frozen=True, eq=False)
class Clock(Mode):
    """The mode (ipclab/mode.py) as a guest keeps time: the QEMU options and the boot record
    that say so. The command line's one decision is a Clock, passed down as it is."""

    def qemu_opts(self, accel: str = "kvm") -> list[str]:
        # QEMU runs TCG single-threaded whenever icount is on. sleep=off: an idle guest
        # jumps to its next timer at once instead of waiting for the host's clock, which
        # keeps host time out of the guest's entirely.
        if self.deterministic:
            return ["-icount", f"shift={self.shift},sleep=off"]
        # Timed TCG asks for a host thread per vCPU, so that two vCPUs really run at once
        # (what the SMP counts rely on) rather than taking turns, whatever QEMU's default.
        return ["-accel", "tcg,thread=multi"] if accel == "tcg" else []

    def kernel_args(self, accel: str) -> list[str]:
        """What an x86 guest's command line needs to keep this mode's time.

        Timed TCG: QEMU derives every vCPU's TSC from the one host clock, so it is in sync,
        but a vCPU starved of host time misses the clocksource watchdog's cross-CPU reads.
        The watchdog then marks the TSC unstable mid-run and moves the guest to the HPET,
        whose reads trap to QEMU, so timings change under the run. Production-config
        guests under --memory-pressure also died at that moment, without a word on the
        console (vng exit 255). tsc=reliable keeps the TSC, and its watchdog off."""
        return ["tsc=reliable"] if accel == "tcg" and not self.deterministic else []

    def record(self, accel: str, cpus: int) -> dict:
        rec = {"mode": self.name, "accel": accel, "cpus": cpus, "qemu": qemu_version(),
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
