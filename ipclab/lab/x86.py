# SPDX-License-Identifier: MIT
"""Kernel lab, the x86 backend: virtme-ng boots the kernel with the host's root (9p or
virtiofs) as the guest's, and scripts/guest-run.py runs the job there with the host's
Python (vm.boot writes it as job.json). A suite is `ipclab run` in the guest, the census
kernel/tests/wakeup-sites, the conformance tests conformance/run.sh: each writes what the
host reads, the results file or its output (job.out)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ipclab import EXIT_FAILED, Error, proc, suites, upstream

from . import kernel, source, vm

SELFTESTS = Path("tools") / "testing" / "selftests" / "mqueue"


class X86(vm.Backend):
    arch = "x86_64"

    def suite(self, meta, accel, job, shared, *, thp, timeout, faults, kmemleak, clock, cpus,
              insn_counts, plugin_memory):
        # Upstream's benchmarks, built on the host before the boot (ab.suite_job), go in
        # the shared directory: the repository is read-only in the guest.
        if not proc.is_dry_run():
            upstream.stage(suites.SUITES[job.suite].cells(job.mode), shared)
        return vm.boot(meta, accel, job.argv(shared), thp=thp, timeout=timeout, shared=shared,
                       faults=faults, kmemleak=kmemleak, watch=job.RESULTS,
                       job_rc_fails=False, clock=clock, cpus=cpus, insn_counts=insn_counts,
                       plugin_memory=plugin_memory)

    def command(self, meta, argv, *, thp, timeout, faults, kmemleak, clock, cpus,
                extra_env=None):
        accel = vm.accel_for(kernel.image_path(meta), clock, meta.get("arch"))
        b = vm.boot(meta, accel, argv, thp=thp or "madvise", timeout=timeout, faults=faults,
                    kmemleak=kmemleak, clock=clock, cpus=cpus, extra_env=extra_env)
        return vm.GuestRun(b, "" if proc.is_dry_run() else job_output(b))

    def conformance(self, meta, job, *, thp, timeout, faults, kmemleak, clock, cpus):
        # run.sh reads its variables from the guest's environment.
        return self.command(meta, job.argv(), thp=thp, timeout=timeout, faults=faults,
                            kmemleak=kmemleak, clock=clock, cpus=cpus,
                            extra_env=None if job.environ is None else dict(job.environ))

    def census(self, meta, kern, job, plan, *, clock, cpus, timeout):
        tree = None if proc.is_dry_run() else source.open_source(
            str(kern.tree) if kern.tree else None, create=False, variant=kern).tree
        build_workloads(tree, job.names)
        accel = vm.accel_for(kernel.image_path(meta), clock)
        b = vm.boot(meta, accel, job.argv(), timeout=timeout, clock=clock, cpus=cpus)
        return b, ([] if proc.is_dry_run() else job.parse(job_output(b)))


def job_output(b: vm.Boot) -> str:
    """What the guest's job printed; '' for a guest killed before its job started (a slow
    boot on a busy host), whose record and verdict must still be written."""
    with contextlib.suppress(OSError):
        return (b.shared / "job.out").read_text(errors="replace")
    return ""


def build_workloads(tree: Path | None, names) -> None:
    """make -C kernel/tests/workloads on the host, with the base's mqueue selftests when
    they are wanted; Error naming what failed."""
    argv = ["make", "-s", "-C", str(vm.CensusJob.WORKLOADS_DIR)]
    if "mqueue-selftests" in names:
        where = tree / SELFTESTS if tree else None
        if where is None and proc.is_dry_run():
            # A dry run opens no source tree: it shows where the build would look.
            where = Path("<the kernel's source tree>") / SELFTESTS
        elif where is None or not (where / "mq_perf_tests.c").is_file():
            raise Error(f"mqueue-selftests: no {SELFTESTS} in the kernel's source tree "
                        f"({tree}); leave the workload out (--workload)", EXIT_FAILED)
        argv.append(f"SELFTESTS={where}")
    if proc.would_run(argv):
        return
    done = proc.run(argv, 600, capture=True)
    if done.rc != 0:
        tail = (done.err or done.out).strip().splitlines()[-3:]
        raise Error(f"building kernel/tests/workloads failed: {' | '.join(tail)}", EXIT_FAILED)


BACKEND = X86()
