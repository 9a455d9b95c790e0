# SPDX-License-Identifier: MIT
"""Where the instructions went: one perf cpu-clock profile per cell, and the diff of two.

Each cell runs once more under `perf record -e cpu-clock -c PERIOD`, which follows the
engine and its children only, so idle time and other tasks stay out. Under the deterministic
clock a cpu-clock period is a count of guest instructions (one per nanosecond), so a
function's samples times the period, over the operations the engine reports, is that
function's instructions per operation. On a real clock the same figures are nanoseconds.
The period is a prime, so that the samples do not lock onto the period of a loop.
"""

import json
import math
import os
import shutil
import subprocess
import tempfile

from ipclab import deterministic, engine, fmt, results

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


def ops_of(sample, workload):
    """The denominator of the cell's per-operation cost, from its own engine sample."""
    paths = deterministic.OP_COST.get(workload)
    if paths:
        denom = paths[0].split("/", 1)[1].split("*")[0].strip()
        v = results.metric_value(sample, denom)
        if "*" in paths[0] and v:
            v = v / float(paths[0].rsplit("*", 1)[1])
        return v
    if workload == "mq-latency":
        msgs = [results.metric_value(sample, "metrics.%s_messages" % k) for k in ("empty", "full")]
        return sum(m for m in msgs if m) or None
    return None


def profile_cell(engine_path, cell, period=PERIOD):
    """One profiled run of a cell: {"ops", "op", "total", "functions": {sym: period}}."""
    perf = perf_path()
    if perf is None:
        return {"error": "perf not found (make lab-deps installs linux-perf)"}
    with tempfile.TemporaryDirectory(prefix="ipclab-perf-") as tmp:
        data = os.path.join(tmp, "perf.data")
        argv = [perf, "record", "-q", "-N", "-e", "cpu-clock", "-c", str(period), "-o", data,
                "--"] + engine.argv_for(engine_path, cell)
        rec = subprocess.run(argv, capture_output=True, text=True,
                             timeout=engine.cell_timeout(cell) + 120)
        if rec.returncode != 0:
            return {"error": "perf record exit %d: %s" % (rec.returncode,
                                                         (rec.stderr.strip().splitlines()
                                                          or ["no message"])[-1])}
        rep = subprocess.run([perf, "report", "-i", data, "--stdio", "-q", "--sort", "sym",
                              "-F", "period,sym", "--percent-limit", "0"],
                             capture_output=True, text=True, timeout=300)
        if rep.returncode != 0:
            return {"error": "perf report exit %d" % rep.returncode}
    samples = [json.loads(l) for l in rec.stdout.splitlines() if l.startswith("{")]
    ops = ops_of(samples[-1], cell.workload) if samples else None
    funcs = parse_report(rep.stdout)
    return {"ops": ops, "total": sum(funcs.values()), "period": period, "functions": funcs}


def profile_cells(engine_path, cells, out_path, period=PERIOD, stream=None):
    prof = {"schema": SCHEMA, "period": period, "event": "cpu-clock", "cells": {}}
    for cell in cells:
        if stream:
            stream.write("profile: %s\n" % cell.key)
        try:
            prof["cells"][cell.key] = profile_cell(engine_path, cell, period)
        except (OSError, subprocess.TimeoutExpired, ValueError) as e:
            prof["cells"][cell.key] = {"error": str(e)}
        with open(out_path + ".tmp", "w") as f:
            json.dump(prof, f)
        os.replace(out_path + ".tmp", out_path)
    return prof


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == SCHEMA else None


def per_op(cell_prof):
    """{symbol: instructions (or ns) per operation}, and the sampling error of one symbol."""
    ops = cell_prof.get("ops")
    if not ops or cell_prof.get("error"):
        return None
    return {s: p / ops for s, p in cell_prof.get("functions", {}).items()}


def diff(base, new, top=8):
    """[(cell, [(symbol, base, new, delta, noise)], base total, new total)] per common cell.

    noise is two standard errors of the delta from sampling alone: a symbol with n samples
    is known to about sqrt(n) samples.
    """
    out = []
    for key, bp in base.get("cells", {}).items():
        np_ = new.get("cells", {}).get(key)
        if np_ is None:
            continue
        b, n = per_op(bp), per_op(np_)
        if b is None or n is None:
            continue
        rows = []
        for sym in set(b) | set(n):
            vb, vn = b.get(sym, 0.0), n.get(sym, 0.0)
            sb = bp["functions"].get(sym, 0) / bp["period"]
            sn = np_["functions"].get(sym, 0) / np_["period"]
            noise = 2 * math.sqrt((sb * (bp["period"] / bp["ops"]) ** 2)
                                  + (sn * (np_["period"] / np_["ops"]) ** 2))
            rows.append((sym, vb, vn, vn - vb, noise))
        rows.sort(key=lambda r: -abs(r[3]))
        out.append((key, rows[:top], sum(b.values()), sum(n.values())))
    return out


def render_diff(base, new, out, unit="insn"):
    d = diff(base, new)
    if not d:
        return
    out.write("Where the %s went: perf cpu-clock samples every %d %s, per operation; the"
              " functions that moved most (noise: 2 standard errors from sampling)\n"
              % ("instructions" if unit == "insn" else "time", base.get("period", PERIOD),
                 "guest instructions" if unit == "insn" else "ns"))
    for key, rows, tb, tn in d:
        out.write("%s: all functions %s -> %s (%s)\n"
                  % (key, fmt.count(tb), fmt.count(tn), fmt.pct(tn / tb - 1 if tb else math.nan,
                                                                 True, 2)))
        table = [[sym, fmt.count(vb), fmt.count(vn), "%+.1f" % dv, fmt.count(noise)]
                 for sym, vb, vn, dv, noise in rows]
        out.write(fmt.table(["  function", "base", "new", "delta", "noise"],
                            [["  " + r[0]] + r[1:] for r in table],
                            ["<", ">", ">", ">", ">"]) + "\n")
    if unit == "insn":
        out.write("caution: under icount the sampling clock is an instruction count, and its\n"
                  "samples alias with a periodic loop: between sampling periods of 10007-32003\n"
                  "instructions, one function's share of pipe-throughput moved by up to 4x.\n"
                  "Read these rows as which functions are hot, and take per-operation totals,\n"
                  "not per-function deltas, as the measurement.\n")
    out.write("\n")
