# SPDX-License-Identifier: MIT
"""Statistics for ipclab, as docs/statistics.md describes them.

Per cell: median, IQR and CV of the measured (non-warmup) samples.  Two independent
samples are compared by the Hodges-Lehmann shift of their logs with the interval that
inverts the two-sided Mann-Whitney U test, whose p-values are Holm-corrected across the
family of one report (ipclab/ranks.py has the rank tests).  Every random draw is seeded
so that a report is reproducible byte for byte.

Samples of one boot (or one run) are not independent of each other: they share
whatever that boot got (layout, frequency, interrupts).  With several boots per
side the boot is the unit: per_unit_values() gives one value per boot,
paired_log_ratio() tests ABAB pairs of boots, and variance_components() splits the
noise into its within-boot and between-boot parts; what a design can see and what the
next one should be is ipclab/power.py's.

Noise is given as a CV and handled in logs: a CV c is the log-normal sigma
sqrt(log(1 + c^2)), and a log-scale variance v is reported as the CV sqrt(e^v - 1).
"""

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ipclab import ranks

# scipy is imported inside the functions that use it: it takes a second to import, and
# every command of the CLI imports this module, shell completion included.

# The thresholds behind the warnings and verdicts of docs/statistics.md.
MIN_REPS = 9
MAX_CV = 0.05
ALPHA = 0.05
# Fewer boots per side than this and the report claims no significance: a t test on 2 pairs
# has 1 degree of freedom, and a rank test on 2 against 2 values cannot go below p = 1/3.
MIN_PAIRS = 3
POWER = 0.8


def noise_warning(n_noisy, of_what):
    """The one warning for timed results too noisy to show small changes."""
    return (f"CV over {MAX_CV * 100:.0f}% in {n_noisy} of {of_what}: small changes are lost"
            " in the noise; use an idle machine, more --reps, or --full")


def median(xs):
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return math.nan
    m = n // 2
    return s[m] if n % 2 else (s[m - 1] + s[m]) / 2


def quantile(xs, q):
    """Linear interpolation between order statistics (numpy's default, R type 7)."""
    s = sorted(xs)
    if not s:
        return math.nan
    pos = (len(s) - 1) * q
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def iqr(xs):
    return quantile(xs, 0.75) - quantile(xs, 0.25)


def mean(xs):
    return sum(xs) / len(xs) if xs else math.nan


def stdev(xs):
    n = len(xs)
    if n < 2:
        return math.nan
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))


def cv(xs):
    """Coefficient of variation: sample standard deviation over mean."""
    m = mean(xs)
    if len(xs) < 2 or m == 0:
        return math.nan
    return stdev(xs) / abs(m)


def geomean(xs):
    """Geometric mean of the positive finite values (others are skipped: for a checked
    mean with an interval use sweep_log_ratio_ci)."""
    xs = [x for x in xs if x is not None and x > 0 and math.isfinite(x)]
    if not xs:
        return math.nan
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def log_var(cv_):
    """The log-scale variance of a log-normal quantity with this CV."""
    return math.log1p(cv_ * cv_)


def cv_of_log_var(v):
    return math.sqrt(math.expm1(v))


@dataclass
class Summary:
    n: int
    median: float
    iqr: float
    cv: float
    mean: float
    min: float
    max: float


def summarize(xs):
    xs = list(xs)
    if not xs:
        return Summary(0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan)
    return Summary(len(xs), median(xs), iqr(xs), cv(xs), mean(xs), min(xs), max(xs))


def _rng(seed, stream):
    # One stream per use (ranks.py draws its permutations from streams 1 and 2).
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, stream])


# ---- Holm ----------------------------------------------------------------

def holm(pvalues):
    """Holm step-down adjusted p-values, in the input order (NaN passes through)."""
    idx = [i for i, p in enumerate(pvalues) if p is not None and math.isfinite(p)]
    m = len(idx)
    adj = [math.nan] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: pvalues[i])):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adj[i] = running
    return adj


# ---- bootstrap -----------------------------------------------------------

BOOTSTRAP_ROUNDS = 2000


def _medians_ratio_and_diff(b, a, axis=-1):
    mb = np.median(b, axis=axis)
    ma = np.median(a, axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.stack([ma / mb, ma - mb])


def _bootstrap(data, statistic, rounds, level, seed):
    import scipy.stats as ss
    # Percentile, not BCa: the jackknife behind BCa is degenerate for the median of a
    # handful of samples (many leave-one-out medians coincide) and warns or gives NaN.
    # NaN is this function's answer where resampled medians leave the statistic undefined;
    # scipy warns about it under the name of BCa whatever the method.
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ss.DegenerateDataWarning)
        r = ss.bootstrap(data, statistic, n_resamples=rounds, confidence_level=level,
                         method="percentile", vectorized=True, rng=_rng(seed, 0))
    return np.asarray(r.confidence_interval.low), np.asarray(r.confidence_interval.high)


def bootstrap_ratio_ci(old, new, rounds=BOOTSTRAP_ROUNDS, level=0.95, seed=0):
    """Percentile bootstrap CI of median(new) / median(old), each side resampled on its
    own (scipy.stats.bootstrap).  (NaN, NaN) with fewer than 2 samples on a side, and NaN
    where resampled old medians of 0 leave the ratio undefined."""
    return bootstrap_ci(old, new, rounds, level, seed)[0]


def bootstrap_ci(old, new, rounds=BOOTSTRAP_ROUNDS, level=0.95, seed=0):
    """Percentile bootstrap CIs of median(new) / median(old) and of median(new) -
    median(old), from the same resamples: ((lo, hi), (lo, hi))."""
    b = np.asarray(list(old), dtype=float)
    a = np.asarray(list(new), dtype=float)
    if b.size < 2 or a.size < 2:
        return (math.nan, math.nan), (math.nan, math.nan)
    lo, hi = _bootstrap((b, a), _medians_ratio_and_diff, rounds, level, seed)
    return (float(lo[0]), float(hi[0])), (float(lo[1]), float(hi[1]))


@dataclass
class Comparison:
    """new against old, one metric of one cell, from two independent samples.

    The effect is the Hodges-Lehmann shift, the estimate that goes with the Mann-Whitney
    test (ipclab/ranks.py): of the log values, as a ratio (`ratio`, with `ci`), when every
    value is positive; and always of the raw values (`diff`, with `diff_ci`).  Each
    interval is the set of shifts the test does not reject at its level, so an interval
    at 1 - alpha/m that leaves out no change goes with a p-value below alpha/m (without
    ties; with ties the p-value is a permutation test's and the two may differ at the
    edge).  With a value of 0 or below on a side there is no ratio: `ratio`, `delta` and
    `ci` are NaN and `diff` carries the change, so a lower-is-better 0 -> 42 is diff = 42,
    direction = +1: worse.  Judge the direction by `direction`, not by `ratio > 1`.
    """
    old: Summary
    new: Summary
    ratio: float        # exp(Hodges-Lehmann shift of the logs); NaN with a value <= 0
    ci: tuple           # its interval, inverting the U test
    u: ranks.MWU
    p_holm: float = math.nan
    diff: float = math.nan                      # Hodges-Lehmann shift new - old
    diff_ci: tuple = (math.nan, math.nan)       # its interval

    @property
    def p(self):
        return self.u.p

    @property
    def delta(self):
        return self.ratio - 1

    @property
    def direction(self):
        """+1 when the estimate says new is above old, -1 below, 0 no shift, NaN without
        data: the estimate's sign, which is the side of 0 its interval lies on."""
        est = math.log(self.ratio) if math.isfinite(self.ratio) and self.ratio > 0 else \
            self.diff
        if not math.isfinite(est):
            return math.nan
        return (est > 0) - (est < 0)

    @property
    def significant(self):
        return bool(math.isfinite(self.p_holm) and self.p_holm < ALPHA)


def compare_samples(old, new, seed=0, level=0.95):
    """Compare two independent samples (see Comparison for the contract).  `seed` seeds
    the permutation test with ties: pass stable_seed(cell key + metric) so that each row
    draws its own numbers and draws them again identically.  `level` is the intervals'
    coverage (wider for a member of a family, to agree with its adjusted p)."""
    old, new = [float(x) for x in old], [float(x) for x in new]
    sb, sn = summarize(old), summarize(new)
    raw = ranks.hl_shift(old, new, level)
    ratio, ci = math.nan, (math.nan, math.nan)
    if old and new and min(old) > 0 and min(new) > 0:
        lg = ranks.hl_shift(np.log(old), np.log(new), level)
        ratio, ci = math.exp(lg.estimate), tuple(math.exp(x) for x in lg.ci)
    return Comparison(sb, sn, ratio, ci, ranks.mann_whitney_u(new, old, seed=seed),
                      diff=raw.estimate, diff_ci=raw.ci)


def apply_holm(tests):
    """Set p_holm on each test of one family (anything with .p and .p_holm)."""
    adj = holm([t.p for t in tests])
    for t, p in zip(tests, adj):
        t.p_holm = p
    return tests


def stable_seed(text):
    """A seed derived from a string, stable across processes (unlike hash())."""
    h = 2166136261
    for ch in text.encode():
        h = ((h ^ ch) * 16777619) & 0xFFFFFFFF
    return h


# ---- the boot (or run) as the unit ---------------------------------------

def per_unit_values(samples_by_unit):
    """One value per unit: the log of the median of its samples.

    samples_by_unit: a sequence of sample lists (returns a list) or a mapping unit ->
    samples (returns a dict in the same order).  A unit with no samples or a median that is
    not positive gets NaN, which paired_log_ratio reports rather than skips.
    """
    def one(xs):
        m = median(list(xs))
        return math.log(m) if m > 0 and math.isfinite(m) else math.nan
    if isinstance(samples_by_unit, Mapping):
        return {k: one(v) for k, v in samples_by_unit.items()}
    return [one(v) for v in samples_by_unit]


@dataclass
class LogRatioTest:
    """A test on log ratios (paired_log_ratio, sweep_log_ratio_ci): a t test, or for
    paired units the Wilcoxon signed-rank test (`method`).

    effect = exp(estimate) with its interval `ci` at `level`, as ratios: the estimate is
    the mean log ratio for the t test, the Hodges-Lehmann estimate for the signed-rank
    test.  When `can_claim` is False, `reason` says why and p (and, below 2 values, ci) is
    NaN: the result is then an estimate, never a finding.  `scale_log` is the noise the
    test sees, for its MDE: the sd of the log ratios for t, for the signed-rank test a
    robust one (1.4826 x their median absolute deviation), which a hiccup does not inflate.
    """
    n: int
    effect: float
    ci: tuple
    p: float
    sd_log: float
    level: float
    can_claim: bool
    reason: str = ""
    bad: list = field(default_factory=list)     # indices of values that were not usable
    p_holm: float = math.nan
    method: str = "t"                           # t | wilcoxon
    scale_log: float = math.nan

    @property
    def delta(self):
        return self.effect - 1

    @property
    def significant(self):
        # bool(): a p-value of numpy's makes numpy's bool, which JSON cannot write.
        return bool(self.can_claim and math.isfinite(self.p_holm) and self.p_holm < ALPHA)


# The paired tests compare offers (`--paired-test`); "auto" is the default.
PAIRED_TESTS = ("auto", "t", "wilcoxon")
# "auto" wants this many pairs beyond the fewest on which the signed-rank test can reject:
# on exactly those it rejects only when all ratios have one sign, and in
# scripts/paired-tests-sim the t test had more power there (15.0% against 12.9% on 6 pairs
# alone, with hiccups); one pair more and the signed-rank test led (22.6% against 18.6%).
WILCOXON_EXTRA_PAIRS = 1


def wilcoxon_min_pairs(family=1, alpha=ALPHA):
    """The fewest pairs on which the signed-rank test can be significant in a family of
    `family` rows: its smallest p-value, 2 / 2^n, must be below alpha / family, where Holm
    starts (6 pairs alone, 8 in a family of 4, 10 in a family of 24)."""
    n = 1
    while ranks.signed_rank_min_p(n) >= alpha / max(1, family):
        n += 1
    return n


def choose_paired_test(pairs, family=1, test="auto"):
    """The test for `pairs` paired units in a family of `family` rows: "t" or "wilcoxon".

    "auto" takes the signed-rank test from WILCOXON_EXTRA_PAIRS pairs beyond the fewest
    that can reach the family's level, the t test below: scripts/paired-tests-sim shows
    that under hiccups (a few rounds disturbed on one side) the signed-rank test holds its
    level with more power and a closer estimate, and without them loses little, except at
    the fewest pairs themselves, where it can reject only when every ratio has one sign
    (docs/statistics.md has the figures).  The choice depends on the design only, never on
    the data."""
    if test not in PAIRED_TESTS:
        raise ValueError(f"unknown paired test {test!r}: one of {', '.join(PAIRED_TESTS)}")
    if test != "auto":
        return test
    return "wilcoxon" if pairs >= wilcoxon_min_pairs(family) + WILCOXON_EXTRA_PAIRS else "t"


def _t_on_logs(d, level, min_n, what):
    """One-sample t test of mean(d) = 0 with its interval, for paired_log_ratio and
    sweep_log_ratio_ci: d are logs of ratios, already checked finite."""
    import scipy.special as sps
    n = len(d)
    nan2 = (math.nan, math.nan)
    if n == 0:
        return LogRatioTest(0, math.nan, nan2, math.nan, math.nan, level, False,
                            f"no {what}")
    d = np.asarray(d, dtype=float)
    m = float(d.mean())
    if n < 2:
        return LogRatioTest(1, math.exp(m), nan2, math.nan, math.nan, level, False,
                            f"1 {what}: no spread to test against")
    sd = float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    q = float(sps.stdtrit(n - 1, 0.5 + level / 2))
    ci = (math.exp(m - q * se), math.exp(m + q * se))
    if se > 0:
        p = float(2 * sps.stdtr(n - 1, -abs(m) / se))
    else:
        # Identical log ratios: no noise at all, so any nonzero mean is certain.
        p = 1.0 if m == 0 else 0.0
    if n < min_n:
        return LogRatioTest(n, math.exp(m), nan2, math.nan, sd, level, False,
                            f"only {n} {what}: fewer than {min_n} cannot support a claim"
                            f" of significance (a t test on {n} has {n - 1} degree(s) of"
                            " freedom)")
    return LogRatioTest(n, math.exp(m), ci, p, sd, level, True)


def paired_log_ratio(old_units, new_units, level=0.95, test="t", seed=0):
    """Paired test of units run in pairs (boots A B A B, or the rounds of one run):
    old_units[i] pairs with new_units[i].

    Both are per-unit log values (per_unit_values).  Tests the per-pair log ratios new -
    old against 0: by a t test on their mean (test "t": effect = exp(mean), ci its t
    interval), or by the Wilcoxon signed-rank test (test "wilcoxon": effect = exp(the
    Hodges-Lehmann estimate), ci the interval that inverts the test; `seed` seeds its
    permutations when ratios tie).  p is two-sided, sd_log the sd of the log ratios.
    Pairing cancels a drift slower than one pair.  With fewer than MIN_PAIRS pairs (for
    the signed-rank test, too few to reach 1 - level at all), or a pair with a non-finite
    log value (a unit without samples or with a median <= 0, listed in `bad`), can_claim
    is False, p is NaN and `reason` says why.  Unequal lengths are a caller's error
    (ValueError): a unit whose partner is missing must be dropped by whoever knows the
    pairing.
    """
    if len(old_units) != len(new_units):
        raise ValueError(f"{len(old_units)} old boots against {len(new_units)} new ones:"
                         " boots pair by position")
    b = np.asarray(old_units, dtype=float)
    a = np.asarray(new_units, dtype=float)
    bad = [i for i in range(b.size) if not (math.isfinite(b[i]) and math.isfinite(a[i]))]
    if bad:
        return LogRatioTest(b.size, math.nan, (math.nan, math.nan), math.nan, math.nan,
                            level, False, f"pair(s) {', '.join(map(str, bad))} lack a"
                            " positive median on a side", bad, method=test)
    if choose_paired_test(b.size, test=test) == "wilcoxon":
        return _signed_rank_on_logs(a - b, level, seed)
    r = _t_on_logs(a - b, level, MIN_PAIRS, "pairs")
    r.scale_log = r.sd_log
    return r


def _signed_rank_on_logs(d, level, seed):
    n = len(d)
    sr = ranks.signed_rank(d, level, seed)
    sd = float(np.std(d, ddof=1)) if n > 1 else math.nan
    mad = float(1.4826 * np.median(np.abs(d - np.median(d)))) if n else math.nan
    effect = math.exp(sr.estimate) if n else math.nan
    if not math.isfinite(sr.ci[0]):
        least = ranks.signed_rank_min_p(n)
        return LogRatioTest(n, effect, (math.nan, math.nan), math.nan, sd, level, False,
                            f"only {n} pairs: a signed-rank test on {n} cannot go below p ="
                            f" {least:.3g}, so no {level * 100:.4g}% interval or finding",
                            method="wilcoxon", scale_log=mad)
    return LogRatioTest(n, effect, tuple(math.exp(x) for x in sr.ci), sr.p, sd, level,
                        n >= MIN_PAIRS, "" if n >= MIN_PAIRS else
                        f"only {n} pairs: fewer than {MIN_PAIRS} cannot support a claim",
                        method="wilcoxon", scale_log=mad)


def sweep_log_ratio_ci(ratios, level=0.95):
    """Geometric mean of a sweep's ratios with a t interval on their logs.

    A value that is NaN, infinite or not positive is an error: the result has
    can_claim False, effect NaN, its indices in `bad` and a reason, rather than a mean of
    what is left.  With one ratio there is no interval.  The interval is the spread of the
    sweep's points about their mean, not boot-to-boot noise, which the points share.
    """
    r = [float(x) if x is not None else math.nan for x in ratios]
    bad = [i for i, x in enumerate(r) if not (math.isfinite(x) and x > 0)]
    if bad:
        return LogRatioTest(len(r), math.nan, (math.nan, math.nan), math.nan, math.nan,
                            level, False, f"ratio(s) {', '.join(map(str, bad))} not positive"
                            " and finite: no mean of the rest is given", bad)
    return _t_on_logs(np.log(r), level, 2, "ratios")


@dataclass
class VarianceComponents:
    """The noise of one side split by level, from a one-way random-effects ANOVA on logs."""
    units: int
    reps: float             # n0, the effective reps per unit (the mean when balanced)
    cv_within: float        # of one sample about its unit's level
    cv_between: float       # of the units' levels about each other
    ms_within: float
    ms_between: float
    reason: str = ""


def variance_components(*sides):
    """Within-unit and between-unit CV of several boots (or runs) of one side, or pooled
    over the sides of an A/B.

    Each side: raw positive samples per unit (a sequence or a mapping).  On logs,
    MS_within and MS_between of the one-way ANOVA; var_within = MS_within, var_between =
    max(0, MS_between - MS_within) / n0, with n0 = (N - sum n_i^2 / N) / (k - 1) (the reps
    per unit when balanced).  With several sides, each side's units vary about that side's
    own mean (the difference between the sides is the effect, not noise) and the sums of
    squares, their degrees of freedom and n0's numerator are pooled: both sides' boots
    then say what a boot adds to the noise, not one side's.  Reported as CVs.  A value <= 0
    or an empty unit gives NaN and a reason; so does a lone unit per side (no between) or
    one sample per unit (no within).
    """
    ss_w = ss_b = n0_num = 0.0
    df_w = df_b = units = total = 0

    def fail(why):
        return VarianceComponents(units, math.nan, math.nan, math.nan, math.nan, math.nan,
                                  why)
    for side in sides:
        groups = list(side.values() if isinstance(side, Mapping) else side)
        groups = [np.asarray(list(g), dtype=float) for g in groups]
        k = len(groups)
        n = np.array([g.size for g in groups])
        N = int(n.sum())
        units += k
        if k == 0 or (n == 0).any():
            return fail("a unit without samples")
        if any((g <= 0).any() or not np.isfinite(g).all() for g in groups):
            return fail("values must be positive and finite (the split is on logs)")
        logs = [np.log(g) for g in groups]
        means = np.array([x.mean() for x in logs])
        grand = float(np.concatenate(logs).mean())
        ss_w += float(sum(((x - m) ** 2).sum() for x, m in zip(logs, means)))
        df_w += N - k
        total += N
        if k >= 2:
            ss_b += float((n * (means - grand) ** 2).sum())
            df_b += k - 1
            n0_num += N - float((n * n).sum()) / N
    ms_within = ss_w / df_w if df_w else math.nan
    if not df_b:
        cvw = cv_of_log_var(ms_within) if math.isfinite(ms_within) else math.nan
        return VarianceComponents(units, float(total), cvw, math.nan, ms_within, math.nan,
                                  "one unit: nothing to say between units")
    ms_between = ss_b / df_b
    n0 = n0_num / df_b
    if not math.isfinite(ms_within):
        return VarianceComponents(units, n0, math.nan, math.nan, math.nan, ms_between,
                                  "one sample per unit: within and between are confounded")
    var_between = max(0.0, ms_between - ms_within) / n0
    return VarianceComponents(units, n0, cv_of_log_var(ms_within),
                              cv_of_log_var(var_between), ms_within, ms_between)
