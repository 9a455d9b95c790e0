# SPDX-License-Identifier: MIT
"""What a comparison of two results files holds, as data: its rows (tested, or judged in the
deterministic mode), the seed views' changes, and the outcome that gathers them. The rest of
ipclab/compare/ computes them once; record.py turns the outcome into the one versioned
record that --json, --csv, `ab` and ipclab/report/ read the verdicts from."""

import math
from dataclasses import dataclass, field

from ipclab import deterministic, stats
from ipclab.mode import TIMED, Mode

# A change smaller than this is no change worth a verdict (`compare --min-change`).
MIN_CHANGE = 0.02


@dataclass
class PairedComparison:
    """One cell and metric with a unit that the two sides ran in pairs: a boot (`ab` boots
    A B A B) or a round (`run --side`, where A and B alternate in one run).  One value per
    unit (the median of its samples), units paired, a paired t test on the log ratios.  The
    same fields as stats.Comparison, so that rows render alike."""
    unit: str               # "boot" or "round"
    old: stats.Summary     # of the per-unit medians
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
        return self.new.median - self.old.median

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
    old: dict = None
    new: dict = None
    mode: Mode = TIMED      # the mode both sides were measured in: its rule judges
    judged: list = field(default_factory=list)      # JudgedRow, deterministic clock only
    floor_source: dict = None
    cost_model: dict = None     # meta.cost_model of the old side, when its samples have costs
    views: list = field(default_factory=list)       # ViewChange, one per seed view shown
    min_change: float = MIN_CHANGE
    unit: str = "sample"    # what the tests treat as independent: sample, boot or round
    family: int = 0         # primary rows tested together (Holm)
    level: float = 0.95     # the primary rows' CI coverage: 1 - alpha / family
    paired_test: str = "auto"   # of paired units: auto | t | wilcoxon
    step_times: object = None   # StepTimes: seconds of a boot and a repetition (boots only)

    @property
    def clock(self) -> str:
        return self.mode.clock


@dataclass
class EntryChange:
    """One entry of a seed view: old and new medians (scaled for display) and the change."""
    old: float
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
