# SPDX-License-Identifier: MIT
"""What a design can see, and what the next one should be.

The power of the tests of ipclab/stats.py (noncentral t, exact for normal logs), the
minimum detectable effect (MDE) a row prints, and the next run's design for boots as the
unit (Kalibera & Jones, "Rigorous benchmarking in reasonable time", ISMM 2013): more boots
when boots differ, more repetitions when samples do, in the least time.
"""

import functools
import math
from dataclasses import dataclass

import numpy as np

from ipclab import ranks
from ipclab.stats import ALPHA, MIN_PAIRS, POWER, log_var

@functools.lru_cache(maxsize=256)
def median_variance_factor(n):
    """n * Var(median of n iid standard normals): how much noisier a unit's median is than
    its mean (1 for n <= 2, 1.346 for 3, towards pi/2).  From the order-statistic
    densities, integrated on a fine grid; past 1001 it is within 0.1% of pi/2, and the
    value at 1000 or 1001 (same parity) is returned."""
    import scipy.special as sps
    from scipy.integrate import cumulative_trapezoid, trapezoid
    if n <= 2:
        return 1.0
    n = min(n, 1000 + n % 2)
    # The median's sd is about 1.25 / sqrt(n), the gap between the middle two order
    # statistics about 2.5 / n: the grid spans 12 sds and resolves the gap.
    span = min(12.0, 15 / math.sqrt(n))
    x = np.linspace(-span, span, 48_001)
    phi = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    with np.errstate(divide="ignore"):
        lcdf, lsf = sps.log_ndtr(x), sps.log_ndtr(-x)
    m = n // 2
    if n % 2:
        c = sps.gammaln(n + 1) - 2 * sps.gammaln(m + 1)
        f = np.exp(c + m * lcdf + m * lsf) * phi
        return float(n * trapezoid(x * x * f, x))
    # Even n: the median is the mean of X(m) and X(m+1).  E[X(m)^2] = E[X(m+1)^2] by
    # symmetry; the cross moment integrates x over X(m) < y inside the density of y.  The
    # constant is split between the two factors, each of which alone would overflow.
    c_m = sps.gammaln(n + 1) - sps.gammaln(m) - sps.gammaln(n - m + 1)
    second = trapezoid(x * x * np.exp(c_m + (m - 1) * lcdf + (n - m) * lsf) * phi, x)
    half = (sps.gammaln(n + 1) - 2 * sps.gammaln(m)) / 2
    inner = cumulative_trapezoid(x * np.exp(half + (m - 1) * lcdf) * phi, x, initial=0)
    cross = trapezoid(x * phi * np.exp(half + (m - 1) * lsf) * inner, x)
    return float(n * (2 * second + 2 * cross) / 4)


def unit_log_var(cv_between, cv_within, reps):
    """Variance of one unit's value (log of the median of `reps` samples) in this model:
    log(sample) = unit level + noise, both normal; unit levels vary with cv_between and
    samples about their unit's level with cv_within."""
    return log_var(cv_between) + median_variance_factor(reps) * log_var(cv_within) / reps


def _design(cv_between, cv_within, reps, units, paired):
    """Standard error of the mean log ratio, and the t test's degrees of freedom."""
    # Each side's boots are distinct boots, so a pair's log ratio carries the between-unit
    # variance of both; pairing cancels only drift, which the model leaves out.  The
    # standard error is then the same paired or not, and pairing loses degrees of freedom.
    se = math.sqrt(2 * unit_log_var(cv_between, cv_within, reps) / units)
    return se, (units - 1 if paired else 2 * (units - 1))


def detection_power(change, cv_between, cv_within, reps, units, alpha=ALPHA, paired=True):
    """Probability that the boot-level t test (two-sided, at alpha) finds a relative change
    `change` (0.05 = 5%) with `units` boots per side of `reps` samples each.

    Exact for normal logs: the noncentral t distribution, with the noise of a unit's median
    from median_variance_factor.  0 with fewer than MIN_PAIRS units, where nothing is
    claimed.
    """
    if units < MIN_PAIRS:
        return 0.0
    se, df = _design(cv_between, cv_within, reps, units, paired)
    return _t_power(df, abs(math.log1p(change)) / se, alpha)


def _t_power(df, nc, alpha):
    """P(|T| > t crit) for T noncentral t with df and noncentrality nc >= 0."""
    import scipy.special as sps
    t = float(sps.stdtrit(df, 1 - alpha / 2))
    # nctdtr gives NaN far in its tails: the lower rejection region is taken as the upper
    # one of -nc, and past nc = 30 (with df >= 2 the critical t is below 4.31) power is 1.
    nc = min(nc, 30.0)
    return float((1 - sps.nctdtr(df, nc, t)) + (1 - sps.nctdtr(df, -nc, t)))


def minimum_detectable_effect(cv_between, cv_within, reps, units, alpha=ALPHA, power=POWER,
                              paired=True):
    """The smallest relative increase that the design finds with probability `power`.

    The inverse of detection_power (noncentral t, exact for normal logs, not the normal
    approximation, which at 5 pairs understates the MDE by a quarter).  Returned as
    exp(d) - 1 for the smallest log change d: a decrease to exp(-d) is found as often.
    inf with fewer than MIN_PAIRS units.
    """
    if units < MIN_PAIRS:
        return math.inf
    return _mde(*_design(cv_between, cv_within, reps, units, paired), alpha, power)


# The signed-rank test's efficiency against the t test on normal data (its asymptotic
# relative efficiency, 3 / pi): it needs 1 / 0.955 times the pairs for the same power.
WILCOXON_ARE = 3 / math.pi


def paired_mde(sd_log, pairs, alpha=ALPHA, power=POWER, test="t"):
    """The smallest relative change a paired test on `pairs` log ratios finds with
    probability `power` at `alpha`, given the noise of those log ratios
    (LogRatioTest.scale_log).

    For pairs run side by side (A and B alternating in one run): their drift cancels in
    the ratio, so the noise that counts is the ratios' own, not each side's.  For the t
    test the noncentral t; for the signed-rank test the same with the noise scaled by its
    efficiency (WILCOXON_ARE), and inf where it cannot reach alpha at all.  inf with fewer
    than MIN_PAIRS pairs, NaN when the noise is not known.
    """
    if pairs < MIN_PAIRS:
        return math.inf
    if test == "wilcoxon":
        if ranks.signed_rank_min_p(pairs) >= alpha:
            return math.inf
        sd_log = sd_log / math.sqrt(WILCOXON_ARE)
    if not (math.isfinite(sd_log) and sd_log >= 0):
        return math.nan
    return _mde(sd_log / math.sqrt(pairs), pairs - 1, alpha, power)


def _mde(se, df, alpha, power):
    from scipy.optimize import brentq
    nc = brentq(lambda nc: _t_power(df, nc, alpha) - power, 0.0, 30.0, xtol=1e-10)
    return math.expm1(nc * se)


@dataclass
class RunPlan:
    reps: int               # samples per boot
    units: int              # boots per side (pairs); 0 when the target is out of reach
    mde: float              # what this design detects at the power asked
    seconds_per_side: float  # units * (boot_s + reps * rep_s)
    reason: str = ""


def plan_next_run(cv_between, cv_within, target_change, boot_s, rep_s, alpha=ALPHA,
                  power=POWER, paired=True, max_units=500, max_reps=1000):
    """How many reps per boot and how many boots per side find `target_change` at `power`.

    Kalibera & Jones' rule for two levels: the time a fixed precision takes is least at
    reps = sqrt((boot_s / rep_s) * (var_within / var_between)), the within variance
    being that of a unit's median.  So a cheap boot or a large boot-to-boot variance means
    few reps and more boots.  Reps are at least 2, so that the next run can still measure
    the within-boot CV, and at most max_reps.  Then the fewest boots, at least MIN_PAIRS,
    whose power reaches `power` (detection_power).  When MIN_PAIRS boots are more than
    enough, the reps come down to the fewest that still reach the target.  units = 0 with
    a reason when max_units boots are not enough.
    """
    import scipy.special as sps
    vb, vw = log_var(cv_between), log_var(cv_within)

    def reaches(reps, units):
        return detection_power(target_change, cv_between, cv_within, reps, units, alpha,
                               paired) >= power
    reps = max_reps
    if vb > 0:
        for _ in range(4):      # the median's factor depends on reps; it settles at once
            best = math.sqrt(boot_s / rep_s * median_variance_factor(reps) * vw / vb)
            reps = int(min(max_reps, max(2, math.ceil(best))))
    # The normal approximation's boot count is a lower bound for the t test's.
    z = sps.ndtri(1 - alpha / 2) + sps.ndtri(power)
    need = 2 * unit_log_var(cv_between, cv_within, reps) * (z / math.log1p(target_change)) ** 2
    units = max(MIN_PAIRS, math.ceil(need))
    while units <= max_units and not reaches(reps, units):
        units += 1
    if units > max_units:
        return RunPlan(reps, 0, math.nan, 0.0,
                       f"more than {max_units} boots per side at this noise")
    if units == MIN_PAIRS:
        lo, hi = 1, reps        # reaches(hi) holds: find the fewest reps that do
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if reaches(mid, units) else (mid, hi)
        reps = max(2, hi)
    mde = minimum_detectable_effect(cv_between, cv_within, reps, units, alpha, power, paired)
    return RunPlan(reps, units, mde, units * (boot_s + reps * rep_s))
