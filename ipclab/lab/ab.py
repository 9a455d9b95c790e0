# SPDX-License-Identifier: MIT
"""Kernel lab, driving boots: `vm run` (one boot of a variant, running a command or a suite)
and `ab` (boots of two variants, alternately or side by side, pooled per side and compared).

A suite boot is the same `ipclab run SUITE` as on the host: the suite is checked here before
any build or boot, the guest gets a structured job (vm.SuiteJob), and its results come back
untagged: tag_boot() says where they were measured, through results.py, and results.py's
merge_boots() pools an A/B side's boots.

What a command did comes back as data (VmRun, ABRun); ipclab/report/lab.py prints it. Here
only the progress of boots is logged, on stderr.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from pathlib import Path

from ipclab import Error, compare, proc, profile, results, runner, suites
from ipclab import step_times, upstream
from ipclab.deterministic import cost
from ipclab.progress import log

from . import backends, kernel, variants, vm
from . import ab_resume, executor as executors


def suite_job(suite: str, clock: vm.Clock, *, full: bool = False,
              reps: int | None = None, warmups: int | None = None,
              profile: bool = False, cells: tuple[str, ...] = (),
              arch: str | None = None) -> vm.SuiteJob:
    """The guest's job for a suite; Error (exit 2) for an unknown suite, or what the arch's
    guest cannot do, on the host, before anything is built or booted."""
    suites.check(suite)
    reps = reps or clock.reps
    # Under icount, QEMU counts every instruction exactly from outside the guest; the guest
    # only marks where each cell starts and ends. Timed guests sample with perf inside.
    profile_by = ("marker" if clock.deterministic else "perf") if profile else None
    # The guest's plan, checked as `ipclab run` there would check it, before a boot.
    chosen, n_reps, n_warmups = runner.planned_cells(suite, full, reps, warmups, cells)
    runner.check_size(chosen, n_reps, n_warmups)
    # Upstream's benchmarks are built here, before a boot, so that a build error is the
    # host's one line; the guest gets them in its shared directory.
    if not proc.is_dry_run():
        upstream.prebuild(chosen)
    job = vm.SuiteJob(suite, suites.FULL if full else suites.QUICK, reps, warmups, profile_by,
                      tuple(cells))
    backends.for_arch(arch).check_suite(job)
    return job


def reps_text(job: vm.SuiteJob) -> str:
    return f"{job.reps} reps" if job.reps else "the suite's reps"


def patch_names(meta: dict) -> str:
    return ",".join(p["name"] for p in meta["patches"]) or "none"


# --------------------------------------------------------------------------- one boot


def tag_boot(res: dict, boot: vm.Boot, meta: dict) -> dict:
    """Say where a guest's results were measured; a failed boot fails their cells, with the
    evidence (the kernel's lines, or the console tail when the guest died)."""
    results.tag(res, variant=meta["variant"], kernel=boot.release or meta["release"],
                patches=patch_names(meta), build=kernel.identity(meta), accel=boot.accel,
                emulated=boot.accel == "tcg", clock=boot.clock, lab=boot.record())
    if not boot.ok:
        evidence = "\n".join(boot.bad_lines[:10]) if boot.bad_lines else boot.console_tail
        results.fail_all(res, f"lab: {boot.reason}\n{evidence}".strip())
    return res


def guest_results(path: Path, boot: vm.Boot, meta: dict) -> dict | None:
    """The results the guest wrote at `path`, tagged (the guest's file is left as it wrote
    it: the tagged results are written once, where the caller keeps them); None if it wrote
    none."""
    try:
        res = results.load(path)
    except Error:
        return None
    return tag_boot(res, boot, meta)


def no_results(job: vm.SuiteJob, boot: vm.Boot, meta: dict, run_id: str) -> dict:
    """A results file for a boot that produced none: one failed cell carrying the evidence,
    so that the failure is on record where the results would have been."""
    cell = suites.Cell(f"{results.LAB_CELL}boot:{meta['variant']}", "boot", [], suite=job.suite)
    res = results.new(run_id, job.suite, job.mode, [cell], job.reps, job.warmups, None)
    return tag_boot(res, boot, meta)


def last_line(path: Path) -> str:
    with contextlib.suppress(OSError):
        lines = path.read_text(errors="replace").strip().splitlines()
        return lines[-1][:200] if lines else ""
    return ""


def run_suite_boot(meta: dict, accel: str, job: vm.SuiteJob, out: Path, *,
                   thp: str | None = None, timeout: float = 900, faults: dict | None = None,
                   kmemleak: bool = False, clock: vm.Clock,
                   cpus: int | None = None,
                   memory: str = vm.DEFAULT_PLUGIN_MEMORY) -> tuple[dict | None, vm.Boot]:
    """Boot once, run the suite job, and write its tagged results to `out` (and the profile
    next to it). Returns (results, boot); (None, boot) in a dry run.

    Deterministic boots load the QEMU plugin: each sample then gets the cost model's counts
    of its measured section (memory: what of memory, vm.PLUGIN_MEMORY)."""
    shared = vm.new_shared(variants.slug(meta["variant"]), job.suite)
    insn_counts = job.insn_counts(shared, clock)
    # `ipclab run` exits 1 when a cell failed; the cells say which, so only the kernel and
    # the guest (dead, hung, splat, no results) can fail the whole boot.
    thp = thp or vm.suite_thp(job.suite) or "madvise"
    b = backends.for_arch(meta.get("arch")).suite(
        meta, accel, job, shared, thp=thp, timeout=timeout, faults=faults, kmemleak=kmemleak,
        clock=clock, cpus=cpus, insn_counts=insn_counts, plugin_memory=memory)
    if proc.is_dry_run():
        return None, b
    step_times.note_boot(shared, b.record(), meta.get("arch", "x86_64"), job.suite)
    res = guest_results(shared / job.RESULTS, b, meta)
    if res is None:
        # The guest died first, or `ipclab run` failed before its first save.
        b.ok = False
        if not b.reason:
            why = last_line(shared / "job.out")
            b.reason = "the suite wrote no results" + (f" ({why})" if why else "")
        res = no_results(job, b, meta, shared.name)
    model = cost.load_model()
    if insn_counts is not None and insn_counts.exists():
        marks = shared / vm.MARKS
        try:
            costs = cost.sample_costs(res, insn_counts, model,
                                           marks.stat().st_size if marks.exists() else 0)
        except Error as e:
            log(f"warning: {meta['variant']}: {e}")
            costs = {}
        results.set_costs(res, costs, cost.model_record(model, memory))
    results.save(res, out)
    guest_profile = shared / job.PROFILE
    if job.profile_by and guest_profile.exists():
        prof = profile.load(guest_profile)
        if prof is not None:
            if insn_counts is not None and insn_counts.exists():
                profile.attach_counts(prof, insn_counts,
                                      kernel.image_dir(meta["key"]) / "System.map", model)
            proc.write_json_atomic(profile_path(out), prof)
    return res, b


def profile_path(results_path: Path) -> Path:
    return results_path.with_suffix(".profile.json")


def boot_verdict(b: vm.Boot) -> list[str]:
    """The boot's verdict as lines, with the evidence when it failed."""
    tm = ", ".join(f"{k}={v}" for k, v in b.timings.items())
    notes = [f"guest note: {n}" for n in b.status.get("notes", [])]
    if b.ok:
        return [f"{b.variant} ({b.release}, accel={b.accel}): ok [{tm}]"] + notes
    lines = [f"{b.variant} ({b.release}, accel={b.accel}): FAILED: {b.reason} [{tm}]"]
    lines += [f"  kernel: {line}" for line in b.bad_lines[:10]] + notes
    if b.console_tail and (b.rc is None or not b.status):
        lines.append("console tail:\n" + b.console_tail)
    return lines + [f"evidence: {b.shared}"]


def report_boot(b: vm.Boot, record: Path | None) -> None:
    """The boot's verdict on stderr, as the boots of an ab or a fault run go; its record to
    `record` if given."""
    if record:
        proc.write_json_atomic(record, b.record())
    for line in boot_verdict(b):
        log(line)


# --------------------------------------------------------------------------- vm run


@dataclasses.dataclass
class VmRun:
    """What `vm run` did: the boot (its verdict, record and evidence), and for a suite the
    tagged results and where they are, for a command the command's output."""
    boot: vm.Boot
    accel: str
    clock: vm.Clock
    results: dict | None = None
    out: Path | None = None
    output: str = ""
    # A command whose output the host judges (the arm64 guest's conformance tests, printed
    # as run.sh's KTAP): its exit status, as run.sh's would be.
    judged_rc: int | None = None

    @property
    def verdict(self) -> list[str]:
        return boot_verdict(self.boot)

    @property
    def failed_cells(self) -> list[str]:
        return [c["key"] for c in (self.results or {}).get("cells", [])
                if c.get("status") == "failed"]

    @property
    def command_rc(self) -> int | None:
        """The command's own exit status when it ran and failed; None otherwise."""
        if self.judged_rc is not None:
            return self.judged_rc or None
        b = self.boot
        return b.rc if not b.ok and (b.reason or "").startswith("job exited") and b.rc else None


def vm_command(kern: variants.Variant | dict, command: list[str], *,
               thp: str | None = None, timeout: float = 900, faults: dict | None = None,
               kmemleak: bool = False, clock: vm.Clock, cpus: int | None = None,
               record: Path | None = None) -> VmRun | None:
    """`vm run VARIANT -- CMD`: the boot and the command's output; None in a dry run."""
    meta = kernel.obtain(kern)
    run = backends.for_arch(meta.get("arch")).command(
        meta, command, thp=thp, timeout=timeout, faults=faults, kmemleak=kmemleak,
        clock=clock, cpus=cpus)
    return _vm_run(run, clock, record)


def vm_conformance(kern: variants.Variant | dict, tests: list[str] = (), *,
                   thp: str | None = None, timeout: float = 900, faults: dict | None = None,
                   kmemleak: bool = False, clock: vm.Clock, cpus: int | None = None,
                   record: Path | None = None,
                   environ: dict | None = None) -> VmRun | None:
    """`vm run VARIANT --conformance [-- TEST...]` and a fault run's boot: the conformance
    tests (all, or these) in one boot, as KTAP, with run.sh's variables from `environ`
    (CT_STRESS_ARGS...; on arm64 the host's when None); None in a dry run."""
    vm.ConformanceJob.check(tests)
    meta = kernel.obtain(kern)
    run = backends.for_arch(meta.get("arch")).conformance(
        meta, vm.ConformanceJob(tuple(tests), environ), thp=thp, timeout=timeout,
        faults=faults, kmemleak=kmemleak, clock=clock, cpus=cpus)
    return _vm_run(run, clock, record)


def _vm_run(run: vm.GuestRun, clock: vm.Clock, record: Path | None) -> VmRun | None:
    if proc.is_dry_run():
        return None
    if record:
        proc.write_json_atomic(record, run.boot.record())
    return VmRun(run.boot, run.boot.accel, clock, output=run.output, judged_rc=run.judged_rc)


def vm_suite(kern: variants.Variant | dict, job: vm.SuiteJob, out: Path | None = None, *,
             thp: str | None = None, timeout: float = 900,
             faults: dict | None = None, kmemleak: bool = False, clock: vm.Clock,
             cpus: int | None = None, record: Path | None = None,
             memory: str = vm.DEFAULT_PLUGIN_MEMORY, executor=None) -> VmRun | None:
    """`vm run VARIANT SUITE`: the boot, and its tagged results written to `out` (default
    results/...); None in a dry run. The build and the boot run where `executor` puts them
    (here by default; a Slurm job boots without faults or kmemleak)."""
    executor = executor or executors.Local()
    meta = executor.images({"A": kern}, clock)["A"]
    try:
        accel = _before_boots({"A": meta}, job, clock)
    except BaseException:
        executor.cancel()       # the build job it submitted
        raise
    out = Path(out or Path("results") /
               f"{proc.stamp()}-vm-{variants.slug(meta['variant'])}-{job.suite}.json")

    def boot_here(p: executors.SuiteBoot):
        return run_suite_boot(p.meta, accel, job, p.out, thp=thp, timeout=timeout,
                              faults=faults, kmemleak=kmemleak, clock=clock, cpus=cpus,
                              memory=memory)
    # the caller reports the boot (labreport.vm_suite)
    here = executors.Here(boot_here, lambda p, b, run_id: no_results(job, b, p.meta, run_id),
                          lambda b: None)
    [(res, b)] = executor.run_boots([executors.SuiteBoot("the boot", meta, out.resolve())],
                                    executors.BootOpts(accel, job, clock, thp=thp,
                                                       timeout=timeout, cpus=cpus,
                                                       memory=memory), here)
    if proc.is_dry_run():
        return None
    if record:
        proc.write_json_atomic(record, b.record())
    return VmRun(b, accel, clock, results=res, out=out)


# --------------------------------------------------------------------------- ab


# bisect boots through them too.
boot_in_order = executors.boot_in_order
boot_parallelism = executors.boot_parallelism


def log_estimate(metas: dict, job: vm.SuiteJob, clock: vm.Clock, cpus: int | None,
                 boots: int) -> None:
    """A dry run's estimate of its builds and its boots (step_times)."""
    step = step_times.boot_step(metas["A"].get("arch", "x86_64"), job.suite, clock.mode,
                                cpus or vm.default_cpus(clock))
    for line in step_times.plan_lines(step_times.Estimator(), list(metas.values()),
                                      [("boots", step, boots, boot_parallelism(clock), 1)]):
        log(line)


@dataclasses.dataclass
class ABRun:
    """What `ab` did: each side's variant and build, the pooled results and where they are,
    the comparison (computed once: `outcome`, and `record` its data as compare.json holds
    it), the first boot's profiles (with --profile) and the boots that failed."""
    names: dict
    builds: dict
    suite: str
    boots: int
    accel: str
    clock: vm.Clock
    outdir: Path
    merged: dict
    outcome: object
    record: dict
    profiles: list | None
    failures: list


def _before_boots(metas: dict, job: vm.SuiteJob, clock: vm.Clock) -> str:
    """The accelerator the boots use; with a profile, the plugin built once and each image
    able to name its addresses (one that a Slurm job builds: its boots see to it)."""
    accel = vm.accel_for(kernel.image_path(metas["A"]), clock, metas["A"].get("arch"))
    if job.profile_by == "marker" and not proc.is_dry_run():
        for meta in metas.values():
            if not meta.get("to_build"):
                vm.ensure_symbols(meta)
                vm.insn_plugin_opts(meta, Path(os.devnull))
    return accel


def run_ab(old: variants.Variant | dict, new: variants.Variant | dict, job: vm.SuiteJob, *,
           boots: int, clock: vm.Clock, thp: str | None = None, timeout: float = 1800,
           cpus: int | None = None,
           outdir: Path | None = None, min_change: float = compare.MIN_CHANGE,
           memory: str = vm.DEFAULT_PLUGIN_MEMORY, executor=None,
           resume: bool = False) -> ABRun | None:
    """`ab OLD NEW --suite SUITE`: boot both variants `boots` times each, pool each side's
    boots and compare them (and, with a profile, keep where the instructions went). The
    boots run where `executor` (executors.choose) puts them: here by default. `resume`: the
    boots of `outdir` that completed are kept, only the others boot (ab_resume). None in a
    dry run."""
    t0 = time.monotonic()
    log(f"ab: {clock.name} mode: {boots} boot(s) of each side, {reps_text(job)} per cell,"
        f" times in {clock.unit}")
    executor = executor or executors.Local()
    metas = executor.images({"A": old, "B": new}, clock)
    names = {side: meta["variant"] for side, meta in metas.items()}
    outdir = Path(outdir or Path("results") / f"{proc.stamp()}-ab-{variants.slug(names['A'])}-"
                  f"{variants.slug(names['B'])}-{job.suite}")

    # A B A B ...: drift in the host (other jobs, thermal, caches) hits both sides alike.
    order = [(i, side) for i in range(boots) for side in names]
    planned = [executors.SuiteBoot(
        f"boot {i + 1}/{boots} of {side}", metas[side],
        outdir / f"{side}-{variants.slug(metas[side]['variant'])}-boot{i + 1}.json")
        for i, side in order]
    try:
        accel = _before_boots(metas, job, clock)
        kept = ab_resume.kept_boots(planned, job, clock) if resume else {}
    except BaseException:
        executor.cancel()       # the build jobs it submitted
        raise
    opts = executors.BootOpts(accel, job, clock, thp=thp, timeout=timeout, cpus=cpus,
                              memory=memory)

    def boot_here(p: executors.SuiteBoot):
        log(f"ab: {p.label} ({p.meta['variant']}, {clock.mode})")
        res, b = run_suite_boot(p.meta, accel, job, p.out, thp=thp, timeout=timeout,
                                clock=clock, cpus=cpus, memory=memory)
        if not proc.is_dry_run():
            report_boot(b, None)
        return res, b

    here = executors.Here(boot_here, lambda p, b, run_id: no_results(job, b, p.meta, run_id),
                          lambda b: report_boot(b, None))
    todo = [p for p in planned if p.out not in kept]
    ran = dict(zip((p.out for p in todo), executor.run_boots(todo, opts, here)))
    done = [(*(kept.get(p.out) or ran[p.out]), p.out) for p in planned]
    if proc.is_dry_run():
        log_estimate(metas, job, clock, cpus, len(order))
        return None

    metas = {side: kernel.built_meta(meta) for side, meta in metas.items()}
    per_side: dict[str, list[dict]] = {"A": [], "B": []}
    first_out: dict[str, Path] = {}
    failures = []
    for (i, side), (res, b, out) in zip(order, done):
        if not b.ok:
            failures.append(f"{side} boot {i + 1}: {b.reason}")
        per_side[side].append(res)
        first_out.setdefault(side, out)
    try:
        merged = {}
        for side, name in names.items():
            merged[side] = results.merge_boots(per_side[side], f"{side}:{name}")
            results.save(merged[side], outdir / f"{side}-{variants.slug(name)}-merged.json")
        outcome = compare.compare_results(merged["A"], merged["B"], min_change=min_change)
        record = compare.outcome_record(outcome)
        proc.write_json_atomic(outdir / "compare.json", record)
        profiles = None
        if job.profile_by:
            profiles = [profile.load(profile_path(first_out[side])) for side in names]
    finally:
        log(f"ab: {len(todo)} boots in {time.monotonic() - t0:.0f} s"
            + (f" ({len(kept)} kept from before)" if kept else "") + f"; results in {outdir}")
        for f in failures:
            log(f"ab: failed {f}")
    return ABRun(names, {side: kernel.identity(meta) for side, meta in metas.items()},
                 job.suite, boots, accel, clock, outdir, merged, outcome, record,
                 profiles if profiles and all(profiles) else None, failures)
