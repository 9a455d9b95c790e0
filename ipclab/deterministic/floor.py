# SPDX-License-Identifier: MIT
"""The deterministic mode's A/A floor: every difference two boots of one kernel showed.

`ipclab/reference/icount-floor.json` keeps, per clock, guest CPU count and kernel base
(`mainline`, `lts`), and per cell and metric, every A/A pair that `scripts/icount-floor`
recorded: the two boots' medians, their sample counts, the relative difference, the run and
its date. Nothing is ever replaced or reduced to a maximum; a run recorded twice is
recorded once.

What the decision rule (`deterministic.judge`) takes from a cell's pairs is a `Floor`:

- `rms`, the root mean square of the k differences. An A/A difference has mean 0 (the two
  boots are exchangeable), so with normal boot-to-boot noise a new difference over `rms` is
  distributed as Student's t with k degrees of freedom, and t(k, 0.975) x rms is a 95%
  prediction bound for it: the rule's false-positive rate is 5% per row, whatever k;
- whether it is trusted: from `TRUST_PAIRS` (8) pairs; with fewer, every verdict says
  "floor from k pairs" (the bound is still at 5%, but wide, and a mode that one boot in
  eight lands in is likely not to have been seen);
- `modes`: when the boots' medians fall into two groups far apart against their spread
  (mqueue's empty-queue receive on 6.12: one boot in eight in a mode 2% away), the cell is
  bimodal. A floor from such a cell would be wide enough to blind the rule to anything
  smaller than the jump; the rule says so and asks for 3 boots a side instead, which the
  boot-level paired test then compares.

Older files kept only each cell's largest |difference|: those maxima stay in the cell's
`legacy` record, marked as such, and the rule does not use them.
"""

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ipclab import bimodal


FLOOR_FILE = Path(__file__).parents[1] / "reference" / "icount-floor.json"
SCHEMA = "ipclab-icount-floor/2"
ABOUT = ("A/A noise of the deterministic mode: per clock, guest CPUs and kernel base, and per"
         " cell and metric, every pair of boots of one kernel that scripts/icount-floor"
         " recorded (the two medians, their sample counts, the relative difference new/old"
         " - 1, the run and its date). Appended to, never replaced; docs/statistics.md says"
         " how ipclab/deterministic/rule.py uses it.")

# A floor is trusted from this many pairs: docs/statistics.md has the simulation behind it.
TRUST_PAIRS = 8


def key(cell_key, path):
    return f"{cell_key} | {path}"


@dataclass
class Modes:
    """Two modes of a cell's A/A boots: each mode's median and how many boots fell in it."""
    levels: tuple
    counts: tuple
    separation: float       # the gap in pooled standard deviations

    @property
    def boots(self):
        return sum(self.counts)

    def text(self):
        lo, hi = self.levels
        a, b = self.counts
        return (f"bimodal in A/A: {a} of {self.boots} boots at {lo:.6g}, {b} at {hi:.6g}"
                f" ({(hi / lo - 1) * 100:+.2f}%)")


def find_modes(medians):
    """Modes of positive boot medians by bimodal.split's one rule, with its thresholds for
    boots (bimodal.BOOTS), or None.  With fewer than 4 there is nothing to tell apart."""
    sp = bimodal.split(medians, bimodal.BOOTS)
    if sp is None:
        return None
    return Modes((sp.low_median, sp.high_median), (len(sp.low), len(sp.high)), sp.separation)


@dataclass
class Floor:
    """One cell and metric's A/A pairs, as the rule uses them (module docstring)."""
    deltas: tuple = ()          # new/old - 1 of each pair
    n: int = 0                  # the fewest samples per boot behind them
    modes: Modes | None = None
    legacy: dict | None = None  # an older file's largest |difference|: kept, not used
    dates: tuple = ()

    @property
    def k(self):
        return len(self.deltas)

    @property
    def rms(self):
        if not self.deltas:
            return math.nan
        return math.sqrt(sum(math.log1p(d) ** 2 for d in self.deltas) / len(self.deltas))

    @property
    def trusted(self):
        return self.k >= TRUST_PAIRS

    def quantile(self, level=0.975):
        """t(k, level): the prediction bound's factor on rms."""
        import scipy.special as sps
        return float(sps.stdtrit(self.k, level)) if self.k else math.nan


def revive(obj):
    """A Floor back from dataclasses.asdict (a bisect log keeps its measurements so); None
    for anything else, such as an older log's bare maximum, which the rule cannot use."""
    if isinstance(obj, Floor):
        return obj
    if not isinstance(obj, dict) or not isinstance(obj.get("deltas"), list):
        return None
    modes = obj.get("modes")
    return Floor(tuple(obj["deltas"]), int(obj.get("n") or 0),
                 Modes(tuple(modes["levels"]), tuple(modes["counts"]), modes["separation"])
                 if isinstance(modes, dict) else None, obj.get("legacy"),
                 tuple(obj.get("dates") or ()))


def from_record(rec):
    """A Floor from a cell's record in the file."""
    pairs = [p for p in rec.get("pairs", []) if isinstance(p.get("delta"), (int, float))]
    meds = [m for p in pairs for m in p.get("medians", [])]
    ns = [n for p in pairs for n in p.get("n", []) if isinstance(n, int)]
    return Floor(tuple(p["delta"] for p in pairs), min(ns) if ns else 0, find_modes(meds),
                 rec.get("legacy"), tuple(sorted({p.get("date", "") for p in pairs})))


def read(path=FLOOR_FILE):
    """The file's data, or a new empty one when it does not exist; ValueError when it is
    not a floor file."""
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        return {"schema": SCHEMA, "about": ABOUT, "floors": []}
    if not isinstance(data, dict) or not isinstance(data.get("floors"), list):
        raise ValueError(f"{path}: not an A/A floor file")
    return data


def entry_of(data, clock, cpus, base):
    """The entry for this clock, CPU count and kernel base, or None."""
    for e in data.get("floors", []):
        if e.get("clock") == clock and e.get("cpus") == cpus and e.get("base") == base:
            return e
    return None


def read_or_empty(path=FLOOR_FILE):
    """The file's data, or none (no file, or a file that cannot be read): what a comparison
    parses once and asks `floors_for` and `bases` of."""
    try:
        return read(path)
    except (OSError, ValueError):
        return {"floors": []}


def floors_for(data, clock, cpus, base):
    """({key: Floor}, entry) of the file's data measured for this clock, CPU count and kernel
    base, or ({}, None) when there is none."""
    e = entry_of(data, clock, cpus, base)
    if e is None:
        return {}, None
    return {k: from_record(v) for k, v in e.get("cells", {}).items()}, e


def bases(data):
    """[(clock, cpus, base)] the file's data has A/A pairs for (an entry of legacy maxima
    alone gives the rule nothing)."""
    return [(e.get("clock"), e.get("cpus"), e.get("base")) for e in data.get("floors", [])
            if any(c.get("pairs") for c in e.get("cells", {}).values())]


def load(clock, cpus, base, path=FLOOR_FILE):
    """floors_for() of the file at `path`."""
    return floors_for(read_or_empty(path), clock, cpus, base)


def dumps(data):
    """The file's text: indented, keys sorted, one line per pair record (a cell gains 8 or
    more pairs per A/A run, and a record spread over 15 lines would bury the structure)."""
    def out(obj, depth, name=None):
        pad = "  " * depth
        if isinstance(obj, dict) and obj:
            items = [f"{pad}  {json.dumps(k)}: {out(obj[k], depth + 1, k)}" for k in sorted(obj)]
            return "{\n" + ",\n".join(items) + f"\n{pad}}}"
        if isinstance(obj, list) and obj:
            one = (lambda x: json.dumps(x, sort_keys=True)) if name == "pairs" else \
                (lambda x: out(x, depth + 1))
            return "[\n" + ",\n".join(f"{pad}  {one(x)}" for x in obj) + f"\n{pad}]"
        return json.dumps(obj, sort_keys=True)
    return out(data, 0) + "\n"


@dataclass
class AAPair:
    """One A/A pair of boots of one cell and metric, as the file keeps it."""
    cell_key: str
    path: str
    medians: tuple          # base boot, new boot
    n: tuple                # their sample counts
    run: str                # the A/A run's directory name
    pair: int               # the pair's number in that run (boot i of A with boot i of B)
    date: str               # when the pair's first boot started, YYYY-MM-DD
    variant: str = ""

    def record(self):
        a, b = self.medians
        return {"delta": b / a - 1, "medians": list(self.medians), "n": list(self.n),
                "run": self.run, "pair": self.pair, "date": self.date,
                "variant": self.variant}


@dataclass
class Added:
    pairs: int = 0          # pair records written
    skipped: int = 0        # already in the file
    cells: set = field(default_factory=set)


def append(data, clock, cpus, base, pairs, about_entry):
    """Add the pairs to the entry for (clock, cpus, base), creating it; a pair already there
    (same run, pair number, cell and metric) is not added again.  about_entry: fields to
    set on the entry when it is new (release, qemu)."""
    e = entry_of(data, clock, cpus, base)
    if e is None:
        e = dict({"clock": clock, "cpus": cpus, "base": base, "cells": {}}, **about_entry)
        data["floors"].append(e)
    data["schema"], data["about"] = SCHEMA, ABOUT
    out = Added()
    for p in pairs:
        rec = e["cells"].setdefault(key(p.cell_key, p.path), {})
        have = rec.setdefault("pairs", [])
        if any(h.get("run") == p.run and h.get("pair") == p.pair for h in have):
            out.skipped += 1
            continue
        have.append(p.record())
        out.pairs += 1
        out.cells.add(key(p.cell_key, p.path))
    return out
