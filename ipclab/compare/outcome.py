# SPDX-License-Identifier: MIT
"""What a comparison of two results files holds, as data: its rows (tested, or judged in the
deterministic mode), the seed views' changes, and the outcome that gathers them; and the
outcome as one JSON record (`outcome_record`). The rest of ipclab/compare/ computes them once;
--json and --csv print the record, ipclab/report/ the text and Markdown."""

import json
import math
from dataclasses import dataclass, field

from ipclab import deterministic, stats
from ipclab.deterministic import cost

# A change smaller than this is no change worth a verdict (`compare --min-change`).
MIN_CHANGE = 0.02


@dataclass
class PairedComparison:
    """One cell and metric with a unit that the two sides ran in pairs: a boot (`ab` boots
    A B A B) or a round (`run --side`, where A and B alternate in one run).  One value per
    unit (the median of its samples), units paired, a paired t test on the log ratios.  The
    same fields as stats.Comparison, so that rows render alike."""
    unit: str               # "boot" or "round"
    base: stats.Summary     # of the per-unit medians
    new: stats.Summary
    test: stats.LogRatioTest
    components: object      # stats.VarianceComponents pooled over both sides (boots only)
    reps: int               # the fewest samples behind one unit's value
    plan: object = None     # power.RunPlan: the next run's design (boots only)

    @property
    def ratio(self):
        return self.test.effect

    @property
    def delta(self):
        return self.test.delta

    @property
    def ci(self):
        return self.test.ci

    @property
    def diff(self):
        return self.new.median - self.base.median

    @property
    def direction(self):
        """The sign of the test's effect (the mean log ratio), not of the difference of
        the medians: the per-unit medians of each side can sit the other way round when
        the units differ widely and one pair goes against the rest."""
        if math.isfinite(self.test.effect) and self.test.effect > 0:
            d = math.log(self.test.effect)
            return (d > 0) - (d < 0)
        return math.nan

    @property
    def p(self):
        return self.test.p

    @property
    def p_holm(self):
        return self.test.p_holm

    @p_holm.setter
    def p_holm(self, v):
        self.test.p_holm = v

    @property
    def significant(self):
        return self.test.significant


@dataclass
class Row:
    """One cell and metric. Only primary rows (one per cell) are in the significance family
    and get a verdict; secondary rows show their change and interval, nothing more."""
    key: str
    suite: str
    workload: str
    path: str
    label: str
    unit: str
    better: str
    cmp: object             # stats.Comparison, or PairedComparison
    primary: bool = True
    verdict: str = ""       # better | worse | changed | within ±T | changed, below ±T |
                            # inconclusive
    mde: float = math.nan   # the smallest change this design detects (power 0.8)


@dataclass
class JudgedRow:
    """One row of a deterministic comparison: judged against the noise, not tested."""
    key: str
    path: str
    label: str
    unit: str
    primary: bool
    j: deterministic.Judgement
    model: bool = False     # a cost-model row (cost.ROWS): counts of a simulation

    @property
    def verdict(self):
        return self.j.verdict


@dataclass
class Outcome:
    rows: list = field(default_factory=list)
    skipped: list = field(default_factory=list)     # (key, reason)
    warnings: list = field(default_factory=list)
    base: dict = None
    new: dict = None
    clock: str = deterministic.REAL
    judged: list = field(default_factory=list)      # JudgedRow, deterministic clock only
    floor_source: dict = None
    cost_model: dict = None     # meta.cost_model of the base, when its samples have costs
    views: list = field(default_factory=list)       # ViewChange, one per seed view shown
    min_change: float = MIN_CHANGE
    unit: str = "sample"    # what the tests treat as independent: sample, boot or round
    family: int = 0         # primary rows tested together (Holm)
    level: float = 0.95     # the primary rows' CI coverage: 1 - alpha / family
    paired_test: str = "auto"   # of paired units: auto | t | wilcoxon
    costs: object = None        # Costs of a boot and a repetition (boots only)


@dataclass
class EntryChange:
    """One entry of a seed view: base and new medians (scaled for display) and the change."""
    base: float
    new: float
    delta: float
    is_change: bool             # significant (timed) or beyond the noise (deterministic)
    seed_change: float = None   # the seed's published after/before - 1, when it has one


@dataclass
class ViewChange:
    suite: str
    view: object                # suites.View, as shown for this clock
    rows: list                  # [(label, [EntryChange or None per column])]
    geomean: object = None      # stats.LogRatioTest of the ratios, for grid views
    seed_geomean: float = None
    geomean_over: str = "point"     # its t test's values: the sweep's points, or its units

    @property
    def has_seed(self):
        return any(e is not None and e.seed_change is not None for _, es in self.rows for e in es)


def view_record(vc):
    """One seed view's changes as data: each entry as the table shows it (base -> new, the
    change, whether it is one, the seed's own change), and a sweep's geometric mean."""
    entries = []
    for (label, changes), (_, cells) in zip(vc.rows, vc.view.rows):
        for col, e, (key, path) in zip(vc.view.columns, changes, cells):
            if e is not None:
                entries.append({"row": label, "column": col, "key": key, "path": path,
                                "base": e.base, "new": e.new, "delta": e.delta,
                                "change": e.is_change, "seed_change": e.seed_change})
    rec = {"suite": vc.suite, "view": vc.view.id, "title": vc.view.title,
           "unit": vc.view.unit, "entries": entries, "geomean": None,
           "seed_geomean": vc.seed_geomean}
    g = vc.geomean
    if g is not None:
        rec["geomean"] = {"delta": g.delta, "ci": [g.ci[0] - 1, g.ci[1] - 1],
                          "over": vc.geomean_over, "can_claim": g.can_claim,
                          "reason": g.reason}
    return rec


def outcome_record(outcome):
    """The comparison as data, all the text shows: one entry per row, the seed views'
    changes with a sweep's geometric mean, the A/A floor's source, and the notes on what
    each side's times mean."""
    rec = {"base": outcome.base.get("id"), "new": outcome.new.get("id"), "clock": outcome.clock,
           "rows": [], "skipped": [{"key": k, "why": w} for k, w in outcome.skipped],
           "warnings": list(outcome.warnings),
           "notes": {side: deterministic.caveat_of(res) for side, res in
                     (("base", outcome.base), ("new", outcome.new))},
           "views": [view_record(vc) for vc in outcome.views],
           "floor_source": outcome.floor_source}
    for r in outcome.judged:
        j = r.j
        rec["rows"].append({"key": r.key, "path": r.path, "unit": r.unit, "primary": r.primary,
                            "base": j.base.median, "new": j.new.median, "n": [j.base.n, j.new.n],
                            "delta": j.delta, "spread_base": j.spread_base,
                            "spread_new": j.spread_new,
                            "floor": j.floor if math.isfinite(j.floor) else None,
                            "floor_pairs": j.floor_pairs, "threshold": j.threshold,
                            "verdict": j.verdict, "note": j.note})
        if r.model:
            rec["rows"][-1].update(model=True, label=r.label,
                                   diff=j.new.median - j.base.median)
    if any(r.model for r in outcome.judged):
        rec["cost_model"] = dict(outcome.cost_model or {},
                                 caveat=cost.caveat(outcome.cost_model))
    rec["unit"], rec["min_change"] = outcome.unit, outcome.min_change
    rec["paired_test"] = outcome.paired_test
    rec["ci_level_primary"] = outcome.level
    for r in outcome.rows:
        c = r.cmp
        rec["rows"].append({"key": r.key, "path": r.path, "unit": r.unit, "primary": r.primary,
                            "base": c.base.median, "new": c.new.median,
                            "n": [c.base.n, c.new.n], "delta": c.delta, "diff": c.diff,
                            "ci": list(c.ci), "p_holm": c.p_holm, "mde": r.mde,
                            "verdict": r.verdict})
        if isinstance(c, PairedComparison):
            rec["rows"][-1].update(pairs=c.test.n, sd_log_ratio=c.test.sd_log,
                                   test=c.test.method)
            if c.plan is not None:
                rec["rows"][-1].update(next_reps=c.plan.reps, next_boots=c.plan.units)
    if outcome.costs is not None:
        rec["costs"] = {"boot_s": outcome.costs.boot_s, "rep_s": outcome.costs.rep_s,
                        "measured": outcome.costs.measured}
    return json.loads(json.dumps(rec).replace("NaN", "null"))
