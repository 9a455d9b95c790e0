# SPDX-License-Identifier: MIT
"""Kernel lab, the arm64 backend (--arch arm64): boots qemu-system-aarch64 with the lab's own
static initramfs (guest.py), whose init runs a job of steps the host writes and reads back
(steps.py), since the guest has neither the host's root nor Python nor a shell. What the
x86 guest's Python does, the host does on both sides of the boot: a suite's plan and its
samples (suite.py), the census driver's part (census.py), run.sh's (conformance.py)."""

from __future__ import annotations

from pathlib import Path

from ipclab import Error

from .. import vm
from . import census, conformance, suite


class Arm64(vm.Backend):
    arch = "arm64"

    def check_suite(self, job):
        suite.check_job(job)

    def suite(self, meta, accel, job, shared, *, thp, timeout, faults, kmemleak, clock, cpus,
              insn_counts, plugin_memory):
        if faults or kmemleak:
            raise Error("fault injection and kmemleak are in the arm64 guest for its "
                        "conformance tests only (vm run VARIANT --arch arm64 --conformance)")
        return suite.boot_suite(meta, job, shared, thp=thp, timeout=timeout, clock=clock,
                                cpus=cpus, insn_counts=insn_counts,
                                plugin_memory=plugin_memory)

    def command(self, meta, argv, **kw):
        raise Error("vm run -- COMMAND: the arm64 guest has no shell or host root to run a "
                    "command in; run a suite (vm run VARIANT SUITE --arch arm64) or the "
                    "conformance tests (vm run VARIANT --arch arm64 --conformance)")

    def conformance(self, meta, job, *, thp, timeout, faults, kmemleak, clock, cpus):
        return conformance.run(meta, job, thp=thp, timeout=timeout, clock=clock, cpus=cpus,
                               faults=faults, kmemleak=kmemleak)

    def census_plan(self, job, workdir: Path):
        return census.plan(job.driver, list(job.names), workdir, named=job.named)

    def census(self, meta, kern, job, plan, *, clock, cpus, timeout):
        return census.boot(job.driver, meta, plan, clock=clock, cpus=cpus, timeout=timeout)


BACKEND = Arm64()
