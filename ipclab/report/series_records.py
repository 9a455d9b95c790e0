# SPDX-License-Identifier: MIT
"""The records behind the patch series' tables (kernel/patches/records/): each is written
once from the runs' own files by `scripts/series-tables record KIND ...`, never edited, and
read by ipclab/report/series.py, which prints the tables.

A record says how it was measured as the pages under docs/measured/ do: the command lines,
the commit of this repository, the machine, the kernel release, base and config, the
vCPUs, the architecture, the clock, and per kernel where its raw run is kept. Per kernel and
cell it keeps the median, the spread and the number of samples (deterministic runs, with
the verdict of the lab's rule against the first kernel), or the counts that one boot
printed (a conformance test's lines, the wakeup census, the per-write counts of
kernel/tests/pipe-alloc-counts), or the instructions of a function's
fast path in an object file (a disassembly).
"""

import json
import math
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

from ipclab import Error, compare, proc, results
from ipclab.mode import DETERMINISTIC_NAME, TIMED_NAME
from ipclab.report import alloc_counts

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = "ipclab-series-record/1"
DETERMINISTIC_ROWS = "deterministic-rows"
TIMED_ROWS = "timed-rows"
CONFORMANCE_LINES = "conformance-lines"
CENSUS = "census"
DISASSEMBLY = "disassembly"
COUNTS = "pipe-alloc-counts"
FASTPATH = ROOT / "scripts" / "fastpath-insns"


def _git_commit():
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True,
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                                "--untracked-files=no"], check=True, capture_output=True,
                               text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out + (" (with uncommitted changes)" if dirty else "")


def _machine():
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    except (ValueError, OSError):
        mem = math.nan
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan
    return {"cpu": cpu, "cpus": os.cpu_count(), "mem_gib": round(mem, 1),
            "arch": platform.machine(),
            "load_when_recorded": round(load, 2)}


def _finite(x):
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


def _summary(s, spread):
    return {"median": _finite(s.median), "min": _finite(s.min), "max": _finite(s.max),
            "iqr": _finite(s.iqr), "spread": _finite(spread), "n": s.n}


def _kernel_meta(res, path):
    meta = res.get("meta", {})
    build = meta.get("build") or {}
    clock = meta.get("clock") or {}
    lab = meta.get("lab") or {}
    return {
        "variant": results.variant(res, Path(path).stem),
        "release": build.get("release") or meta.get("kernel"),
        "base": (build.get("base") or {}).get("name"),
        "base_version": (build.get("base") or {}).get("version"),
        "config": build.get("config_flavour"),
        "patches": [p.get("name") for p in build.get("patches", [])],
        "compiler": build.get("compiler"),
        "run": res.get("id"), "created": res.get("created"),
        "raw": lab.get("shared") if isinstance(lab, dict) else None,
        "arch": res.get("host", {}).get("machine"),
        "cpus": clock.get("cpus"), "clock": res.get("env", {}).get("clock"),
        "qemu": clock.get("qemu"), "mode": clock.get("mode"), "accel": meta.get("accel"),
    }


def _named(arg):
    """NAME=FILE names a kernel's runs (a second boot of the old kernel, say); FILE alone is
    named by its variant."""
    name, sep, path = arg.partition("=")
    if sep and name and "/" not in name:
        return name, path
    return None, arg


def summarise_results(paths, commands, title, commit=None):
    """A record of deterministic runs: the first results file is the old side, each other is
    judged against it by the lab's own rule (ipclab/compare), whose verdict is kept. A path
    may be NAME=FILE, to tell apart two boots of one variant."""
    named = [_named(p) for p in paths]
    runs = [(name, p, results.load(p)) for name, p in named]
    _, _, old = runs[0]
    args = {c["key"]: c.get("args", []) for c in old.get("cells", [])}
    kernels, rows = [], []
    for i, (name, path, res) in enumerate(runs):
        k = _kernel_meta(res, path)
        k["name"] = name or k["variant"]
        out = compare.compare_results(old, res, common=True)
        if not out.mode.deterministic:
            raise Error(f"{path}: a timed run; this record takes deterministic runs only")
        cells = {}
        for r in out.judged:
            key = f"{r.key} | {r.path}"
            if r.key not in [x["key"] for x in rows if x["path"] == r.path] and i == 0:
                rows.append({"key": r.key, "path": r.path, "unit": r.unit,
                             "primary": r.primary, "model": r.model,
                             "args": args.get(r.key, [])})
            cell = _summary(r.j.new, r.j.spread_new)
            if i:
                cell.update(delta=_finite(r.j.delta), verdict=r.verdict,
                            floor=_finite(r.j.floor), floor_pairs=r.j.floor_pairs,
                            threshold=_finite(r.j.threshold), note=r.j.note)
            cells[key] = cell
        k["cells"] = cells
        kernels.append(k)
    return _rows_record(DETERMINISTIC_ROWS, title, commands, commit, rows, kernels)


def _rows_record(kind, title, commands, commit, rows, kernels, **extra):
    """A record of rows per kernel, which says how it was measured from its first kernel's
    runs."""
    first = kernels[0]
    return {"schema": SCHEMA, "kind": kind, "title": title,
            "commands": list(commands), "commit": commit or _git_commit(),
            "machine": _machine(), "recorded": proc.now_iso(),
            "base": first["base"], "release": first["release"], "config": first["config"],
            "cpus": first["cpus"], "arch": first["arch"], "clock": first["clock"],
            "qemu": first["qemu"], "mode": first["mode"], **extra,
            "against": first["variant"], "rows": rows, "kernels": kernels}


def summarise_timed(paths, commands, title, commit=None, arch="x86_64"):
    """A record of one timed `ab`: its two sides' merged results (A, then B), compared as
    `ipclab compare` compares them, one value per boot, boots paired. Per kernel and cell:
    the median, least and most of the boots' values and the number of boots; for B, the
    change, its interval and the verdict of the lab's timed rule (ipclab/compare)."""
    if len(paths) != 2:
        raise Error("record timed takes the two sides' merged results of one ab: A, then B")
    runs = [(name, p, results.load(p)) for name, p in (_named(x) for x in paths)]
    out = compare.compare_results(runs[0][2], runs[1][2], common=True)
    if out.mode.deterministic or out.unit != "boot":
        raise Error(f"{paths[0]}, {paths[1]}: not the two sides of a timed ab (boots"
                    " paired); deterministic runs take `record deterministic`")
    args = {c["key"]: c.get("args", []) for c in runs[0][2].get("cells", [])}
    kernels = []
    for name, path, res in runs:
        k = _kernel_meta(res, path)
        # a side's merged results keep each boot's record, not one run's directory
        k.update(name=name or k["variant"], raw=k["raw"] or str(path), arch=k["arch"] or arch,
                 cells={})
        kernels.append(k)
    rows = []
    for r in out.rows:
        key = f"{r.key} | {r.path}"
        rows.append({"key": r.key, "path": r.path, "unit": r.unit, "primary": r.primary,
                     "model": False, "args": args.get(r.key, [])})
        for k, s in zip(kernels, (r.cmp.old, r.cmp.new)):
            k["cells"][key] = {"median": _finite(s.median), "min": _finite(s.min),
                               "max": _finite(s.max), "n": s.n}
        lo, hi = r.cmp.ci
        kernels[1]["cells"][key].update(
            delta=_finite(r.cmp.delta), ci=[_finite(lo - 1), _finite(hi - 1)],
            verdict=r.verdict or None, p_holm=_finite(r.cmp.p_holm))
    return _rows_record(TIMED_ROWS, title, commands, commit, rows, kernels,
                        accel=kernels[0]["accel"], family=out.family, level=out.level,
                        warnings=list(out.warnings))


# "# EAGAIN (O_NONBLOCK, full pipe): 10 pages allocated system-wide during 4096 writes"
CONFORMANCE_LINE = re.compile(
    r"^# (?P<case>[^:]+): (?P<pages>\d+) pages allocated system-wide during (?P<writes>\d+)"
    r" writes$")


def summarise_conformance(outs, records, commands, title, commit=None, config="tiny",
                          arch="x86_64"):
    """A record of one conformance test's own count lines, one boot per kernel: each OUT is
    what `ipclab vm run VARIANT -- TEST` printed, each RECORD its --record file (which
    names no config or architecture: the caller says them)."""
    kernels, rows = [], []
    for out, rec in zip(outs, records):
        try:
            text = Path(out).read_text()
            boot = json.loads(Path(rec).read_text())
        except (OSError, ValueError) as e:
            raise Error(f"cannot read {out} or {rec}: {e}") from None
        cells = {}
        for line in text.splitlines():
            m = CONFORMANCE_LINE.match(line.strip())
            if m:
                cells[m["case"]] = {"pages": int(m["pages"]), "writes": int(m["writes"]),
                                    "n": 1}
                if m["case"] not in rows:
                    rows.append(m["case"])
        if not cells:
            raise Error(f"{out}: no count line of the conformance test in it")
        clock = boot.get("clock") or {}
        kernels.append({"variant": boot.get("variant"), "release": boot.get("kernel"),
                        "rc": boot.get("guest", {}).get("rc"), "raw": boot.get("shared"),
                        "cpus": clock.get("cpus"), "qemu": clock.get("qemu"),
                        "mode": clock.get("mode"), "cells": cells})
    first = kernels[0]
    return {"schema": SCHEMA, "kind": CONFORMANCE_LINES, "title": title,
            "commands": list(commands), "commit": commit or _git_commit(),
            "machine": _machine(), "recorded": proc.now_iso(), "release": first["release"],
            "config": config, "arch": arch, "cpus": first["cpus"],
            "qemu": first["qemu"], "mode": first["mode"], "rows": rows, "kernels": kernels}


def _read_boot(path):
    """A `vm run --record` file: the boot record (ipclab/lab/vm/boot.py, Boot.record)."""
    try:
        boot = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise Error(f"cannot read boot record {path}: {e}") from None
    if not isinstance(boot, dict) or not boot.get("variant") or \
            not isinstance(boot.get("clock"), dict):
        raise Error(f"{path}: not a boot record (`ipclab vm run ... --record FILE`)")
    return boot


def _icount(clock):
    """A boot's clock as a record names it: the icount option, or the mode."""
    return "icount shift=0" if (clock.get("icount") or {}).get("shift") == 0 \
        else clock.get("mode")


def summarise_counts(boots, commands, title, commit=None, config=None, arch="x86_64",
                     base_of=None):
    """A record of kernel/tests/pipe-alloc-counts, one boot per kernel: boots are (NAME,
    OUTPUT, BOOT_RECORD), OUTPUT what `ipclab vm run VARIANT+counters+lockstat -- TEST`
    printed (its JSON lines; other lines are skipped), BOOT_RECORD its --record file. One
    variant may come twice under two names (with and without --pressure). The boot record
    names no config, architecture or base: the caller says the config and architecture, and
    base_of(variant) gives the base. Error when the boots were not made alike (vCPUs, clock,
    accel), which the table's caption states once."""
    if not boots:
        raise Error("record counts takes --boot NAME COUNTS_OUTPUT BOOT_RECORD per kernel")
    if not config:
        raise Error("record counts takes --config: the boot record does not say it")
    kernels, cells_seen = [], set()
    for name, out, rec in boots:
        if not name or "/" in name or any(k["name"] == name for k in kernels):
            raise Error(f"--boot {name!r}: a kernel's name, once, without '/'")
        rows = alloc_counts.read_counts(out)
        if not rows:
            raise Error(f"{out}: no JSON line of {alloc_counts.COMMAND} in it")
        boot = _read_boot(rec)
        clock = boot["clock"]
        if clock.get("mode") not in (TIMED_NAME, DETERMINISTIC_NAME):
            raise Error(f"{rec}: a clock mode of {clock.get('mode')!r}, neither "
                        f"{TIMED_NAME} nor {DETERMINISTIC_NAME}")
        cells_seen |= set(rows)
        kernels.append({
            "name": name, "variant": boot["variant"], "release": boot.get("kernel"),
            "base": base_of(boot["variant"]) if base_of else None, "config": config,
            "arch": arch, "cpus": clock.get("cpus"), "mode": clock.get("mode"),
            "clock": _icount(clock), "qemu": clock.get("qemu"),
            "accel": boot.get("accel") or clock.get("accel"), "ok": boot.get("ok"),
            "rc": boot.get("rc"), "reason": boot.get("reason"), "raw": boot.get("shared"),
            # the whole line: its per-write figures, "missing" (counters this kernel has
            # not) and how the cell was run (write and pipe size, pressure, pinning)
            "cells": {c: {**row, "n": 1} for c, row in rows.items()}})
    first = kernels[0]

    def alike(k):
        return k["cpus"], k["mode"], k["accel"]
    for (_, _, rec), k in zip(boots[1:], kernels[1:]):
        if alike(k) != alike(first):
            raise Error(f"{rec}: not booted as {boots[0][2]} was (vCPUs, clock or accel"
                        " differ)")
    return {"schema": SCHEMA, "kind": COUNTS, "title": title, "commands": list(commands),
            "commit": commit or _git_commit(), "machine": _machine(),
            "recorded": proc.now_iso(), "base": first["base"], "release": first["release"],
            "config": config, "arch": arch, "cpus": first["cpus"], "qemu": first["qemu"],
            "mode": first["mode"], "clock": first["clock"], "accel": first["accel"],
            "rows": sorted(cells_seen, key=alloc_counts.cell_order), "kernels": kernels}


def _census_kernel(path):
    """(the census record at `path`, its kernel's entry for a series record)."""
    try:
        census = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise Error(f"cannot read census {path}: {e}") from None
    if not isinstance(census, dict) or census.get("schema") != "ipclab-census/1":
        raise Error(f"{path}: not a census record (ipclab-census/1)")
    build = census.get("build") or {}
    cells = {}
    for w in census.get("workloads", []):
        cells[w["workload"]] = {
            "rc": w.get("rc"), "n": 1,
            "sites": {f"{fam}/{site}": dict(v) for fam in census.get("sites", {})
                      for site, v in (w.get(fam) or {}).items()}}
    return census, {"variant": census.get("variant"),
                    "release": build.get("release") or (build.get("base") or {}).get("release"),
                    "patches": [p.get("name") for p in build.get("patches", [])],
                    "raw": (census.get("boot") or {}).get("shared"), "cells": cells}


def summarise_census(paths, commands, title, commit=None):
    """A record of census boots (`ipclab census VARIANT -o FILE`), one kernel each, the
    first the old one: per workload, the calls of each wakeup site and how many found a
    sleeper. Error when the boots were not made alike (config, arch, vCPUs, mode)."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    read = [_census_kernel(p) for p in paths]
    census = read[0][0]
    build, clock = census.get("build") or {}, census.get("clock") or {}

    def alike(c):
        return ((c.get("build") or {}).get("config_flavour"), c.get("arch"),
                (c.get("clock") or {}).get("cpus"), (c.get("clock") or {}).get("mode"),
                [w["workload"] for w in c.get("workloads", [])])
    for path, (other, _) in zip(paths[1:], read[1:]):
        if alike(other) != alike(census):
            raise Error(f"{path}: not a census made as {paths[0]} was (config, arch, vCPUs, "
                        "mode or workloads differ)")
    rows = [w["workload"] for w in census.get("workloads", [])]
    return {"schema": SCHEMA, "kind": CENSUS, "title": title, "commands": list(commands),
            "commit": commit or _git_commit(), "machine": _machine(),
            "recorded": proc.now_iso(), "measured": census.get("when"),
            "base": (build.get("base") or {}).get("name"), "release": read[0][1]["release"],
            "config": build.get("config_flavour"), "arch": census.get("arch"),
            "cpus": clock.get("cpus"), "qemu": clock.get("qemu"), "mode": clock.get("mode"),
            "clock": _icount(clock),
            "sites": census.get("sites"), "rows": rows, "kernels": [k for _, k in read]}


FASTPATH_LINE = re.compile(r"^(?P<func>\S+): (?P<insns>\d+) instructions, (?P<reps>\d+)"
                           r" rep-string$")


def _fastpath(obj, func):
    """{"instructions", "rep"} of func's fast path in obj (scripts/fastpath-insns), or
    {"inlined": True} when the object has no such function."""
    r = subprocess.run([sys.executable, str(FASTPATH), str(obj), func], capture_output=True,
                       text=True)
    if r.returncode == 2 and f"no function {func}" in r.stderr:
        return {"inlined": True, "n": 1}
    m = FASTPATH_LINE.match(r.stdout.strip())
    if r.returncode or not m:
        raise Error(f"fastpath-insns {obj} {func}: {(r.stderr.strip() or r.stdout.strip())}")
    return {"instructions": int(m["insns"]), "rep": int(m["reps"]), "n": 1}


def summarise_disassembly(objects, functions, commands, title, config, compiler,
                          release, commit=None):
    """A record of one object file built several ways (objects: [(kernel name, path)]):
    for each function, the instructions on its fast path from the entry to the return or
    the tail call, as scripts/fastpath-insns counts them (the first conditional jump
    taken), or that the function is not in the object."""
    kernels = []
    for name, obj in objects:
        if not Path(obj).is_file():
            raise Error(f"no object file {obj}")
        kernels.append({"variant": name, "object": str(obj), "release": release,
                        "cells": {f: _fastpath(obj, f) for f in functions}})
    return {"schema": SCHEMA, "kind": DISASSEMBLY, "title": title, "commands": list(commands),
            "commit": commit or _git_commit(), "machine": _machine(),
            "recorded": proc.now_iso(), "release": release, "config": config,
            "compiler": compiler, "arch": platform.machine(), "cpus": None,
            "mode": "static: objdump of an object file, no run", "qemu": None,
            "rows": list(functions), "kernels": kernels}


def read(path):
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise Error(f"cannot read record {path}: {e}") from None
    if data.get("schema") != SCHEMA:
        raise Error(f"{path}: not a series record ({SCHEMA})")
    return data


def write(path, record):
    proc.write_text_atomic(str(path), json.dumps(record, indent=1, sort_keys=True) + "\n")
