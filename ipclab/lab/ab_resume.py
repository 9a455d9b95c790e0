# SPDX-License-Identifier: MIT
"""`ab ... -o DIR --resume`: the boots an earlier `ab` into DIR completed are kept, and only
the missing and failed ones boot again (a Slurm job cancelled, out of its time limit or on a
node that drained; a guest that died; Ctrl-C). The command line stays the plan: a kept boot
is one of exactly these kernels (their builds' identity), this suite, mode, clock, cells and
repetitions. A boot file of another plan is refused, not overwritten."""

from __future__ import annotations

from pathlib import Path

from ipclab import Error, results, runner, suites
from ipclab.progress import log

from . import kernel, vm


def _expected(job: vm.SuiteJob) -> tuple[list[str], int]:
    """The cell keys and repetitions `ipclab run` plans in the guest for this job."""
    chosen, reps, _ = runner.planned_cells(job.suite, job.mode == suites.FULL, job.reps,
                                           job.warmups, job.cells)
    return [c.key for c in chosen], reps


def _other_plan(res: dict, meta: dict, job: vm.SuiteJob, clock: vm.Clock,
                keys: list[str], reps: int) -> str | None:
    """What makes a boot file one of another `ab`, or None."""
    m = res.get("meta") or {}
    if res.get("suite") != job.suite or res.get("mode") != job.mode:
        return f"suite {res.get('suite')} --{res.get('mode')}"
    if m.get("build") != kernel.identity(meta):
        return f"another build of {m.get('variant', '?')}"
    if (m.get("clock") or {}).get("mode") not in (None, clock.mode):
        return f"the {m['clock']['mode']} mode"
    if not (m.get("lab") or {}).get("ok", True) and len(res.get("cells") or []) == 1 and \
            results.is_lab_cell(res["cells"][0]):
        return None         # a boot that left no results: its one failed cell says so
    if [c.get("key") for c in res.get("cells") or []] != keys:
        return "other cells"
    if (res.get("plan") or {}).get("reps") != reps:
        return f"{(res.get('plan') or {}).get('reps')} repetitions"
    return None


def kept_boots(planned: list, job: vm.SuiteJob, clock: vm.Clock) -> dict[Path, tuple]:
    """{results path: (results, Boot)} of the planned boots (executor.SuiteBoot) whose file
    holds a completed boot of this plan; Error (exit 2) for a file of another plan."""
    keys, reps = _expected(job)
    kept = {}
    for p in planned:
        if not p.out.exists():
            continue
        try:
            res = results.load(p.out)
        except Error as e:
            log(f"ab: {p.label}: {e}; boots again")
            continue
        other = _other_plan(res, p.meta, job, clock, keys, reps)
        if other:
            raise Error(f"--resume: {p.out} is a boot of another ab ({other}); give the same "
                        "kernels, suite and options, or another -o DIR")
        lab = (res.get("meta") or {}).get("lab")
        ok = res.get("complete") and lab and lab.get("ok") and \
            all(c.get("status") == "ok" for c in res["cells"])
        if not ok:
            log(f"ab: {p.label}: failed or incomplete in {p.out.name}; boots again")
            continue
        kept[p.out] = (res, vm.Boot.from_record(lab))
        log(f"ab: {p.label}: kept from {p.out.name}")
    return kept
