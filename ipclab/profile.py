# SPDX-License-Identifier: MIT
"""Where the instructions went: one profile per cell, by function, and the diff of two.

Two ways to take it:
- marker (deterministic guests): the guest runs each cell once more between two calls of a
  marker system call, and QEMU's TCG plugin kernel/qemu-plugin/insncount.c counts every
  instruction each code address executed in between, from outside the guest. The host maps
  addresses to kernel functions with the image's System.map: exact instructions per function
  per operation, with nothing added to the guest.
- perf (anywhere else): the cell runs under `perf record -e cpu-clock -c PERIOD`, which
  follows the engine and its children only; samples times the period over the operations
  is the function's time per operation. Under icount this way fails: the sampling clock is
  itself an instruction count and its samples alias with a periodic loop (one function's
  share of pipe-throughput moved 4x between sampling periods of 10007-32003 instructions).
"""

import bisect
import ctypes
import json
import math
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ipclab import Error, deterministic, engine, proc, safeio
from ipclab.deterministic import cost
PERIOD = 10007
PERF = "perf"
SCHEMA = "ipclab-profile/1"


def perf_path():
    return shutil.which(PERF)


def parse_report(text):
    """{symbol: period} from `perf report --stdio -q --sort sym -F period,sym`."""
    out = {}
    for line in text.splitlines():
        parts = line.split(None, 1)
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        sym = parts[1].strip()
        if sym[:4] in ("[k] ", "[.] ", "[g] ", "[u] "):
            sym = sym[4:]
        sym = sym.strip()
        out[sym] = out.get(sym, 0) + int(parts[0])
    return out


def profile_cell(engine_path, cell, period=PERIOD):
    """One profiled run of a cell: {"ops", "op", "total", "functions": {sym: period}}."""
    perf = perf_path()
    if perf is None:
        return {"error": "perf not found (make lab-deps installs linux-perf)"}
    with tempfile.TemporaryDirectory(prefix="ipclab-perf-") as tmp:
        data = Path(tmp) / "perf.data"
        argv = [perf, "record", "-q", "-N", "-e", "cpu-clock", "-c", str(period), "-o", data,
                "--"] + engine.argv_for(engine_path, cell)
        rec = subprocess.run(argv, capture_output=True, text=True,
                             timeout=engine.cell_timeout(cell) + 120)
        if rec.returncode != 0:
            why = (rec.stderr.strip().splitlines() or ["no message"])[-1]
            return {"error": f"perf record exit {rec.returncode}: {why}"}
        rep = subprocess.run([perf, "report", "-i", data, "--stdio", "-q", "--sort", "sym",
                              "-F", "period,sym", "--percent-limit", "0"],
                             capture_output=True, text=True, timeout=300)
        if rep.returncode != 0:
            return {"error": f"perf report exit {int(rep.returncode)}"}
    samples = [json.loads(l) for l in rec.stdout.splitlines() if l.startswith("{")]
    ops = deterministic.operations(samples[-1], cell.workload) if samples else None
    funcs = parse_report(rep.stdout)
    return {"ops": ops, "total": sum(funcs.values()), "period": period, "functions": funcs}


# The system call the guest makes around each cell when a counter outside it (the lab's
# QEMU plugin, kernel/qemu-plugin/insncount.c) takes the profile: swapoff(NULL), which
# fails with EFAULT, or ENOSYS in the lab kernels (no swap), and which nothing else calls.
# Its entry point is the window marker. (An unnumbered system call would not do: those all
# share one entry point.)
MARKER_SYSCALL = 168
MARKER_SYMBOL = "__x64_sys_swapoff"


def mark_window():
    ctypes.CDLL(None, use_errno=True).syscall(MARKER_SYSCALL, 0)


def marked_cell(engine_path, cell):
    """One run of a cell between two window markers; the counts are taken outside. The
    engine does not mark its own section here: the file it counts its marks in is written
    over 9p, which would land in the profile's window."""
    env = {k: v for k, v in os.environ.items() if k != "IPCBENCH_MARK"}
    mark_window()
    try:
        run = engine.run_cell(engine_path, cell, env=env)
    finally:
        mark_window()
    return marked_record(run, cell)


def marked_record(run, cell):
    """A marker profile's record of a cell from its marked run (an engine.CellRun): the
    operations to divide the counts taken outside by."""
    if run.status != "ok":
        return {"error": run.error or run.status}
    return {"ops": deterministic.operations(run.samples[-1], cell.workload)}


def profile_cells(engine_path, cells, out_path, period=PERIOD, stream=None, by="perf",
                  marked=None):
    """Profile each cell once. by="perf": perf samples here; by="marker": only mark each
    cell's window for the lab's instruction counter (cells in order, window 2i + 1).
    marked(cell) -> its record instead of a marked run here: a guest without Python made
    the runs between its own markers (ipclab/lab/arm64/suite.py), and the host reads them back."""
    prof = {"schema": SCHEMA, "period": period if by == "perf" else 1,
            "event": "cpu-clock" if by == "perf" else "insncount", "cells": {}, "order": []}
    for cell in cells:
        if stream:
            stream.write(f"profile: {cell.key}\n")
        try:
            if by == "perf":
                prof["cells"][cell.key] = profile_cell(engine_path, cell, period)
            elif marked:
                prof["cells"][cell.key] = marked(cell)
            else:
                prof["cells"][cell.key] = marked_cell(engine_path, cell)
        except (OSError, subprocess.TimeoutExpired, ValueError) as e:
            prof["cells"][cell.key] = {"error": str(e)}
        prof["order"].append(cell.key)
        proc.write_json_atomic(out_path, prof)
    return prof


def read_system_map(path):
    """Sorted (address, name) of the kernel's text symbols."""
    syms = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW":
                syms.append((int(parts[0], 16), parts[2]))
    syms.sort()
    return syms


def symbol_address(system_map, name):
    for addr, sym in read_system_map(system_map):
        if sym == name:
            return addr
    return None


def read_windows(path):
    """{window: {address or "user": {field: count}}} from the plugin's output (fields:
    cost.FIELDS, or only insns from a plugin of the first format)."""
    return cost.read_counts(path)[2]


def attach_counts(prof, windows_path, system_map, model=None):
    """Fill a marker profile's cells with exact instructions per function ("functions"),
    and every other count of the plugin per function, est. cycles included ("costs")."""
    syms = read_system_map(system_map)
    addrs = [a for a, _ in syms]
    windows = read_windows(windows_path)
    for i, key in enumerate(prof.get("order", [])):
        cell = prof["cells"].get(key, {})
        counts = windows.get(2 * i + 1)
        if counts is None or "error" in cell:
            cell.setdefault("error", "no instruction counts for this cell")
            continue
        raw = {}
        for where, c in counts.items():
            if where == "user":
                name = "[user space]"
            else:
                j = bisect.bisect_right(addrs, where) - 1
                name = syms[j][1] if j >= 0 else "[unknown]"
            acc = raw.setdefault(name, dict.fromkeys(c, 0))
            for k, v in c.items():
                acc[k] += v
        cell["functions"] = {name: c["insns"] for name, c in raw.items()}
        if len(next(iter(raw.values()), {})) > 1:
            cell["costs"] = {name: cost.derived(c, model) for name, c in raw.items()}
            prof["cost_model"] = cost.model_record(model)
        cell["total"] = sum(cell["functions"].values())
        cell["period"] = 1
        cell["exact"] = True
    return prof


def cost_diff(old, new, top=8):
    """Where the costs went: [(cell, names, [(symbol, {name: delta per op})], (old totals,
    new totals))] per common cell whose profiles both have costs. names: the cost model's
    rows both carry; the functions are the `top` that moved most in est. cycles (else in
    instructions), then any other whose atomics, fences or irq-flag changes moved by
    cost.MIN_EVENTS per operation or more."""
    out = []
    for key, bp in old.get("cells", {}).items():
        np_ = new.get("cells", {}).get(key)
        if not np_ or "costs" not in bp or "costs" not in np_ or not bp.get("ops") \
                or not np_.get("ops"):
            continue
        names = [n for n, _ in cost.ROWS
                 if all(n in c for p in (bp, np_) for c in p["costs"].values())]
        names = ["insns"] + names
        per = [{sym: {n: c.get(n, 0) / p["ops"] for n in names} for sym, c in p["costs"].items()}
               for p in (bp, np_)]
        zero = dict.fromkeys(names, 0.0)
        rows = []
        for sym in set(per[0]) | set(per[1]):
            b, n = per[0].get(sym, zero), per[1].get(sym, zero)
            rows.append((sym, {k: n[k] - b[k] for k in names}))
        rank = "est_cycles" if "est_cycles" in names else "insns"
        rows.sort(key=lambda r: (-abs(r[1][rank]), r[0]))
        events = [k for k in ("atomics", "fences", "irqflags") if k in names]
        keep = rows[:top] + [r for r in rows[top:] if any(abs(r[1][k]) >= cost.MIN_EVENTS for k in events)]
        totals = tuple({k: sum(v[k] for v in p.values()) for k in names} for p in per)
        out.append((key, names, keep, totals))
    return out


def check_output(path):
    """Error unless `path` is free or holds a profile: --profile replaces only its own kind
    of file, never a link or what is not a regular file (safeio)."""
    safeio.check_replaceable(path)
    if os.path.lexists(path) and load(path) is None:
        raise Error(f"--profile {path}: exists and is not a profile (schema {SCHEMA}): give"
                    " another path")


def load(path):
    """A profile file (FILE.json, or FILE.json.gz as gzip writes it); None if it is not one."""
    try:
        with safeio.open_text(path) as f:
            data = json.load(f)
    except (OSError, EOFError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == SCHEMA else None


def per_op(cell_prof):
    """{symbol: instructions (or ns) per operation}, and the sampling error of one symbol."""
    ops = cell_prof.get("ops")
    if not ops or cell_prof.get("error"):
        return None
    return {s: p / ops for s, p in cell_prof.get("functions", {}).items()}


def diff(old, new, top=8):
    """[(cell, [(symbol, old, new, delta, noise)], old total, new total)] per common cell.

    noise is two standard errors of the delta from sampling alone: a symbol with n samples
    is known to about sqrt(n) samples.
    """
    out = []
    for key, bp in old.get("cells", {}).items():
        np_ = new.get("cells", {}).get(key)
        if np_ is None:
            continue
        b, n = per_op(bp), per_op(np_)
        if b is None or n is None:
            continue
        rows = []
        for sym in set(b) | set(n):
            vb, vn = b.get(sym, 0.0), n.get(sym, 0.0)
            if bp.get("exact") and np_.get("exact"):
                noise = 0.0
            else:
                sb = bp["functions"].get(sym, 0) / bp["period"]
                sn = np_["functions"].get(sym, 0) / np_["period"]
                noise = 2 * math.sqrt((sb * (bp["period"] / bp["ops"]) ** 2)
                                      + (sn * (np_["period"] / np_["ops"]) ** 2))
            rows.append((sym, vb, vn, vn - vb, noise))
        rows.sort(key=lambda r: -abs(r[3]))
        out.append((key, rows[:top], sum(b.values()), sum(n.values())))
    return out
