# SPDX-License-Identifier: MIT
"""The results file: versioned JSON that keeps every raw engine sample.

{"schema": "ipclab-results/1", "id", "suite", "mode", "created", "updated",
 "meta": {..., "accel"}, "env": {host env from the first sample},
 "plan": {"reps", "warmups", "order_seed"},
 "cells": [{"key", "suite", "workload", "args", "samples": [...],
            "status": "ok|failed|skipped|pending", "error"}],
 "complete": bool}

The file is rewritten atomically (temp file + rename) after every sample, so
an interrupted run loses nothing and `run --resume FILE` carries on.
"""

import datetime
import json
import math
import os
import tempfile
from pathlib import Path

from ipclab import UserError

SCHEMA = "ipclab-results/1"


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_results(run_id, suite, mode, cells, reps, warmups, order_seed, meta=None):
    return {
        "schema": SCHEMA,
        "id": run_id,
        "suite": suite,
        "mode": mode,
        "created": now_iso(),
        "updated": now_iso(),
        "meta": dict(meta or {}),
        "env": {},
        "plan": {"reps": reps, "warmups": warmups, "order_seed": order_seed},
        "cells": [{"key": c.key, "suite": c.suite, "workload": c.workload,
                   "args": list(c.args), "samples": [], "status": "pending", "error": ""}
                  for c in cells],
        "complete": False,
    }


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
                body = "\n   %s\n  " % samples if samples else ""
                cells.append('  %s%s"samples": [%s]}' % (text, sep, body))
            items.append(' "cells": [\n%s\n ]' % ",\n".join(cells))
        else:
            items.append(" %s: %s" % (json.dumps(k), json.dumps(v)))
    return "{\n" + ",\n".join(items) + "\n}\n"


def save(results, path):
    results["updated"] = now_iso()
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(dumps(results))
    os.replace(tmp, path)


def write_json_atomic(path, obj):
    """Any JSON document, written whole or not at all (temp file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def load(path):
    """Load and check a results file; UserError with one line if it is unusable."""
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise UserError("%s: no such results file" % path)
    except IsADirectoryError:
        raise UserError("%s: is a directory, not a results file" % path)
    except json.JSONDecodeError as e:
        raise UserError("%s: corrupt results file (invalid JSON at line %d column %d)"
                        % (path, e.lineno, e.colno))
    except RecursionError:
        raise UserError("%s: corrupt results file (JSON nested too deeply)" % path)
    except (OSError, UnicodeDecodeError) as e:
        raise UserError("%s: cannot read: %s" % (path, e))
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise UserError("%s: not an ipclab results file (schema %r, expected %r)"
                        % (path, found, SCHEMA))
    cells = data.get("cells")
    if not isinstance(cells, list) or not all(
            isinstance(c, dict) and isinstance(c.get("key"), str)
            and isinstance(c.get("samples"), list) for c in cells):
        raise UserError("%s: corrupt results file (bad \"cells\" list)" % path)
    for k in ("meta", "env", "plan", "host"):
        if k in data and not isinstance(data[k], dict):
            raise UserError("%s: corrupt results file (%r is not an object)" % (path, k))
    for k in ("id", "suite", "mode"):
        if k in data and not isinstance(data[k], str):
            raise UserError("%s: corrupt results file (%r is not a string)" % (path, k))
    for c in cells:
        c.setdefault("status", "ok")
        c.setdefault("error", "")
        c.setdefault("workload", c["key"].split("/")[0])
        c.setdefault("suite", data.get("suite", ""))
        c.setdefault("args", [])
        if not isinstance(c["args"], list) or not all(isinstance(a, str) for a in c["args"]) \
                or not all(isinstance(c[k], str) for k in ("status", "error", "workload",
                                                            "suite")):
            raise UserError("%s: corrupt results file (cell %s has bad fields)"
                            % (path, c["key"]))
        for smp in c["samples"]:
            why = _sample_problem(smp)
            if why:
                raise UserError("%s: corrupt results file (cell %s: %s)" % (path, c["key"], why))
    data.setdefault("meta", {})
    data.setdefault("env", {})
    data.setdefault("plan", {})
    data.setdefault("id", os.path.splitext(os.path.basename(path))[0])
    return data


def _sample_problem(smp):
    """Why an engine sample cannot be used, or None."""
    if not isinstance(smp, dict):
        return "a sample is not an object"
    for k in ("metrics", "latency", "counters", "params", "env", "notes"):
        if k in smp and not isinstance(smp[k], dict):
            return "sample field %r is not an object" % k
    for name, m in smp.get("metrics", {}).items():
        if isinstance(m, dict):
            if not isinstance(m.get("value", 0), (int, float, type(None))):
                return "metric %r has a non-numeric value" % name
            if not isinstance(m.get("unit", ""), str) or not isinstance(m.get("better", ""), str):
                return "metric %r has a bad unit or better" % name
        elif not isinstance(m, (int, float, type(None))):
            return "metric %r is neither a number nor an object" % name
    for name, lat in smp.get("latency", {}).items():
        if not isinstance(lat, dict):
            return "latency %r is not an object" % name
    return None


def measured(cell):
    """The cell's samples that count: warmups excluded."""
    return [s for s in cell["samples"] if not s.get("warmup")]


def _lookup(sample, path):
    if path == "elapsed_s" and "elapsed_s" not in sample.get("metrics", {}):
        v = sample.get("elapsed_s")
        return float(v) if isinstance(v, (int, float)) else None
    parts = path.split(".")
    head = parts[0]
    if head == "metrics":
        m = sample.get("metrics", {}).get(".".join(parts[1:]))
        if isinstance(m, dict):
            m = m.get("value")
        return float(m) if isinstance(m, (int, float)) else None
    if head == "latency" and len(parts) >= 3:
        lat = sample.get("latency", {}).get(parts[1], {})
        v = lat.get(".".join(parts[2:])) if isinstance(lat, dict) else None
        return float(v) if isinstance(v, (int, float)) else None
    if head in ("counters", "params"):
        v = sample.get(head, {}).get(".".join(parts[1:]))
        if isinstance(v, bool):
            v = int(v)
        return float(v) if isinstance(v, (int, float)) else None
    if head == "primary":
        name = primary_metric(sample)
        return _lookup(sample, "metrics." + name) if name else None
    v = sample.get(path)
    return float(v) if isinstance(v, (int, float)) else None


def primary_metric(sample):
    """The first metric whose "better" is higher or lower."""
    for name, m in sample.get("metrics", {}).items():
        if isinstance(m, dict) and m.get("better") in ("higher", "lower"):
            return name
    return None


def metric_value(sample, path):
    """One number from a sample.

    path is "metrics.NAME", "latency.KEY.FIELD", "counters.NAME",
    "params.NAME" or "primary", optionally divided by another path and
    multiplied by a constant: "counters.cpu_migrations / params.transfers * 1e6".
    Returns None when a part is missing.
    """
    scale = 1.0
    if "*" in path:
        path, k = path.rsplit("*", 1)
        scale = float(k)
    parts = [p.strip() for p in path.split("/")]
    v = _lookup(sample, parts[0])
    for p in parts[1:]:
        d = _lookup(sample, p)
        if v is None or not d:
            return None
        v = v / d
    return None if v is None else v * scale


def metric_values(cell, path):
    vals = [metric_value(s, path) for s in measured(cell)]
    return [v for v in vals if v is not None and math.isfinite(v)]


def metric_info(cell, path):
    """(unit, better) for a path, from the cell's samples."""
    base = path.split("/")[0].split("*")[0].strip()
    parts = base.split(".")
    for s in measured(cell):
        if parts[0] == "metrics":
            m = s.get("metrics", {}).get(".".join(parts[1:]))
            if isinstance(m, dict):
                return m.get("unit", ""), m.get("better", "none")
        elif parts[0] == "primary":
            name = primary_metric(s)
            if name:
                m = s["metrics"][name]
                return m.get("unit", ""), m.get("better", "none")
        elif parts[0] == "latency":
            lat = s.get("latency", {}).get(parts[1], {})
            return lat.get("unit", "ns"), "lower"
        elif parts[0] == "counters":
            return "", "lower"
    return "", "none"


def metric_label(cell, path):
    if path == "primary":
        for s in measured(cell):
            name = primary_metric(s)
            if name:
                return "metrics." + name
    return path
