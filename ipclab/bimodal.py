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

from ipclab import metrics, results, stats


@dataclass(frozen=True)
class Rule:
    """What counts as two modes (split): at least `least` values; the cut is the widest gap
    between neighbouring log values among the cuts that leave each side `cluster` values and
    a `share` of them or more; two modes when that gap is `separation` pooled standard
    deviations of the two sides (the deviation taken as at least `sd_floor`) and `min_gap`
    wide or more."""
    least: int
    cluster: int
    share: float
    separation: float
    min_gap: float
    sd_floor: float


# A timed cell's samples: a lone outlier is not a mode, nor is under a fifth of the samples;
# the clusters' nearest values are 1.5x apart, as a busy machine's slow stragglers are not.
SAMPLES = Rule(least=6, cluster=2, share=0.2, separation=4.0, min_gap=math.log(1.5),
               sd_floor=1e-3)
# Deterministic A/A boots' medians (floor.find_modes): one boot in a mode of its own is a
# mode, since counts repeat to about 1e-6 (sd_floor); normal boot-to-boot noise of 16 boots
# puts its widest gap under 3 pooled deviations almost always (docs/statistics.md).
BOOTS = Rule(least=4, cluster=1, share=0.0, separation=8.0, min_gap=0.001, sd_floor=1e-6)

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


def split(values, rule=SAMPLES):
    """Two modes of positive values by the one rule (Rule), or None when they do not
    separate. The values are sorted by log, and the widest gap the rule allows is the cut."""
    logs = sorted((math.log(v), i) for i, v in enumerate(values)
                  if isinstance(v, (int, float)) and math.isfinite(v) and v > 0)
    n = len(logs)
    if n < rule.least:
        return None
    least = max(rule.cluster, math.ceil(n * rule.share))
    cuts = range(least, n - least + 1)
    if not cuts:
        return None
    # The first of equally wide gaps.
    k = max(cuts, key=lambda c: (logs[c][0] - logs[c - 1][0], -c))
    lo, hi = [x for x, _ in logs[:k]], [x for x, _ in logs[k:]]
    gap = hi[0] - lo[-1]
    sd = max(math.sqrt((_ss(lo) + _ss(hi)) / max(1, n - 2)), rule.sd_floor)
    if gap < rule.min_gap or gap / sd < rule.separation:
        return None
    low, high = [i for _, i in logs[:k]], [i for _, i in logs[k:]]
    return Split(low, high, stats.median([values[i] for i in low]),
                 stats.median([values[i] for i in high]), gap / sd)


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
class BimodalCell:
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
    """A BimodalCell when the cell's samples of its primary metric fall into two modes."""
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
                  " puts both sides on one CPU, `--cpus 0,1` on two (`ipclab env` measures how long"
                  " crossing takes).")
    else:
        advice = ("Its samples do not record where they ran; pinning with --cpus A,B removes"
                  " the most common cause, the scheduler's choice of CPUs.")
    return BimodalCell(cell["key"], path, unit, sp, cause, advice)


def findings(res):
    """[BimodalCell] for every cell of a results file whose samples split into modes."""
    return [f for f in (find(c) for c in res.get("cells", [])) if f]
