# SPDX-License-Identifier: MIT
"""What a sample's numbers mean: the metric path language, and which metrics a cell is
judged by.

A path names one number in an engine sample: "metrics.NAME", "latency.KEY.FIELD",
"counters.NAME", "params.NAME", "cost.NAME" (the lab's cost-model counts of a deterministic
sample, ipclab/deterministic/cost.py) or "primary" (the first metric that has a better direction),
optionally divided by other paths and multiplied by a constant:
"counters.cpu_migrations / params.transfers * 1e6"; terms of that kind may be added with
"+": "metrics.empty_send_ns + metrics.empty_recv_ns".
"""

import math

from ipclab import Error, stats
from ipclab.results import invocations, measured

# What compare tests for each workload, primary first.  A path missing from the samples is
# left out, and a workload not listed compares every metric whose "better" is higher or
# lower.
COMPARE_METRICS = {
    "pipe-sweep": ["metrics.throughput", "latency.write.mean", "latency.write.p99"],
    "token-ring": ["metrics.cs_per_transfer", "metrics.elapsed_s", "counters.cpu_migrations"],
}


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
    if head in ("counters", "params", "cost"):
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
    """One number from a sample, or None when a part of the path is missing."""
    if "+" in path:
        terms = [metric_value(sample, t) for t in path.split("+")]
        return None if any(t is None for t in terms) else sum(terms)
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


_HEADS = ("metrics", "latency", "counters", "params", "cost")


def check_path(path):
    """Error (exit 2) when `path` is not a sentence of the path language above; whether a
    cell's samples have it is for metric_value to say."""
    for term in path.split("+"):
        body, star, k = term.partition("*")
        try:
            if star:
                float(k)
        except ValueError:
            raise Error(f"metric path {path!r}: {k.strip()!r} is not a number") from None
        for part in (p.strip() for p in body.split("/")):
            head, _, rest = part.partition(".")
            if part not in ("primary", "elapsed_s") and not (
                    head in _HEADS and rest and (head != "latency" or "." in rest)):
                raise Error(f"metric path {path!r}: {part!r} is not metrics.NAME,"
                            " latency.KEY.FIELD, counters.NAME, params.NAME, cost.NAME or"
                            " primary")


def metric_values(cell, path):
    """One value per engine invocation (results.invocations): the median of its samples'
    values of `path`, so that n counts invocations, which are what repeat independently."""
    out = []
    for group in invocations(cell):
        vals = [v for v in (metric_value(s, path) for s in group)
                if v is not None and math.isfinite(v)]
        if vals:
            out.append(stats.median(vals))
    return out


def metric_info(cell, path):
    """(unit, better) for a path, from the cell's samples."""
    base = path.split("+")[0].split("/")[0].split("*")[0].strip()
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


def direction_verdict(better, up):
    """The one better/worse decision: "better" or "worse" for a metric that moved up (True)
    or down, by whether higher or lower is better; "changed" when its `better` says
    neither."""
    if better not in ("higher", "lower"):
        return "changed"
    return "better" if up == (better == "higher") else "worse"


def metrics_for(cell):
    """Metric paths compared for a cell, primary first."""
    samples = measured(cell)
    if not samples:
        return []
    wanted = COMPARE_METRICS.get(cell.get("workload"))
    if wanted:
        have = [p for p in wanted if metric_value(samples[0], p) is not None]
        if have:
            return have
    names = [n for n, m in samples[0].get("metrics", {}).items()
             if isinstance(m, dict) and m.get("better") in ("higher", "lower")]
    return ["metrics." + n for n in names]
