# SPDX-License-Identifier: MIT
"""What the lab's steps take: kernel builds (cold, or incremental in a tree that holds a
build) and suite boots, as a cache measured them, and the estimate that `ab --dry-run` and
`bisect --dry-run` print before anything runs.

A cache measures itself: every build's meta.json has its seconds and whether its tree held
a build already, and every suite boot leaves its record (BOOT_RECORD) with its wall time. The
estimate takes this machine's own figures first, since hosts differ by factors; a step this
cache has never run comes from the record the repository keeps (REFERENCE, written by
`scripts/lab-times` from a cache), which names the machine it was measured on.
"""

from __future__ import annotations

import json
import math
import os
import platform
from pathlib import Path

from ipclab import Error, proc, stats
from ipclab.cachedir import cache_root

BOOT_RECORD = "boot.json"
REFERENCE = Path(__file__).resolve().parent / "reference" / "lab-times.json"
SCHEMA = "ipclab-lab-times/1"


def build_step(arch: str, flavour: str | None, incremental: bool) -> str:
    return f"build {arch} {flavour or 'tiny'} {'incremental' if incremental else 'cold'}"


def boot_step(arch: str, suite: str, mode: str, cpus: int) -> str:
    return f"boot {arch} {suite} {mode} {cpus} vCPU{'s' if cpus != 1 else ''}"


def _load(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None          # a folder a run is writing, or one a crash left half-written
    return data if isinstance(data, dict) else None


def _seconds(value) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(value) and value > 0 else None


def measured(root: Path | None = None) -> dict[str, list[float]]:
    """{step: [seconds, ...]} of every build and successful suite boot a cache recorded."""
    root = root or cache_root()
    steps: dict[str, list[float]] = {}
    for path in sorted(root.glob("images/*/meta.json")):
        meta = _load(path)
        # Builds from before the cache recorded `incremental` cannot be told apart.
        if not meta or not isinstance(meta.get("incremental"), bool):
            continue
        seconds = _seconds(meta.get("build_seconds"))
        if seconds and meta.get("arch"):
            key = build_step(meta["arch"], meta.get("config_flavour"), meta["incremental"])
            steps.setdefault(key, []).append(seconds)
    for path in sorted(root.glob(f"runs/*/{BOOT_RECORD}")):
        rec = _load(path)
        if not rec or not rec.get("ok"):
            continue
        clock = rec.get("clock") or {}
        seconds = _seconds((rec.get("timings") or {}).get("boot_total_s"))
        if seconds and rec.get("suite") and rec.get("arch") and clock.get("mode") \
                and clock.get("cpus"):
            key = boot_step(rec["arch"], rec["suite"], clock["mode"], clock["cpus"])
            steps.setdefault(key, []).append(seconds)
    return steps


def note_boot(shared: Path, boot_record: dict, arch: str, suite: str) -> None:
    """Keep a suite boot's record (vm.Boot.record()) in its shared folder, for estimates."""
    proc.write_json_atomic(shared / BOOT_RECORD, {**boot_record, "arch": arch, "suite": suite})


def summary(values: list[float]) -> dict:
    return {"median": round(stats.median(values), 1), "min": round(min(values), 1),
            "max": round(max(values), 1), "n": len(values)}


def record(roots: list[Path], *, machine: str, commit: str, command: str) -> dict:
    """The reference record of caches' steps, pooled (scripts/lab-times)."""
    steps: dict[str, list[float]] = {}
    for root in roots:
        for k, v in measured(root).items():
            steps.setdefault(k, []).extend(v)
    return {"schema": SCHEMA, "machine": machine, "commit": commit, "command": command,
            "host": {"cpus": os.cpu_count() or 1, "arch": platform.machine()},
            "steps": {k: summary(v) for k, v in sorted(steps.items())}}


def reference(path: Path = REFERENCE) -> dict:
    """The repository's record, {} when there is none; Error when it is not one."""
    if not path.exists():
        return {}
    rec = _load(path)
    if not rec or rec.get("schema") != SCHEMA or not isinstance(rec.get("steps"), dict):
        raise Error(f"{path}: not a {SCHEMA} record")
    return rec


class Estimator:
    """Each step's typical seconds: this cache's median, else the reference's."""

    def __init__(self, root: Path | None = None, ref: dict | None = None):
        self.local = {k: summary(v) for k, v in measured(root).items()}
        self.ref = reference() if ref is None else ref

    def seconds(self, step: str) -> tuple[float, str] | None:
        """(seconds, where the figure comes from), or None when nobody measured the step."""
        if step in self.local:
            s = self.local[step]
            return s["median"], f"this machine, n={s['n']}"
        s = (self.ref.get("steps") or {}).get(step)
        if s:
            return s["median"], f"{self.ref.get('machine', 'the reference')}, n={s['n']}"
        return None


def fmt_seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


NO_FIGURE = "no figure on this machine or in the reference"


def plan_lines(est: Estimator, builds: list[dict], boots: list[tuple[str, str, int, int, int]]
               ) -> list[str]:
    """What a plan will take, one step after another: `builds` are kernel.build's metas (a
    dry run's, for an image not built yet; "repeat": that many such builds); `boots` are
    (what, step, boots, how many at a time, how many times over). The total leaves out what
    no record measured, and says so."""
    lines, total, unknown = [], 0.0, 0
    trees = set()
    for meta in builds:
        name = meta.get("variant", "?")
        if not meta.get("dry_run"):
            lines.append(f"  build {name}: cached, 0 s")
            continue
        # The second build in one tree finds the first's objects.
        incremental = bool(meta.get("incremental")) or bool(meta.get("build_dir")) and \
            meta["build_dir"] in trees
        trees.add(meta.get("build_dir"))
        step = build_step(meta.get("arch", "x86_64"), meta.get("config_flavour"), incremental)
        got = est.seconds(step)
        if got is None:
            unknown += 1
            lines.append(f"  build {name} ({step}): {NO_FIGURE}")
            continue
        repeat = meta.get("repeat", 1)
        total += got[0] * repeat
        over = f", {repeat} times over: about {fmt_seconds(got[0] * repeat)}" if repeat > 1 \
            else ""
        lines.append(f"  build {name} ({step}): about {fmt_seconds(got[0])} ({got[1]}){over}")
    for what, step, count, parallel, repeat in boots:
        got = est.seconds(step)
        if got is None:
            unknown += 1
            lines.append(f"  {what}: {count} x {step}: {NO_FIGURE}")
            continue
        wall = got[0] * math.ceil(count / max(1, parallel)) * repeat
        total += wall
        over = f", {repeat} times over" if repeat > 1 else ""
        lines.append(f"  {what}: {count} x {step}{over}: about {fmt_seconds(wall)}"
                     f" ({fmt_seconds(got[0])} each, {parallel} at a time; {got[1]})")
    head = f"estimate: about {fmt_seconds(total)}"
    if unknown:
        head = (f"estimate: {fmt_seconds(total)} for the steps measured, and {unknown}"
                " step(s) without a figure")
    return [head] + lines
