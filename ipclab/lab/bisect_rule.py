# SPDX-License-Identifier: MIT
"""Kernel lab, bisect's rule: when a commit has moved against GOOD like BAD did.

A commit's measurement (`Measurement`: the metric's values per boot) is compared with
GOOD's by the rules `compare` judges a primary row with (compare.compare_values), as one
comparison record (compare/record.py); `decide` reads the row's verdict and change from it
against the threshold and BAD's direction.  Bisect has no rule of its own.  The timed mode's
checks before and after GOOD and BAD (`check_timed_boots`, `check_power`) are here too.
"""

from __future__ import annotations

import dataclasses
import math

from ipclab import EXIT_USAGE, Error, compare, power, stats
from ipclab.compare import record as comparison
from ipclab.deterministic import floor
from ipclab.mode import DETERMINISTIC, Mode

from .metric import metric_spec

OLD, NEW, SKIP = "old", "new", "skip"


@dataclasses.dataclass
class Measurement:
    """One commit measured: the metric's samples per boot, or why it was skipped."""
    commit: str
    boots: list[list[float]] = dataclasses.field(default_factory=list)
    skip: str | None = None
    results: list[str] = dataclasses.field(default_factory=list)
    seconds: dict = dataclasses.field(default_factory=dict)
    unit: str = ""
    floor: object = None            # the metric's A/A floor (floor.Floor), when measured
    # The cell's cost-model medians per operation (deterministic): {row name: value}.
    costs: dict = dataclasses.field(default_factory=dict)
    cost_unit: str = ""
    cost_model: dict | None = None  # the model the costs were counted with (meta.cost_model)
    # The cell and metric path followed, and which way is better ("lower", "higher"): what
    # the comparison record names its row and its verdict by. Older logs have none.
    key: str = ""
    path: str = ""
    better: str = ""

    def __post_init__(self):
        # Read back from a bisect log, the floor is the dict asdict made of it.
        self.floor = floor.revive(self.floor)

    @property
    def samples(self) -> list[float]:
        return [v for b in self.boots for v in b]

    @property
    def value(self) -> float:
        """The commit's figure: the median of its samples (one boot), or of its boots'
        medians."""
        if len(self.boots) == 1:
            return stats.median(self.boots[0])
        return stats.median([stats.median(b) for b in self.boots if b])


def row_of(rec: dict) -> dict | None:
    """The one row of a step's comparison record, or None when nothing was compared."""
    rows = [r for r in rec["rows"] if r["primary"]]
    return rows[0] if rows else None


def decide(row: dict | None, threshold: float, direction: int) -> tuple[str, float, str]:
    """(old, new or skip; the change against GOOD; a note) from the record's row: new when
    its verdict is a change beyond `threshold` in BAD's `direction`, old otherwise (a change
    the other way says so), skip when the record has no change to give."""
    d = row["delta"] if row else None
    if d is None:
        return SKIP, math.nan, "no value"
    moved = comparison.verdict_class(row["verdict"]) in (
        comparison.BETTER, comparison.WORSE, comparison.CHANGED) and abs(d) > threshold
    if moved and (d > 0) == (direction > 0):
        return NEW, d, ""
    return OLD, d, "moved the other way" if moved else ""


@dataclasses.dataclass
class StepRule:
    """When a commit has moved, against GOOD, like BAD did: decided from the comparison
    record of GOOD's measurement against the commit's (compare.compare_values: the rule
    `compare` judges a primary row with), not by a rule of bisect's own."""
    good: Measurement
    mode: Mode
    threshold: float            # relative, >= 0; the timed rule's min-change too
    direction: int              # +1: BAD is higher than GOOD; -1: lower
    metric: str = ""            # --metric CELL[:PATH], for a log that named no path

    def record(self, m: Measurement) -> dict:
        """The comparison record of GOOD against `m`: one row, its verdict and its rule."""
        g = self.good
        cell, path = metric_spec(self.metric) if self.metric else ("metric", None)
        out = compare.compare_values(
            m.key or g.key or cell, m.path or g.path or path or "metric", m.unit or g.unit,
            m.better or g.better or "lower", g.boots, m.boots, mode=self.mode, floor=g.floor,
            min_change=self.threshold, ids=(g.commit, m.commit))
        return compare.outcome_record(out)

    def verdict(self, m: Measurement) -> tuple[str, float, str, dict]:
        """(old, new or skip; the change against GOOD; a note; the record it came from)."""
        rec = self.record(m)
        return (*decide(row_of(rec), self.threshold, self.direction), rec)


def noise_text(row: dict | None) -> str:
    """What the record's rule said of GOOD -> BAD, for the refusal to bisect."""
    if row is None:
        return "nothing compared"
    if row["rule"]["kind"] == DETERMINISTIC.rule:
        t = row.get("threshold")
        noise = f"{t * 100:.3g}%" if t is not None else "none known"
    else:
        p = row.get("p_holm")
        noise = f"paired test p = {p:.2g}" if p is not None else "no test"
    return f"the noise ({noise}; the comparison says {row['verdict'] or 'nothing'!r})"


def default_threshold(bad_delta: float) -> float:
    """Half of GOOD -> BAD: a commit counts as moved once it is nearer BAD than GOOD."""
    return abs(bad_delta) / 2


def check_timed_boots(units: int) -> None:
    """Refuse, before any boot, a timed bisect too small for any claim."""
    if units < stats.MIN_PAIRS:
        raise Error(f"a timed bisect needs at least {stats.MIN_PAIRS} boots per step (a paired"
                    f" t test on {units} boots cannot claim a change); give --boots "
                    f"{stats.MIN_PAIRS} or more, or bisect in the deterministic mode")


def check_power(good: Measurement, bad: Measurement, threshold: float) -> None:
    """Refuse a timed bisect whose steps would miss a change of `threshold` (Error, exit 2,
    saying why): the noise is GOOD's and BAD's, split into boot-to-boot and within-boot
    parts, and a step is as many boots of as many samples as GOOD."""
    units = len(good.boots)
    check_timed_boots(units)
    reps = max(1, min(len(b) for b in good.boots + bad.boots))
    cvs = [stats.variance_components(m.boots) for m in (good, bad)]
    cvb = max(c.cv_between if math.isfinite(c.cv_between) else 0.0 for c in cvs)
    cvw = max((c.cv_within for c in cvs if math.isfinite(c.cv_within)), default=math.nan)
    if not math.isfinite(cvw):
        raise Error("a timed bisect needs 2 or more samples per boot to estimate its noise")
    chance = power.detection_power(threshold, cvb, cvw, reps, units)
    if chance < stats.POWER:
        mde = power.minimum_detectable_effect(cvb, cvw, reps, units)
        raise Error(f"a timed bisect at a threshold of {threshold * 100:.3g}% would find such a"
                    f" change in {chance * 100:.0f}% of steps (wanted {stats.POWER * 100:.0f}%):"
                    f" CV {cvb * 100:.2g}% between boots and {cvw * 100:.2g}% within, {units}"
                    f" boots of {reps} samples per step find {mde * 100:.3g}%; use more"
                    " --boots, a larger --threshold, or --deterministic", EXIT_USAGE)


