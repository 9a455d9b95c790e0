# SPDX-License-Identifier: MIT
"""Kernel lab, bisect: the first commit of a range that moves a metric.

Three parts, each testable alone:

- the search (`pick`, `conclude`) knows nothing of kernels: given the commits after GOOD up
  to BAD and a verdict for some of them ('old': like GOOD; 'new': moved like BAD; 'skip':
  did not build or boot), it names the next commit to test, or the first 'new' one once it
  is known, or, as `git bisect skip` does, the commits it could be when only skipped ones
  are left between the last old and the first new;
- the rule (`StepRule`, bisect_rule.py) turns a commit's measurement into a verdict against GOOD's: it
  builds the comparison record of GOOD's values against the commit's with compare's own
  rules (compare.compare_values, compare/record.py) and reads the row's verdict and change
  from it.  A commit has moved when the row is a change (deterministic: beyond the noise of
  the A/A floor, or how far a median could be off; timed: a significant paired test over
  the boots at the threshold as its min-change), beyond the threshold, in BAD's direction;
- `Bisect` drives them: measures GOOD and BAD, sets the rule, asks `measure(commit)` for
  each step, prints each step, and keeps a log (one JSON line per measured commit, and one
  per judged commit with its record's row) from which an interrupted bisect resumes
  without measuring anything twice. The lab's
  `measure` (`LabMeasure`) builds the commit of the user's tree (incrementally, in the
  lab's clone) and boots it with the suite; a build or boot failure is a skip.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from ipclab import EXIT_FAILED, Error, fmt, metrics, proc, results, stats
from ipclab import step_times, suites
from ipclab.deterministic import cost, floor
from ipclab.mode import Mode
from ipclab.progress import log

from . import ab, executor as executors, gittree, kernel, variants, vm
from .bisect_rule import (NEW, OLD, SKIP, Measurement, StepRule, check_power,  # noqa: F401
                          check_timed_boots, decide, default_threshold, noise_text, row_of)
from .metric import (better_of, check_metric, find_cell, metric_path,  # noqa: F401 (cli's)
                     metric_spec)
LOG_NAME = "bisect.jsonl"


def pct(x: float) -> str:
    return fmt.pct(x, decimals=2)


# --------------------------------------------------------------------------- the search


def bounds(commits: list[str], verdicts: dict[str, str]) -> tuple[int, int]:
    """(lo, hi): the index of the last commit known old (-1: GOOD itself) and of the first
    known new after it (the last index: BAD)."""
    lo = max((i for i, c in enumerate(commits) if verdicts.get(c) == OLD), default=-1)
    hi = min((i for i, c in enumerate(commits) if i > lo and verdicts.get(c) == NEW),
             default=len(commits) - 1)
    return lo, hi


def pick(commits: list[str], verdicts: dict[str, str]) -> str | None:
    """The next commit to test: the untested one nearest the middle of what is left (the
    lower one on a tie); None when nothing untested is left."""
    lo, hi = bounds(commits, verdicts)
    left = [i for i in range(lo + 1, hi) if commits[i] not in verdicts]
    if not left:
        return None
    mid = (lo + hi) / 2
    return commits[min(left, key=lambda i: (abs(i - mid), i))]


def conclude(commits: list[str], verdicts: dict[str, str]) -> list[str]:
    """The commits the first new one can be, once pick() has nothing left: one, or the
    skipped ones before the first known new, and that one."""
    lo, hi = bounds(commits, verdicts)
    return commits[lo + 1:hi + 1]


def steps_left(commits: list[str], verdicts: dict[str, str]) -> int:
    """About how many more steps (log2 of the commits still in question)."""
    lo, hi = bounds(commits, verdicts)
    n = sum(1 for c in commits[lo + 1:hi] if c not in verdicts)
    return math.ceil(math.log2(n + 1)) if n else 0


# --------------------------------------------------------------------------- the driver


@dataclasses.dataclass
class Params:
    """What a bisect is; the first line of its log, so that --resume needs nothing else."""
    tree: str
    good: str                   # commit ids
    bad: str
    suite: str
    metric: str                 # CELL[:PATH] as given
    threshold: float | None     # relative; None: default_threshold
    mode: vm.Clock              # the command line's; the log keeps it as {"deterministic", "shift"}
    boots: int
    reps: int | None = None
    warmups: int | None = None
    cpus: int | None = None
    config: str | None = None
    cost: str = vm.DEFAULT_PLUGIN_MEMORY  # what the plugin counts of memory (deterministic)
    arch: str = variants.DEFAULT_ARCH

    def __post_init__(self):
        if isinstance(self.mode, dict):         # read back from a log (asdict made it a dict)
            self.mode = vm.Clock(**self.mode)
        if not isinstance(self.mode, Mode):
            raise TypeError(f"Params.mode: a Mode, not {self.mode!r}")
        if not isinstance(self.mode, vm.Clock):
            self.mode = vm.Clock(self.mode.deterministic, self.mode.shift)

    @classmethod
    def from_log(cls, d: dict) -> Params:
        """The params a log's first line holds; a log of the older code held the mode as a
        bool, `deterministic`, which is read here, once, into the mode."""
        d = dict(d)
        if "deterministic" in d:
            d["mode"] = vm.Clock.chosen(d.pop("deterministic"))
        return cls(**d)


class BisectLog:
    """One JSON line per event: the params first, then each measured commit."""

    def __init__(self, path: Path):
        self.path = path

    def start(self, params: Params) -> None:
        if not proc.is_dry_run():
            proc.write_text_atomic(self.path,
                                   json.dumps({"params": dataclasses.asdict(params)}) + "\n")

    def add(self, m: Measurement) -> None:
        self._line({"measured": dataclasses.asdict(m)})

    def judged(self, commit: str, verdict: str, delta: float, rec: dict | None) -> None:
        """What a commit was judged against GOOD, and the row of the comparison record it
        was read from (a resume judges again from the measurements: read() skips these)."""
        row = row_of(rec) if rec else None
        self._line({"judged": {
            "commit": commit, "verdict": verdict,
            "delta": delta if math.isfinite(delta) else None,
            "schema": rec["schema"] if rec else None,
            "overall": rec["overall"]["verdict"] if rec else None, "row": row}})

    def _line(self, obj: dict) -> None:
        if proc.is_dry_run():
            return
        proc.append_text(self.path, json.dumps(obj) + "\n")

    def read(self) -> tuple[Params, dict[str, Measurement]]:
        try:
            text = [x for x in self.path.read_text().splitlines() if x.strip()]
            lines = [json.loads(x) for x in text[:-1]]
            try:
                lines.append(json.loads(text[-1]))
            except ValueError:
                if len(text) < 2:
                    raise
                # An interrupted write leaves a torn last line: that commit is measured again.
            params = Params.from_log(lines[0]["params"])
            done = {}
            for x in lines[1:]:
                if "measured" in x:
                    m = Measurement(**x["measured"])
                    done[m.commit] = m
        except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
            raise Error(f"{self.path}: not a bisect log ({e})") from None
        return params, done


@dataclasses.dataclass
class BisectResult:
    first: list[str]            # the first new commit, or the commits it can be
    verdicts: dict[str, str]
    steps: int                  # commits measured between GOOD and BAD
    deltas: dict[str, float]

    @property
    def found(self) -> bool:
        return len(self.first) == 1


class Bisect:
    """Drives the search with a rule made from GOOD and BAD.

    measure(commits) -> [Measurement]: measures several commits (the lab boots them side by
    side where it can); measure.prepare(commits), when it has one, hears which commits the
    step after the next measurement may want, so that it can build them meanwhile.
    describe(commit) names a commit."""

    def __init__(self, params: Params, commits: list[str], measure,
                 describe: Callable[[str], str], logfile: BisectLog, out=sys.stdout):
        self.p = params
        self.commits = commits
        self.measure = measure
        self.describe = describe
        self.log = logfile
        self.out = out
        self.done: dict[str, Measurement] = {}
        self.said: dict[str, str] = {}     # commit -> its record row's verdict

    def _measure(self, commits: list[str]) -> list[Measurement]:
        todo = [c for c in commits if c not in self.done]
        for m in self.measure(todo) if todo else []:
            self.done[m.commit] = m
            self.log.add(m)
        return [self.done[c] for c in commits]

    def _say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _value(self, m: Measurement) -> str:
        n = len(m.samples)
        per = f"{n} samples" if len(m.boots) == 1 else f"{len(m.boots)} boots, {n} samples"
        return f"{self._num(m.value)} {m.unit} ({per})"

    def _costs(self, m: Measurement) -> None:
        """The cell's cost-model rows, one line under the commit's figure."""
        if m.costs and not m.skip:
            self._say(f"    cost model {m.cost_unit}: " + ", ".join(
                f"{cost.ROW_LABEL[k]} {v:.2f}" for k, v in m.costs.items()))

    def _num(self, v: float) -> str:
        # Instruction counts repeat to a tenth; timed figures to about three digits.
        return fmt.count(v) if self.p.mode.deterministic else fmt.num(v)

    def rule(self, good: Measurement, bad: Measurement) -> StepRule:
        """The rule of every step, from GOOD -> BAD's record: its direction, and the
        threshold (by default half of GOOD -> BAD); Error (exit 1) when BAD is no change
        beyond the threshold against GOOD."""
        probe = StepRule(good, self.p.mode, self.p.threshold or 0.0, 1, self.p.metric)
        row = row_of(probe.record(bad))
        bad_delta = row["delta"] if row and row["delta"] is not None else math.nan
        threshold = (default_threshold(bad_delta) if self.p.threshold is None
                     else self.p.threshold)
        if not self.p.mode.deterministic and math.isfinite(threshold):
            check_power(good, bad, threshold)
        rule = StepRule(good, self.p.mode, threshold, 1 if bad_delta > 0 else -1,
                        self.p.metric)
        verdict, _, _, rec = rule.verdict(bad) if math.isfinite(bad_delta) else \
            (SKIP, bad_delta, "", None)
        if verdict != NEW:
            row = row_of(rec) if rec else row
            raise Error(f"GOOD -> BAD moves the metric by {pct(bad_delta)}, not beyond"
                        f" the threshold ({threshold * 100:.3g}%) and {noise_text(row)}:"
                        " nothing to bisect", EXIT_FAILED)
        self._judged(bad, verdict, bad_delta, rec)
        return rule

    def _prepare(self, verdicts: dict[str, str], c: str | None = None) -> None:
        """Tell the measure what may come after `c` (either verdict), or first of all."""
        if not hasattr(self.measure, "prepare"):
            return
        after = [dict(verdicts)] if c is None else [{**verdicts, c: v} for v in (OLD, NEW)]
        nxt = {pick(self.commits, v) for v in after} - {None} - set(self.done)
        self.measure.prepare(sorted(nxt, key=self.commits.index))

    def run(self, resumed: dict[str, Measurement] | None = None) -> BisectResult:
        self.done.update(resumed or {})
        t0 = time.monotonic()
        self._prepare({self.p.bad: NEW})
        good, bad = self._measure([self.p.good, self.p.bad])
        for m, which in ((good, "GOOD"), (bad, "BAD ")):
            self._say(f"{which} {self.describe(m.commit)}: "
                      + (f"skipped: {m.skip}" if m.skip else self._value(m)))
            self._costs(m)
            if m.skip:
                raise Error(f"{which.strip()} {m.commit[:12]}: {m.skip}; a bisect needs both"
                            " ends measured", EXIT_FAILED)
        rule = self.rule(good, bad)
        bad_delta = row_of(rule.record(bad))["delta"]
        self._say(f"GOOD -> BAD: {pct(bad_delta)}; a commit has moved when it is more than"
                  f" {rule.threshold * 100:.3g}% {'above' if rule.direction > 0 else 'below'}"
                  " GOOD"
                  + (" and beyond the noise" if self.p.mode.deterministic else
                     f" with p < {stats.ALPHA} over {len(good.boots)} boots"))
        verdicts: dict[str, str] = {self.p.bad: NEW}
        deltas = {self.p.good: 0.0, self.p.bad: bad_delta}
        # What a resumed log already measured counts without measuring it again.
        for c in self.commits[:-1]:
            if c in self.done:
                verdicts[c], deltas[c] = self._judge(rule, self.done[c])
        step = 0
        while (c := pick(self.commits, verdicts)) is not None:
            step += 1
            left = steps_left(self.commits, verdicts)
            self._prepare(verdicts, c)
            [m] = self._measure([c])
            verdicts[c], deltas[c] = self._judge(rule, m)
            said = self.said.get(c)
            what = (f"skipped: {m.skip}" if m.skip else
                    f"{self._value(m)}, {pct(deltas[c])} against GOOD"
                    f"{f' ({said})' if said else ''}: {verdicts[c]}")
            self._say(f"step {step} (about {left} to go): {self.describe(c)}: {what}")
            self._costs(m)
        first = conclude(self.commits, verdicts)
        measured = sum(1 for c in self.commits[:-1] if c in verdicts)
        out = BisectResult(first, verdicts, measured, deltas)
        self._report(out, rule, time.monotonic() - t0)
        return out

    def _judge(self, rule: StepRule, m: Measurement) -> tuple[str, float]:
        if m.skip:
            return SKIP, math.nan
        v, d, note, rec = rule.verdict(m)
        self._judged(m, v, d, rec)
        if note:
            self._say(f"note: {m.commit[:12]} {note} ({pct(d)} against GOOD)")
        return v, d

    def _judged(self, m: Measurement, verdict: str, delta: float, rec: dict) -> None:
        """Keep what the record said of a commit: its row's verdict for the step's line, and
        the row in the log beside the measurement."""
        row = row_of(rec)
        self.said[m.commit] = row["verdict"] if row else ""
        self.log.judged(m.commit, verdict, delta, rec)

    def _report(self, out: BisectResult, rule: StepRule, seconds: float) -> None:
        self._say("")
        if not out.found:
            self._say(f"only skipped commits are left: the first commit that moves the metric"
                      f" is one of {len(out.first)}:")
            for c in out.first:
                self._say(f"  {self.describe(c)} ({out.verdicts.get(c, '?')})")
        else:
            c = out.first[0]
            i = self.commits.index(c)
            parent = self.done[self.commits[i - 1] if i else self.p.good]
            vp, vc = parent.value, self.done[c].value
            self._say(f"first commit that moves {self.p.metric} ({parent.unit}) by more than"
                      f" {rule.threshold * 100:.3g}%:")
            self._say(f"  {self.describe(c)}")
            self._say(f"  {self._num(vp)} -> {self._num(vc)}: {pct(vc / vp - 1)} against its"
                      f" parent, {pct(out.deltas[c])} against GOOD")
        if any(m.costs for m in self.done.values()):
            counted = next(m.cost_model for m in self.done.values() if m.costs)
            self._say(f"note: cost model: {cost.caveat(counted, self.p.arch == 'arm64')}")
        spent = {k: sum(m.seconds.get(k, 0.0) for m in self.done.values())
                 for k in ("build", "lock_wait", "boots")}
        self._say(f"{out.steps} steps between GOOD and BAD, {len(self.done)} kernels measured,"
                  f" {seconds:.0f} s (builds in its path {spent['build']:.0f} s, of which"
                  f" {spent['lock_wait']:.0f} s waiting for other builds; boots, summed,"
                  f" {spent['boots']:.0f} s); log: {self.log.path}")


# --------------------------------------------------------------------------- the lab's measure


class LabMeasure:
    """measure() for the lab: each commit of the user's tree built in the lab's clone (one
    after another, incrementally), then booted with the suite, `boots` times (side by side
    under icount, as ab does); the metric's samples of each boot. A commit that does not
    build, or a boot that fails, is a skip, with the reason.

    While a step boots, the commits prepare() named (the two the next step may pick) are
    built in the background: the boot keeps one CPU, the build the rest, and the next step
    finds its image cached instead of waiting for a build, or for the lab's lock. With a
    Slurm executor each build and boot is a job instead (_as_jobs), and nothing is built
    ahead."""

    def __init__(self, p: Params, outdir: Path, timeout: float = 1800, jobs: int | None = None,
                 executor=None):
        self.p = p
        self.executor = executor or executors.Local()
        self.outdir = outdir
        self.timeout = timeout
        self.jobs = jobs
        self.clock = p.mode
        self.cell, self.path = metric_spec(p.metric)
        # Only the metric's cell runs in the guest: a step takes one cell's samples. The
        # metric names it by its key or a start of it; the guest takes its whole key.
        suites.check(p.suite)
        planned = {"cells": [{"key": c.key}
                             for c in suites.SUITES[p.suite].cells(suites.QUICK)]}
        self.job = ab.suite_job(p.suite, self.clock, reps=p.reps, warmups=p.warmups,
                                cells=(find_cell(planned, self.cell)["key"],))
        self.accel: str | None = None
        self._next: list[str] = []
        self._ahead: list[threading.Thread] = []
        self.last_builds: list[dict] = []

    def variant(self, commit: str) -> variants.Variant:
        v = variants.resolve(commit, self.p.tree, config=self.p.config, arch=self.p.arch)
        v.name = commit[:12]
        return v

    def prepare(self, commits: list[str]) -> None:
        self._next = list(commits)

    def _prebuild(self) -> None:
        todo, self._next = self._next, []
        if not todo or proc.is_dry_run() or self.executor.name != "local":
            return

        def build_all():
            for c in todo:
                try:
                    kernel.build(self.variant(c), jobs=self.jobs, quiet=True)
                except Exception as e:      # noqa: BLE001 - the step builds it again, and says
                    log(f"bisect: building {c[:12]} ahead failed: {e}")
        # Builds, this thread's and the steps', take turns on the lab's lock.
        t = threading.Thread(target=build_all, name="bisect-prebuild", daemon=True)
        t.start()
        self._ahead.append(t)

    def estimate(self, steps: int) -> list[str]:
        """What GOOD and BAD (the last call's builds) and `steps` more commits will take,
        each step an incremental build and its boots."""
        builds = list(self.last_builds)
        arch = builds[0].get("arch", "x86_64") if builds else self.p.arch
        if builds and steps:
            builds.append({"variant": "of each step", "arch": arch, "incremental": True,
                           "config_flavour": builds[0].get("config_flavour"),
                           "dry_run": True, "repeat": steps})
        step = step_times.boot_step(arch, self.p.suite, self.clock.mode,
                               self.p.cpus or vm.default_cpus(self.clock))
        par = ab.boot_parallelism(self.clock)
        boots = [("GOOD and BAD", step, 2 * self.p.boots, par, 1)]
        if steps:
            boots.append(("each step", step, self.p.boots, par, steps))
        return step_times.plan_lines(step_times.Estimator(), builds, boots)

    def wait(self) -> None:
        """Let the builds ahead finish: a build killed half way leaves objects make trusts."""
        for t in self._ahead:
            t.join()
        self._ahead = []

    def __call__(self, commits: list[str]) -> list[Measurement]:
        if self.executor.name != "local":
            return self._as_jobs(commits)
        out = {c: Measurement(c) for c in commits}
        metas = {}
        for c in commits:
            t0 = time.monotonic()
            try:
                metas[c] = kernel.build(self.variant(c), jobs=self.jobs, quiet=True)
                out[c].seconds["lock_wait"] = metas[c].get("lock_wait_s", 0.0)
            except Error as e:
                if e.code != EXIT_FAILED:
                    raise
                out[c].skip = f"does not build: {e}"
            out[c].seconds["build"] = round(time.monotonic() - t0, 1)
        self.last_builds = list(metas.values())
        if metas and self.accel is None:
            self.accel = vm.accel_for(kernel.image_path(next(iter(metas.values()))), self.clock,
                                      self.p.arch)
        self._prebuild()

        def one_boot(c: str, i: int):
            t0 = time.monotonic()
            path = self.outdir / f"{c[:12]}-boot{i + 1}.json"
            res, b = ab.run_suite_boot(metas[c], self.accel, self.job, path, timeout=self.timeout,
                                       clock=self.clock, cpus=self.p.cpus, memory=self.p.cost)
            return c, res, b, path, time.monotonic() - t0

        order = [(c, i) for i in range(self.p.boots) for c in metas]
        for c, res, b, path, seconds in ab.boot_in_order(order, one_boot, self.clock):
            if not proc.is_dry_run():
                self._take(out[c], res, b, path, seconds)
        return [out[c] for c in commits]

    def _as_jobs(self, commits: list[str]) -> list[Measurement]:
        """The step's builds and boots as jobs of the executor (Slurm): each boot queued
        behind its commit's build; a commit that did not build is a boot that failed, and
        says so."""
        out = {c: Measurement(c) for c in commits}
        metas = self.executor.images({c: self.variant(c) for c in commits}, self.clock)
        self.last_builds, self.accel = list(metas.values()), "tcg"
        order = [(c, i) for i in range(self.p.boots) for c in commits]
        planned = [executors.SuiteBoot(f"boot {i + 1} of {c[:12]}", metas[c],
                                       self.outdir / f"{c[:12]}-boot{i + 1}.json")
                   for c, i in order]
        here = executors.Here(lambda b: None,
                              lambda p, b, run_id: ab.no_results(self.job, b, p.meta, run_id),
                              lambda b: ab.report_boot(b, None))
        done = self.executor.run_boots(planned, executors.BootOpts(
            self.accel, self.job, self.clock, timeout=self.timeout, cpus=self.p.cpus,
            memory=self.p.cost), here)
        for (c, _), p, (res, b) in zip(order, planned, done):
            if not proc.is_dry_run():
                self._take(out[c], res, b, p.out, b.timings.get("boot_total_s", 0.0))
        return [out[c] for c in commits]

    def _take(self, m: Measurement, res: dict, b: vm.Boot, path: Path, seconds: float):
        """One boot's samples of the metric into `m`, or why the commit is a skip."""
        m.results.append(str(path))
        m.seconds["boots"] = round(m.seconds.get("boots", 0) + seconds, 1)
        if m.skip:
            return
        if not b.ok:
            m.skip = f"boot failed: {b.reason}"
            return
        cell = find_cell(res, self.cell)
        if cell.get("status") != "ok":
            m.skip = f"{cell['key']} failed: {(cell.get('error') or '?').splitlines()[0]}"
            return
        path_, m.unit = metric_path(cell, self.path, self.clock)
        m.key, m.path = cell["key"], path_
        m.better = better_of(cell, path_, self.clock)
        if self.clock.deterministic:
            floors, _ = self.clock.floors(results.guest_cpus(res), results.kernel_base(res))
            m.floor = floors.get(floor.key(cell["key"], path_))
            for cpath, name, unit in cost.row_paths(cell):
                vals = metrics.metric_values(cell, cpath)
                if vals:
                    m.costs[name] = stats.median(vals)
                    m.cost_unit = f"per {unit.lstrip('/')}"
                    m.cost_model = results.cost_model(res)
        m.boots.append(metrics.metric_values(cell, path_))


def run(p: Params | None, outdir: Path, *, resume: bool = False, timeout: float = 1800,
        jobs: int | None = None, out=None, executor=None) -> BisectResult | None:
    """`ipclab bisect`, its steps written to `out` (default: stdout, as it is when called) as
    it goes: the BisectResult (None in a dry run). A build or boot of GOOD or BAD that failed is
    an Error (exit 1). Its builds and boots run where `executor` puts them (here by default;
    as Slurm jobs only in deterministic mode, whose counts do not depend on the host)."""
    out = out or sys.stdout
    logfile = BisectLog(outdir / LOG_NAME)
    done: dict[str, Measurement] = {}
    if resume:
        p, done = logfile.read()
    assert p is not None
    if executor is not None and executor.name != "local" and not p.mode.deterministic:
        why = "timed boots on several hosts would compare one host's times with another's"
        executor = executors.here_instead(
            executor, f"bisect --executor {executor.name}: only with --deterministic ({why})",
            f"bisect: a timed bisect boots here ({why})")
    tree = Path(p.tree)
    commits = gittree.first_parent_range(tree, p.good, p.bad)
    measure = LabMeasure(p, outdir, timeout=timeout, jobs=jobs, executor=executor)
    out.write(f"bisect {p.good[:12]}..{p.bad[:12]} of {tree}: {len(commits) - 1} commits"
              f" between GOOD and BAD (about {steps_left(commits, {p.bad: NEW})} steps),"
              f" {p.metric} of suite {p.suite}, {p.mode.name} mode (times in {p.mode.unit}),"
              f" {p.boots} boot(s) per commit, {ab.reps_text(measure.job)} per boot"
              + (f"; resuming with {len(done)} commits measured" if done else "") + "\n")
    out.flush()
    # A resumed log is written afresh, without a line a Ctrl-C may have torn.
    logfile.start(p)
    for m in done.values():
        logfile.add(m)

    @functools.lru_cache(maxsize=None)
    def describe(c: str) -> str:
        return f"{c[:12]} {gittree.subject(tree, c)}"

    if proc.is_dry_run():
        measure([p.good, p.bad])
        for line in measure.estimate(steps_left(commits, {p.bad: NEW})):
            log(line)
        log("a dry run stops here: every step builds and boots one commit the same way")
        return None
    try:
        finding = Bisect(p, commits, measure, describe, logfile, out).run(done)
        measure.wait()
    except KeyboardInterrupt:
        log(f"interrupted; what was measured is kept: ipclab bisect --resume {outdir}")
        raise
    return finding
