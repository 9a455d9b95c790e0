# SPDX-License-Identifier: MIT
"""Samples that explain themselves: when a cell's samples fall into separate modes, which
ones, and the cause the samples show.

An unpinned ping-pong on a VM runs at a few microseconds per round trip when both sides
share a CPU and at tens when every transfer wakes the other CPU, and the scheduler picks
one or the other per run. The median and CV of such a cell describe neither mode. The
engine records where each side ran ("sides": CPU at start and end, migrations;
bench/README.md); this module finds the split and says which placement each mode had.
"""

import math
from dataclasses import dataclass

from ipclab import metrics, results

MIN_SAMPLES = 6         # fewer cannot show two clusters of MIN_CLUSTER
MIN_CLUSTER = 2         # a lone outlier is not a mode; nor is under a fifth of the samples
SEPARATION = 4.0        # the gap, in pooled standard deviations of the log values
MIN_GAP = math.log(1.5)  # and the clusters' nearest values 1.5x apart: a busy machine's slow
                         # stragglers come closer than that

SAME, APART, MOVED = "same CPU", "different CPUs", "migrated"
_HOW = {SAME: "on one CPU", APART: "on different CPUs", MOVED: "moving between CPUs"}


@dataclass
class Split:
    low: list           # indices (into the values given) of the lower mode
    high: list
    low_median: float
    high_median: float
    separation: float   # the gap in pooled standard deviations of the log values


def _ss(xs):
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs)


def _median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def split(values):
    """Two modes of positive values, or None when they do not separate.

    The values are sorted by log; the cut is the gap between neighbours that is widest
    relative to the pooled spread of the two sides it leaves. It counts as two modes when
    that gap is SEPARATION pooled standard deviations and MIN_GAP wide, each side holding
    MIN_CLUSTER values and a fifth of them or more."""
    logs = sorted((math.log(v), i) for i, v in enumerate(values)
                  if isinstance(v, (int, float)) and math.isfinite(v) and v > 0)
    n = len(logs)
    if n < MIN_SAMPLES:
        return None
    best = None
    least = max(MIN_CLUSTER, math.ceil(n / 5))
    for k in range(least, n - least + 1):
        lo, hi = [x for x, _ in logs[:k]], [x for x, _ in logs[k:]]
        gap = hi[0] - lo[-1]
        sd = math.sqrt((_ss(lo) + _ss(hi)) / (n - 2))
        sep = gap / max(sd, 1e-3)
        if best is None or sep > best[0]:
            best = (sep, k, gap)
    sep, k, gap = best
    if sep < SEPARATION or gap < MIN_GAP:
        return None
    low, high = [i for _, i in logs[:k]], [i for _, i in logs[k:]]
    return Split(low, high, _median([values[i] for i in low]),
                 _median([values[i] for i in high]), sep)


def placement(sample):
    """Where a sample's sides ran: SAME (every pair of sides of a copy on one CPU), APART
    (on different CPUs), MOVED (a side changed CPU), or None when the sample does not say
    or has one side per copy."""
    sides = sample.get("sides")
    if not isinstance(sides, list) or not sides:
        return None
    copies = {}
    for s in sides:
        if not isinstance(s, dict) or not all(isinstance(s.get(k), int)
                                              for k in ("cpu_start", "cpu_end")):
            return None
        if s["cpu_start"] != s["cpu_end"] or (s.get("migrations") or 0) > 0:
            return MOVED
        copies.setdefault(s.get("copy", 0), set()).add(s["cpu_start"])
    if all(len(v) == 1 for v in copies.values()) and \
            all(sum(1 for s in sides if s.get("copy", 0) == c) > 1 for c in copies):
        return SAME
    if all(len(v) > 1 for v in copies.values()):
        return APART
    return None


@dataclass
class Finding:
    key: str
    path: str
    unit: str
    split: Split
    cause: str          # what the samples show, "" when they do not say
    advice: str


def _dominant(places):
    """(placement, count) most common among places, or (None, 0)."""
    known = [p for p in places if p]
    if not known:
        return None, 0
    best = max(set(known), key=known.count)
    return best, known.count(best)


def _pinned(cell):
    return "--cpus" in cell.get("args", [])


def find(cell, path=None):
    """A Finding when the cell's samples of its primary metric fall into two modes."""
    path = path or next(iter(metrics.metrics_for(cell)), None)
    if not path:
        return None
    samples = [s for s in results.measured(cell)
               if isinstance(metrics.metric_value(s, path), (int, float))]
    sp = split([metrics.metric_value(s, path) for s in samples])
    if sp is None:
        return None
    unit, _ = metrics.metric_info(cell, path)
    lo_p = [placement(samples[i]) for i in sp.low]
    hi_p = [placement(samples[i]) for i in sp.high]
    lo, n_lo = _dominant(lo_p)
    hi, n_hi = _dominant(hi_p)
    cause = ""
    # A cause only when each mode is mostly one placement, and not the same one.
    if lo and hi and lo != hi and n_lo * 3 >= 2 * len(sp.low) and n_hi * 3 >= 2 * len(sp.high):
        cause = (f"the lower values ran with the sides {_HOW[lo]} in {n_lo} of {len(sp.low)}"
                 f" samples, the higher {_HOW[hi]} in {n_hi} of {len(sp.high)}")
    if cell.get("workload", "").startswith("peer:"):
        advice = ("A peer program does not say where it ran; under `taskset -c N` it has one"
                  " placement.")
    elif _pinned(cell):
        advice = "Its sides were pinned (--cpus) already: look for other work on those CPUs."
    elif any(p for p in lo_p + hi_p):
        advice = ("To measure one mode, choose the placement with --cpus A,B: `--cpus 0,0`"
                  " puts both sides on one CPU, `--cpus 0,1` on two (`ipclab env` measures what"
                  " crossing costs).")
    else:
        advice = ("Its samples do not record where they ran; pinning with --cpus A,B removes"
                  " the most common cause, the scheduler's choice of CPUs.")
    return Finding(cell["key"], path, unit, sp, cause, advice)


def findings(res):
    """[Finding] for every cell of a results file whose samples split into modes."""
    return [f for f in (find(c) for c in res.get("cells", [])) if f]
