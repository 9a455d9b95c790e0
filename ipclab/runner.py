# SPDX-License-Identifier: MIT
"""Run a suite: schedule samples, call the engine, save after every sample."""

import os
import sys

from ipclab import engine, progress, results, schedule, suites


def cells_from_results(res):
    """Cell objects rebuilt from a results file (what --resume runs)."""
    known = {}
    for s in suites.SUITES.values():
        for mode in (suites.QUICK, suites.FULL):
            for c in s.cells(mode):
                known[(c.key, tuple(c.args))] = c.est_s
    out = []
    for c in res["cells"]:
        est = known.get((c["key"], tuple(c.get("args", []))), 1.0)
        out.append(suites.Cell(c["key"], c["workload"], list(c.get("args", [])),
                               c.get("suite", ""), est))
    return out


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
    for c in rcells:
        if c["status"] == "failed":
            # A resumed run tries failed cells again.
            c["status"], c["error"] = "pending", ""
    bar = progress.Progress(len(todo), sum(cells[s.cell].est_s for s in todo), stream,
                            enabled=not quiet)
    try:
        for slot in todo:
            cell, rc = cells[slot.cell], rcells[slot.cell]
            if rc["status"] in ("failed", "skipped"):
                bar.step(cell.key + " (" + rc["status"] + ")", cell.est_s)
                continue
            out = engine.run_cell(engine_path, cell)
            if out.status == "ok":
                for s in out.samples:
                    if slot.warmup:
                        s["warmup"] = True
                    rc["samples"].append(s)
                rc["status"] = "ok"
                if not res["env"] and out.samples[0].get("env"):
                    res["env"] = out.samples[0]["env"]
                    res["meta"].setdefault("accel", res["env"].get("accel", "native"))
            else:
                rc["status"], rc["error"] = out.status, out.error
                if not quiet:
                    stream.write("\n%s: %s: %s\n" % (cell.key, out.status, out.error))
            results.save(res, out_path)
            bar.step(cell.key, cell.est_s)
    except KeyboardInterrupt:
        bar.close()
        results.save(res, out_path)
        n = sum(len(c["samples"]) for c in rcells)
        stream.write("interrupted: %d samples saved in %s; continue with"
                     " `ipclab run --resume %s`\n" % (n, out_path, out_path))
        return 130
    bar.close()
    res["complete"] = all(c["status"] in ("ok", "skipped", "failed") for c in rcells) and \
        all(len(results.measured(c)) >= plan["reps"] or c["status"] != "ok" for c in rcells)
    for c in rcells:
        if c["status"] == "pending":
            c["status"] = "failed"
            c["error"] = c["error"] or "no sample"
    results.save(res, out_path)
    return 0


def default_id(suite, mode):
    import datetime
    t = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return "%s-%s-%s" % (t, suite, mode)


def default_path(run_id):
    return os.path.join("results", run_id + ".json")
