# SPDX-License-Identifier: MIT
"""A suite in the arm64 guest: the engine invocations of the run's plan (runner's cells,
order and seed), one `run` step of the init's job each; afterwards runner.execute replays
the plan on the host, each sample read back from what the guest left instead of running
the engine. So the results file is the one `ipclab run` writes, sample for sample.

With --profile (deterministic: profile.py's marker way) the job then runs each cell once
more as a `marked` step, which the init brackets with the profile's marker system call as
`ipclab run --profile-by marker` does on x86; the host reads those runs back into the
profile file the x86 guest would have left, and ab.run_suite_boot names the plugin's
addresses with the image's System.map as on x86.
"""

from __future__ import annotations

import collections
import os
from pathlib import Path

from ipclab import Error, engine, peers, proc, profile, results, runner, schedule, suites

from .. import vm
from . import guest
from .guest import CPU, GUEST_ENGINE
from .steps import job_text, read_step


def plan(job: vm.SuiteJob, order_seed: int):
    """(results, cells, steps): a new results file for the job's run, its cells, and the
    engine invocations of its plan, in the order `ipclab run` would make them."""
    suite, mode, cells, reps, warmups = runner.plan(job.suite, full=job.mode == suites.FULL,
                                                    reps=job.reps, warmups=job.warmups)
    if job.cells:
        cells = suites.select(cells, job.cells)
    res = results.new(runner.default_id(suite.name, mode), suite.name, mode, cells, reps,
                      warmups, order_seed)
    steps = []
    for slot in schedule.build(len(cells), reps, warmups, order_seed):
        cell = cells[slot.cell]
        if not peers.is_peer(cell):
            steps.append((f"s{len(steps):05d}", engine.argv_for(GUEST_ENGINE, cell, "tcg")))
    return res, cells, steps


def replay(shared: Path, cells, steps):
    """runner.execute's `run` for a guest's samples: the k-th sample of a cell is what the
    guest's k-th invocation of it left (exit status, stdout, stderr)."""
    by_cell = collections.defaultdict(collections.deque)
    for name, argv in steps:
        by_cell[tuple(argv)].append(name)

    def run(_engine, cell):
        if peers.is_peer(cell):
            return engine.CellRun("skipped", error="peer programs are not in the arm64 guest")
        argv = engine.argv_for(GUEST_ENGINE, cell, "tcg")
        names = by_cell.get(tuple(argv))
        if not names:
            return engine.CellRun("failed", error="not in the guest's job", argv=argv)
        return read_step(shared, names.popleft(), argv)
    return run


def check_job(job: vm.SuiteJob) -> None:
    """Error for what a suite job asks that the arm64 guest cannot do."""
    if job.profile_by and job.profile_by != "marker":
        raise Error("--profile on arm64 needs --deterministic: a timed guest profiles with "
                    "perf, which the arm64 guest does not have")


def profile_steps(cells) -> list[tuple[str, suites.Cell, list[str]]]:
    """The profile's marked runs: each cell once, in the cells' order, as `ipclab run
    --profile-by marker` makes them (profile.profile_cells), its window the plugin's
    2i + 1. Not the peers' cells, which the guest cannot run: a cell without a marked run
    would leave no window, and the cells after it would take the wrong ones."""
    return [(f"p{i:05d}", cell, engine.argv_for(GUEST_ENGINE, cell, "tcg"))
            for i, cell in enumerate(c for c in cells if not peers.is_peer(c))]


def read_profile(shared: Path, out: Path, marked) -> dict:
    """The profile file `ipclab run --profile-by marker` would have left at `out`, from the
    guest's marked runs (profile_steps): each cell's operations, or why it has none."""
    by_key = {cell.key: (name, argv) for name, cell, argv in marked}
    return profile.profile_cells(GUEST_ENGINE, [cell for _, cell, _ in marked], out,
                                 by="marker", marked=lambda cell: profile.marked_record(
                                     read_step(shared, *by_key[cell.key]), cell))


def boot_suite(meta: dict, job: vm.SuiteJob, shared: Path, *, thp: str, timeout: float,
               clock: vm.Clock, cpus: int | None, insn_counts: Path | None,
               plugin_memory: str) -> vm.Boot:
    """One arm64 boot running a suite job; its results written to shared/job.RESULTS as
    the guest's `ipclab run` would have, unless the guest ran nothing."""
    check_job(job)
    order_seed = int.from_bytes(os.urandom(4), "little") >> 1
    res, cells, steps = plan(job, order_seed)
    marked = profile_steps(cells) if job.profile_by else []
    env = {"IPCBENCH_ACCEL": "tcg", "IPCBENCH_CLOCK": clock.engine_clock()}
    if insn_counts is not None:
        env["IPCBENCH_MARK"] = str(shared / vm.MARKS)
    text = "" if proc.is_dry_run() else job_text(env, thp, clock, steps, marked=[
        (name, argv) for name, _, argv in marked])
    b = guest.boot(meta, shared, text,
                   [GUEST_ENGINE, f"({len(steps) + len(marked)} invocations)"],
                   thp=thp, timeout=timeout, clock=clock, cpus=cpus, insn_counts=insn_counts,
                   plugin_memory=plugin_memory)
    if proc.is_dry_run() or not (shared / "started").exists():
        return b
    res["host"] = {"machine": b.status.get("machine"), "kernel": b.status.get("release"),
                   "nproc": b.status.get("nproc"), "cpu": f"QEMU {CPU}"}
    path = shared / job.RESULTS
    side = runner.Side(res, cells, GUEST_ENGINE, str(path))
    runner.execute([side], quiet=True, run=replay(shared, cells, steps))
    if marked:
        read_profile(shared, shared / job.PROFILE, marked)
    return b
