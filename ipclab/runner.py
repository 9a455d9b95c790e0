# SPDX-License-Identifier: MIT
"""Run a suite: the run plan (which cells, how often, in what order), the engine called for
each sample, and the results file saved after every sample."""

import random
import sys
from pathlib import Path

from ipclab import Error, engine, envinfo, peers, progress, proc, results, schedule, suites


def plan(name, extra_args=(), full=False, reps=None, warmups=None):
    """(suite, mode, cells, reps, warmups) for `run NAME`, checked."""
    suite = suites.resolve(name, extra_args)
    mode = suites.FULL if full else suites.QUICK
    reps = suite.reps[mode] if reps is None else reps
    warmups = suite.warmups if warmups is None else warmups
    if reps < 1:
        raise Error("--reps must be at least 1")
    if warmups < 0:
        raise Error("--warmups must be 0 or more")
    return suite, mode, suite.cells(mode), reps, warmups


def start(suite, mode, cells, reps, warmups, order_seed=None, meta=None):
    """A new results object for the plan, with the host it runs on."""
    order_seed = random.randrange(2 ** 31) if order_seed is None else order_seed
    return results.new(default_id(suite.name, mode), suite.name, mode, cells, reps, warmups,
                       order_seed, meta, host=envinfo.collect())


def resumable(res, path):
    """The cells a results file still needs, rebuilt from it; Error if it cannot resume."""
    plan = res.get("plan", {})
    if not all(isinstance(plan.get(k), int) and not isinstance(plan.get(k), bool)
               for k in ("reps", "warmups", "order_seed")) or plan["reps"] < 1 \
            or plan["warmups"] < 0:
        raise Error(f"{path}: cannot resume: the file has no usable plan (reps, warmups,"
                    " order_seed)")
    known = set(suites.workloads()) | peers.workloads()
    bad = [c.get("workload") for c in res["cells"] if c.get("workload") not in known]
    if bad:
        raise Error(f"{path}: cannot resume: unknown workload {bad[0]!r}")
    return cells_from_results(res)


def cells_from_results(res):
    """Cell objects rebuilt from a results file (what --resume runs)."""
    est = {}
    s = suites.SUITES.get(res.get("suite"))
    if s is not None:
        for mode in (suites.QUICK, suites.FULL):
            for c in s.cells(mode):
                est[(c.key, tuple(c.args))] = c.est_s
    return [suites.Cell(c["key"], c["workload"], list(c.get("args", [])), c.get("suite", ""),
                        est.get((c["key"], tuple(c.get("args", []))), 1.0))
            for c in res["cells"]]


def execute(res, cells, engine_path, out_path, quiet=False, stream=None):
    """Run what the plan still needs; returns 0, or 130 when interrupted.

    res["cells"][i] belongs to cells[i].  The file is saved after every
    sample, so Ctrl-C loses at most the sample in flight.
    """
    stream = stream or sys.stderr
    plan = res["plan"]
    rcells = res["cells"]
    slots = schedule.build(len(cells), plan["reps"], plan["warmups"], plan["order_seed"])
    done_w = [sum(1 for s in c["samples"] if s.get("warmup")) for c in rcells]
    done_r = [len(results.measured(c)) for c in rcells]
    todo = [s for s in schedule.remaining(slots, done_w, done_r)
            if rcells[s.cell]["status"] != "skipped"]
    results.retry_failed(res)
    bar = progress.Progress(len(todo), sum(cells[s.cell].est_s for s in todo), stream,
                            enabled=not quiet)
    try:
        for slot in todo:
            cell, rc = cells[slot.cell], rcells[slot.cell]
            if rc["status"] in ("failed", "skipped"):
                bar.step(cell.key + " (" + rc["status"] + ")", cell.est_s)
                continue
            out = run_cell(engine_path, cell)
            if out.status == "ok":
                results.add_samples(res, slot.cell, out.samples, slot.warmup)
            else:
                results.cell_failed(res, slot.cell, out.status, out.error)
                if not quiet:
                    stream.write(f"\n{cell.key}: {out.status}: {out.error}\n")
            results.save(res, out_path)
            bar.step(cell.key, cell.est_s)
    except KeyboardInterrupt:
        bar.close()
        results.save(res, out_path)
        n = sum(len(c["samples"]) for c in rcells)
        stream.write(f"interrupted: {n} samples saved in {out_path}; continue with"
                     f" `ipclab run --resume {out_path}`\n")
        return 130
    bar.close()
    results.finish(res)
    results.save(res, out_path)
    return 0


def run_cell(engine_path, cell):
    """One sample of a cell: a peer program's, or the engine's."""
    return peers.run_cell(cell) if peers.is_peer(cell) else engine.run_cell(engine_path, cell)


def argv_for(engine_path, cell):
    """The command line one sample of a cell runs (for --dry-run)."""
    return peers.argv_for(cell) if peers.is_peer(cell) else engine.argv_for(engine_path, cell)


def default_id(suite, mode):
    return f"{proc.stamp()}-{suite}-{mode}"


def default_path(run_id):
    return str(Path("results") / (run_id + ".json"))
