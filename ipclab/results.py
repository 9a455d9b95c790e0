# SPDX-License-Identifier: MIT
"""The results file: versioned JSON that keeps every raw engine sample.

{"schema": "ipclab-results/N" (VERSION), "id", "suite", "mode", "created", "updated",
 "meta": {..., "accel"}, "host": {the machine that ran it}, "env": {from the first sample},
 "plan": {"reps", "warmups", "order_seed", "engine_sha256" (a one-engine run's engine)},
 "pair": {"id", "side", "sides": [{"name", "engine", "engine_sha256", "args"}], "files"},
         only in the two files of one run with two sides (`run --side`); each of their
         samples then carries its "round",
 "cells": [{"key", "suite", "workload", "args", "samples": [...],
            "status": "ok|failed|skipped|pending", "error"}],
         a sample of a deterministic lab boot also has "cost": the cost model's counts over
         its measured section (ipclab/deterministic/cost.py), and meta "cost_model" the model,
 "complete": bool}

The file is rewritten atomically (temp file + rename) after every sample, so
an interrupted run loses nothing and `run --resume FILE` carries on.

This module is the schema's one owner: every field is set here (new, add_samples,
cell_failed, finish, tag, merge_boots), whoever calls it, and the fields others need are
read here (catalog, accel, guest_clock, guest_cpus, build, kernel_base, lab_boots,
cost_model, other_meta). What a sample's numbers mean is ipclab/metrics.py's.

Versions. The version moves with every change to the format; a reader takes a file of any
version up to VERSION (`version_of`), and one that lacks a later version's fields is read as
before them. Versions 1 to 6 were all written as "ipclab-results/1" (their additions were
optional), so such a file may hold any of the fields of 2 to 6.
  1  (2026-11-22) id, suite, mode, created, updated, meta, env, plan, cells, complete.
  2  (2026-11-23) "host" (the machine, envinfo.collect); meta "lab", "variant", "kernel",
     "patches", "clock" (how a lab guest kept time) from the lab's tag; a pooled A/B side's
     cells "boots_ok", "boot_errors" and samples "lab_boot".
  3  (2026-11-23) meta "build" (what exactly was built: commit, patches, config hash, base).
  4  (2026-11-23) "pair" and samples' "round": the two files of one run with two sides.
  5  (2026-11-25) samples' "cost" and meta "cost_model" (deterministic lab boots).
  6  (2026-11-27) "catalog": the engine's ladder rungs and sweep grid the seed tables are
     built from (engine.analysis_catalog). Without it, `catalog` returns None and the suites
     ask this checkout's engine, as they did.
  7  (2026-11-28) nothing added: the first version written under its own number
     ("ipclab-results/7"), so that the number says which of the above a file can hold.
A change to the format adds its line here and raises VERSION.
"""

import json
import math
from pathlib import Path

from ipclab import EXIT_FAILED, Error, proc, safeio

VERSION = 7
_PREFIX = "ipclab-results/"
SCHEMA = f"{_PREFIX}{VERSION}"


def version_of(data):
    """The format version a results object says it is in, or None when it is no results
    object of a version this reader knows (1..VERSION)."""
    s = data.get("schema") if isinstance(data, dict) else None
    if not isinstance(s, str) or not s.startswith(_PREFIX):
        return None
    n = s[len(_PREFIX):]
    return int(n) if n.isdigit() and 1 <= int(n) <= VERSION else None


def new(run_id, suite, mode, cells, reps, warmups, order_seed, meta=None, host=None,
        pair=None, catalog=None, engine_sha256=None):
    res = {
        "schema": SCHEMA,
        "id": run_id,
        "suite": suite,
        "mode": mode,
        "created": proc.now_iso(),
        "updated": proc.now_iso(),
        "meta": dict(meta or {}),
        "env": {},
        "plan": {"reps": reps, "warmups": warmups, "order_seed": order_seed},
        "cells": [{"key": c.key, "suite": c.suite, "workload": c.workload,
                   "args": list(c.args), "samples": [], "status": "pending", "error": ""}
                  for c in cells],
        "complete": False,
    }
    if engine_sha256 is not None:
        res["plan"]["engine_sha256"] = engine_sha256
    if host is not None:
        res["host"] = host
    if pair is not None:
        res["pair"] = pair
    if catalog is not None:
        res["catalog"] = catalog
    return res


def sides_of_one_run(a, b):
    """True when a and b are the two sides of one run (`run --side`): their rounds pair."""
    pa, pb = a.get("pair"), b.get("pair")
    return isinstance(pa, dict) and isinstance(pb, dict) and bool(pa.get("id")) and \
        pa.get("id") == pb.get("id") and pa.get("side") != pb.get("side")


def dumps(results):
    """JSON text with one top-level field, cell header and sample per line.

    Samples are compact: the file is rewritten after every sample, and an
    indented dump of a quick seeds run (4 MB, mostly histogram buckets)
    took 0.3 s per save, a third of a minute over a run.
    """
    items = []
    for k, v in results.items():
        if k == "cells" and isinstance(v, list):
            cells = []
            for c in v:
                head = {ck: cv for ck, cv in c.items() if ck != "samples"}
                text = json.dumps(head)[:-1]
                sep = ", " if head else ""
                samples = ",\n   ".join(json.dumps(smp, separators=(",", ":"))
                                        for smp in c.get("samples", []))
                body = f"\n   {samples}\n  " if samples else ""
                cells.append(f'  {text}{sep}"samples": [{body}]}}')
            joined = ",\n".join(cells)
            items.append(f' "cells": [\n{joined}\n ]')
        else:
            items.append(f" {json.dumps(k)}: {json.dumps(v)}")
    return "{\n" + ",\n".join(items) + "\n}\n"


def save(results, path):
    results["updated"] = proc.now_iso()
    proc.write_text_atomic(path, dumps(results))


def load(path):
    """Load and check a results file (FILE.json, or FILE.json.gz as gzip writes it); Error
    (one line, exit 2) if it is unusable."""
    safeio.check_readable(path)
    try:
        with safeio.open_text(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise Error(f"{path}: no such results file")
    except IsADirectoryError:
        raise Error(f"{path}: is a directory, not a results file")
    except json.JSONDecodeError as e:
        raise Error(f"{path}: corrupt results file (invalid JSON at line {e.lineno} column"
                    f" {e.colno})")
    except RecursionError:
        raise Error(f"{path}: corrupt results file (JSON nested too deeply)")
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise Error(f"{path}: cannot read: {e}")
    if version_of(data) is None:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise Error(f"{path}: not an ipclab results file of a version this ipclab reads"
                    f" (schema {found!r}, expected {_PREFIX}1 to {SCHEMA})")
    cells = data.get("cells")
    if not isinstance(cells, list) or not all(
            isinstance(c, dict) and isinstance(c.get("key"), str)
            and isinstance(c.get("samples"), list) for c in cells):
        raise Error(f"{path}: corrupt results file (bad \"cells\" list)")
    keys = [c["key"] for c in cells]
    if len(set(keys)) != len(keys):
        twice = next(k for k in keys if keys.count(k) > 1)
        raise Error(f"{path}: corrupt results file (cell {twice!r} is there twice)")
    for k in ("meta", "env", "plan", "host", "pair", "catalog"):
        if k in data and not isinstance(data[k], dict):
            raise Error(f"{path}: corrupt results file ({k!r} is not an object)")
    for k in ("id", "suite", "mode"):
        if k in data and not isinstance(data[k], str):
            raise Error(f"{path}: corrupt results file ({k!r} is not a string)")
    _check_names(data, path)
    why = catalog_problem(data.get("catalog"))
    if why:
        raise Error(f"{path}: corrupt results file (catalog: {why})")
    for c in cells:
        c.setdefault("status", "ok")
        c.setdefault("error", "")
        c.setdefault("workload", c["key"].split("/")[0])
        c.setdefault("suite", data.get("suite", ""))
        c.setdefault("args", [])
        if not isinstance(c["args"], list) or not all(isinstance(a, str) for a in c["args"]) \
                or not all(isinstance(c[k], str) for k in ("status", "error", "workload",
                                                            "suite")):
            raise Error(f"{path}: corrupt results file (cell {c['key']} has bad fields)")
        for smp in c["samples"]:
            why = _sample_problem(smp)
            if why:
                raise Error(f"{path}: corrupt results file (cell {c['key']}: {why})")
    data.setdefault("meta", {})
    data.setdefault("env", {})
    data.setdefault("plan", {})
    data.setdefault("id", Path(path).stem)
    return data


def _check_names(data, path):
    """A run's id names its report folder, and a pair's files are found beside it: each must
    be one plain name, or a crafted file could make `report` write anywhere."""
    pair = data.get("pair", {})
    files = pair.get("files") if isinstance(pair.get("files"), list) else []
    for what, name in [("id", data.get("id")), ("pair id", pair.get("id"))] + \
            [("pair file", f) for f in files]:
        if name is not None and not safeio.plain_name(name):
            raise Error(f"{path}: corrupt results file ({what} {name!r} is not a plain name:"
                        " no path separators, not '.' or '..')")


def catalog_problem(cat):
    """Why a catalog (engine.analysis_catalog's shape) cannot build the seed tables, or
    None: the ladder a list of {"rung": name, "args": [str]}, the sweep's writers and
    readers lists of counts, which become cell keys."""
    if cat is None:
        return None
    if not isinstance(cat, dict):
        return "not an object"
    ladder = cat.get("ladder", [])
    if not isinstance(ladder, list):
        return "the ladder is not a list"
    for rung in ladder:
        if not isinstance(rung, dict) or not isinstance(rung.get("rung"), str) or \
                not isinstance(rung.get("args"), list) or \
                not all(isinstance(a, str) for a in rung["args"]):
            return f"a ladder rung is not {{\"rung\": NAME, \"args\": [...]}} ({_brief(rung)})"
    sweep = cat.get("sweep", {})
    if not isinstance(sweep, dict):
        return "the sweep is not an object"
    for k in ("writers", "readers"):
        v = sweep.get(k, [])
        if not isinstance(v, list) or not all(
                isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 1 << 20 for x in v):
            return f"the sweep's {k} are not a list of counts from 1 to {1 << 20} ({_brief(v)})"
    return None


def _brief(v):
    text = json.dumps(v, default=str) if not isinstance(v, float) else repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _sample_problem(smp):
    """Why an engine sample cannot be used, or None."""
    if not isinstance(smp, dict):
        return "a sample is not an object"
    for k in ("metrics", "latency", "counters", "params", "env", "notes"):
        if k in smp and not isinstance(smp[k], dict):
            return f"sample field {k!r} is not an object"
    for name, m in smp.get("metrics", {}).items():
        value = m.get("value", 0) if isinstance(m, dict) else m
        if isinstance(m, dict):
            if not isinstance(m.get("unit", ""), str) or not isinstance(m.get("better", ""), str):
                return f"metric {name!r} has a bad unit or better"
        elif not isinstance(m, (int, float, type(None))):
            return f"metric {name!r} is neither a number nor an object"
        # Every figure the engine and the peers' parsers make is a finite count, rate or
        # time, so none is below zero; a statistic over a value that is not would
        # silently drop it or take it.
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"metric {name!r} has no numeric value ({value!r})"
        if value < 0 or not _plausible(value):
            return f"metric {name!r} is {_show(value)}, not a finite number of 0 or more" \
                f" (0, or {1 / LIMIT:g} to {LIMIT:g})"
    if "round" in smp and (not isinstance(smp["round"], int) or isinstance(smp["round"], bool)):
        return "a sample's round is not an integer"
    for name, lat in smp.get("latency", {}).items():
        if not isinstance(lat, dict):
            return f"latency {name!r} is not an object"
    numbers = [("elapsed_s", smp.get("elapsed_s"))]
    numbers += [(f"latency {name!r} {k!r}", v) for name, lat in smp.get("latency", {}).items()
                for k, v in lat.items()]
    numbers += [(f"{head} {k!r}", v) for head in ("counters", "params", "cost")
                for k, v in smp.get(head, {}).items()]
    for what, v in numbers:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not _plausible(v):
            return f"{what} is {_show(v)}, not 0 or a finite number of size {1 / LIMIT:g} to" \
                f" {LIMIT:g}"
    return None


# No count, rate, time or parameter that the engine, a peer or the lab's counter records
# comes near 10^20 (a day of pipe writes at 10^9 a second is 10^14; the engine's largest
# option, an unsigned 64-bit integer, is 1.8e19), nor is one nonzero below 10^-20. A
# hand-edited value past either would overflow the statistics (a metric path divides two
# values, a variance squares them, a ratio divides two medians) into infinities that no
# table may print.
LIMIT = 1e20


def _plausible(v):
    """True for 0 and for a finite number whose size is within 1/LIMIT .. LIMIT; an integer
    too large for a float is compared as one, not converted."""
    if isinstance(v, int):
        return abs(v) <= LIMIT
    return math.isfinite(v) and (v == 0 or 1 / LIMIT <= abs(v) <= LIMIT)


def _show(v):
    if isinstance(v, int) and abs(v) > LIMIT:
        return f"an integer of {len(str(abs(v)))} digits"
    return f"{v:.3g}"


# ---- what others read --------------------------------------------------------------------


def catalog(res):
    """The engine's analysis catalog the run was made with (engine.analysis_catalog), or None
    for a file older than it (the suites then ask this checkout's engine)."""
    cat = res.get("catalog")
    return cat if isinstance(cat, dict) else None


def _meta(res):
    meta = res.get("meta")
    return meta if isinstance(meta, dict) else {}


def accel(res, default="native"):
    """How the run's machine ran: native, kvm or tcg (the lab's tag, else the engine's env)."""
    return _meta(res).get("accel") or res.get("env", {}).get("accel") or default


def guest_clock(res):
    """How a lab guest kept time (meta.clock: mode, icount, cpus), or None."""
    clock = _meta(res).get("clock")
    return clock if isinstance(clock, dict) else None


def guest_cpus(res):
    """The CPUs the run had: the lab guest's, else the engine's nproc."""
    clock = guest_clock(res)
    if clock and clock.get("cpus"):
        return clock["cpus"]
    return res.get("env", {}).get("nproc")


def build(res):
    """What the lab built for the run (meta.build), or None."""
    b = _meta(res).get("build")
    return b if isinstance(b, dict) else None


def kernel_base(res):
    """The kernel base a results file's kernel was built on (meta.build.base.name: `mainline`,
    `lts`), with its config flavour when it is not the tiny one (`mainline/production`) and
    its architecture when it is not x86_64 (`mainline@arm64`): A/A floors are kept per base,
    config and architecture. None for a kernel the lab did not build from a base."""
    b = build(res) or {}
    base = b.get("base")
    if not isinstance(base, dict):
        return None
    name, flavour = base.get("name"), b.get("config_flavour")
    if flavour not in (None, "tiny"):
        name = f"{name}/{flavour}"
    # another architecture than x86_64 (`mainline@arm64`) keeps floors of its own too
    return f"{name}@{b['arch']}" if b.get("arch") else name


def base_arch(key):
    """The architecture of a kernel_base() key: what follows its `@`, else x86_64."""
    return str(key).partition("@")[2] or "x86_64"


def lab_boots(res):
    """The lab's boot records: one per boot of a pooled A/B side, one for a single boot."""
    lab = _meta(res).get("lab")
    return lab if isinstance(lab, list) else [lab]


def variant(res, default=None):
    return _meta(res).get("variant", default)


def cost_model(res):
    """The cost model the samples' costs were counted with (meta.cost_model), or None."""
    return _meta(res).get("cost_model")


def other_meta(res):
    """The meta a report lists as key=value: all but what it prints on lines of its own."""
    return {k: v for k, v in _meta(res).items() if k not in ("accel", "build")}


def measured(cell):
    """The cell's samples that count: warmups excluded."""
    return [s for s in cell["samples"] if not s.get("warmup")]


def _index(smp):
    i = smp.get("sample")
    return i if isinstance(i, int) and not isinstance(i, bool) else None


def invocations(cell):
    """The cell's measured samples grouped by the engine invocation that made them, in
    order: `-- --samples 5` makes five samples of one invocation, which share its process,
    its placement and its luck and so are one repetition, not five. The engine numbers an
    invocation's measured samples 0, 1, ... ("sample"), and add_samples keeps them
    together, so a group ends where that number does not go up (or the round or boot
    changes); a sample without a number is an invocation of its own."""
    groups, prev = [], None
    for smp in measured(cell):
        i = _index(smp)
        same = prev is not None and i is not None and _index(prev) is not None and \
            i > _index(prev) and all(smp.get(k) == prev.get(k) for k in ("round", "lab_boot"))
        if same:
            groups[-1].append(smp)
        else:
            groups.append([smp])
        prev = smp
    return groups


# ---- what a run adds -----------------------------------------------------------------------


def add_samples(res, i, samples, warmup=False, round_=None):
    """Cell i's engine samples from one invocation; the first sample's env becomes the run's.
    round_: the schedule's round, kept in each sample when the run has two sides, whose
    comparison pairs them by it."""
    cell = res["cells"][i]
    for s in samples:
        if warmup:
            s["warmup"] = True
        if round_ is not None:
            s["round"] = round_
        cell["samples"].append(s)
    cell["status"], cell["error"] = "ok", ""
    if not res["env"] and samples and samples[0].get("env"):
        res["env"] = samples[0]["env"]
        res["meta"].setdefault("accel", res["env"].get("accel", "native"))


def cell_failed(res, i, status, error):
    res["cells"][i]["status"], res["cells"][i]["error"] = status, error


def retry_failed(res):
    """A resumed run tries its failed cells again."""
    for c in res["cells"]:
        if c["status"] == "failed":
            c["status"], c["error"] = "pending", ""


def finish(res):
    """At the end of a run: complete or not, and cells that got nothing are failed."""
    reps = res["plan"]["reps"]
    cells = res["cells"]
    res["complete"] = all(c["status"] in ("ok", "skipped", "failed") for c in cells) and \
        all(len(invocations(c)) >= reps or c["status"] != "ok" for c in cells)
    for c in cells:
        if c["status"] == "pending":
            c["status"] = "failed"
            c["error"] = c["error"] or "no sample"


# The meta keys this tool records (add_samples, tag, set_costs, merge_boots) and reads back
# with a shape of its own: --meta may not set them.
TOOL_META = ("accel", "boots", "build", "clock", "cost_model", "emulated", "lab", "patches",
             "side", "variant")


def tag(res, **meta):
    """Say where a run was measured (the lab: variant, kernel, patches, build (what exactly
    was built: commit, patch and config hashes), accel, clock, its boot record). These fields
    are the host's to set, so they overwrite the guest's."""
    res.setdefault("meta", {}).update(meta)
    return res


def set_costs(res, costs, model):
    """The lab's cost-model counts of each sample's measured section ({(cell index, sample
    index): record}, cost.sample_costs) as the sample's "cost", and the model they were
    made with as meta.cost_model."""
    for (ci, si), rec in costs.items():
        res["cells"][ci]["samples"][si]["cost"] = rec
    res.setdefault("meta", {})["cost_model"] = model
    return res


def fail_all(res, error):
    """A run whose every cell is suspect (the guest's kernel splatted or died): cells that
    were ok or never finished fail with `error`."""
    for cell in res.get("cells", []):
        if cell.get("status") in ("ok", "pending"):
            cell["status"] = "failed"
            cell["error"] = error
    res["complete"] = False


# What must agree between the boots one side of an A/B pools.
_SAME_ACROSS_BOOTS = ("schema", "suite", "mode")
_SAME_META = ("variant", "kernel", "patches", "build", "accel")


def _clock_shape(res):
    c = _meta(res).get("clock")
    return {k: c.get(k) for k in ("mode", "icount", "cpus")} if isinstance(c, dict) else c


# A cell the lab writes for a boot that left no results: the evidence of the failure, kept
# in the results where the boot's cells would have been, never a measurement.
LAB_CELL = "lab:"


def is_lab_cell(cell):
    return str(cell.get("key", "")).startswith(LAB_CELL)


def merge_boots(runs, label):
    """One results object for one side of an A/B: each cell's samples pooled across boots,
    each sample marked with its boot. Error if the boots do not measure the same thing."""
    if not runs:
        raise Error(f"{label}: no boots to merge", EXIT_FAILED)
    first = runs[0]
    for n, res in enumerate(runs[1:], 2):
        for k in _SAME_ACROSS_BOOTS:
            if res.get(k) != first.get(k):
                raise Error(f"{label}: boot {n} has {k} {res.get(k)!r}, boot 1 {first.get(k)!r}",
                            EXIT_FAILED)
        for k in _SAME_META:
            a, b = first.get("meta", {}).get(k), res.get("meta", {}).get(k)
            if a != b:
                raise Error(f"{label}: boot {n} ran {k}={b!r}, boot 1 {k}={a!r}", EXIT_FAILED)
        if _clock_shape(res) != _clock_shape(first):
            raise Error(f"{label}: boot {n} kept time differently from boot 1", EXIT_FAILED)
        shape = [(c["key"], c.get("args")) for c in res.get("cells", [])
                 if not is_lab_cell(c)]
        first_shape = [(c["key"], c.get("args")) for c in first.get("cells", [])
                       if not is_lab_cell(c)]
        if shape and first_shape and shape != first_shape:
            raise Error(f"{label}: boot {n} ran other cells than boot 1", EXIT_FAILED)
    cells, order = {}, []
    for boot_no, res in enumerate(runs, 1):
        for cell in res.get("cells", []):
            key = cell["key"]
            if key not in cells:
                cells[key] = {**cell, "samples": [], "status": "failed", "error": "",
                              "boots_ok": 0, "boot_errors": []}
                order.append(key)
            m = cells[key]
            if cell.get("status") == "ok":
                # Which boot a sample came from, for analyses that model boot-to-boot
                # variance instead of pooling.
                m["samples"].extend({**s, "lab_boot": boot_no} for s in cell.get("samples", []))
                m["boots_ok"] += 1
                m["status"], m["error"] = "ok", ""
            else:
                m["boot_errors"].append(cell.get("error") or "")
                if m["status"] != "ok":
                    m["error"] = cell.get("error") or "failed"
    meta = dict(first.get("meta", {}))
    meta.update(lab=[r.get("meta", {}).get("lab") for r in runs], boots=len(runs), side=label)
    merged = {"schema": first.get("schema", SCHEMA), "id": f"ab-{label}",
              "suite": first.get("suite"), "mode": first.get("mode"), "meta": meta,
              "env": dict(first.get("env", {})), "plan": dict(first.get("plan", {})),
              "cells": [cells[k] for k in order],
              "complete": all(r.get("complete") for r in runs)}
    if catalog(first) is not None:
        merged["catalog"] = catalog(first)
    return merged
