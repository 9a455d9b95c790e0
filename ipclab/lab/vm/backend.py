# SPDX-License-Identifier: MIT
"""The one boot interface: what a command of the lab asks of a guest, whatever its
architecture. Each architecture has one Backend (lab/backends.py picks it): x86's boots the
host's root with virtme-ng and its Python runs the job (lab/x86.py); arm64's boots
qemu-system-aarch64 with the lab's own static initramfs, whose init runs the job as steps
the host writes and reads back (lab/arm64/). A backend owns only that: the QEMU command
line, how a job gets into the guest and how its output comes back. What the lab does with
it (the suite's results, the census's table, the conformance tests' KTAP, a fault run's
row) and judging a boot (vm.boot) are the same for both."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .boot import Boot
from .clock import Clock
from .job import CensusJob, ConformanceJob, SuiteJob


@dataclasses.dataclass
class GuestRun:
    """What a command or the conformance tests did in one boot: the boot, their output
    (the job's, or the KTAP the host wrote for a guest without run.sh), and the exit status
    the host judged (None: the boot's verdict says it)."""
    boot: Boot
    output: str = ""
    judged_rc: int | None = None


class Backend:
    """One architecture's way to boot a kernel and run a job in it. Every method boots
    through vm.boot, which judges the boot; none returns before the boot is over. A dry
    run says what it would boot and returns the boot vm.boot describes."""
    arch: str = ""

    def check_suite(self, job: SuiteJob) -> None:
        """Error (exit 2) for what a suite job asks that this guest cannot do, before
        anything is built."""

    def suite(self, meta: dict, accel: str, job: SuiteJob, shared: Path, *, thp: str,
              timeout: float, faults: dict | None, kmemleak: bool, clock: Clock,
              cpus: int | None, insn_counts: Path | None, plugin_memory: str) -> Boot:
        """One boot running a suite job: its results left at shared/job.RESULTS (and its
        profile at shared/job.PROFILE) as the guest's `ipclab run` leaves them."""
        raise NotImplementedError

    def command(self, meta: dict, argv: list[str], *, thp: str | None, timeout: float,
                faults: dict | None, kmemleak: bool, clock: Clock, cpus: int | None,
                extra_env: dict | None = None) -> GuestRun:
        """One boot running a command of the host's root; Error where the guest has none."""
        raise NotImplementedError

    def conformance(self, meta: dict, job: ConformanceJob, *, thp: str | None,
                    timeout: float, faults: dict | None, kmemleak: bool, clock: Clock,
                    cpus: int | None) -> GuestRun:
        """One boot running the conformance tests, their output as run.sh's KTAP."""
        raise NotImplementedError

    def census_plan(self, job: CensusJob, workdir: Path):
        """What the census needs before the kernel is built (workloads built for the guest
        in `workdir`, which lasts the boot); Error (exit 2) for a named workload the guest
        cannot run."""
        return None

    def census(self, meta: dict, kern, job: CensusJob, plan, *, clock: Clock, cpus: int,
               timeout: float) -> tuple[Boot, list[dict]]:
        """One boot running the census's workloads: (boot, the driver's rows); no rows in
        a dry run."""
        raise NotImplementedError
