# SPDX-License-Identifier: MIT
"""Statistics for ipclab, as DESIGN.md promises them.

Per cell: median, IQR and CV of the measured (non-warmup) samples.  The effect
of B against A is the ratio of medians with a bootstrap 95% CI.  Significance
is a two-sided Mann-Whitney U test, Holm-corrected across every comparison in
one report.  A sweep is summarised by the geometric mean of its ratios.

Everything here is pure Python (numpy only for the bootstrap), so that the
front end needs no scipy; the tests pin the results to known values.
"""

import functools
import math
from dataclasses import dataclass

import numpy as np

# The thresholds behind the warnings DESIGN.md asks for.
MIN_REPS = 9
MAX_CV = 0.05
ALPHA = 0.05


def noise_warning(n_noisy, of_what):
    """The one warning for timed results too noisy to show small changes."""
    return ("CV over %d%% in %d of %s: small changes are lost in the noise; use an idle"
            " machine, more --reps, or --full" % (MAX_CV * 100, n_noisy, of_what))


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
    xs = [x for x in xs if x is not None and x > 0 and math.isfinite(x)]
    if not xs:
        return math.nan
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


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


# ---- Mann-Whitney U ------------------------------------------------------

def _ranks(values):
    """Average ranks (1-based) and the tie-group sizes."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        r = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = r
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def _norm_sf(z):
    return 0.5 * math.erfc(z / math.sqrt(2))


@functools.lru_cache(maxsize=64)
def _exact_u_cdf_table(n1, n2):
    """Number of arrangements giving each U, for U = 0 .. n1*n2.

    f(n1, n2, u) = f(n1 - 1, n2, u - n2) + f(n1, n2 - 1, u): the largest
    observation comes from sample 1 (it beats all n2) or from sample 2.
    """
    # dp[j] holds the counts for (i, j) as i grows; a list of lists per j.
    prev = [[1] for _ in range(n2 + 1)]  # i = 0: only U = 0
    for i in range(1, n1 + 1):
        cur = [[1]]  # j = 0: only U = 0
        for j in range(1, n2 + 1):
            size = i * j + 1
            row = [0] * size
            a = prev[j]  # (i-1, j), shifted by j
            for u, c in enumerate(a):
                row[u + j] += c
            b = cur[j - 1]  # (i, j-1)
            for u, c in enumerate(b):
                row[u] += c
            cur.append(row)
        prev = cur
    return tuple(prev[n2])


EXACT_MAX_N = 50


@dataclass
class MWU:
    u: float        # U of the first sample
    p: float        # two-sided p-value
    method: str     # "exact" or "normal"


def mann_whitney_u(x, y):
    """Two-sided Mann-Whitney U test of x against y.

    Exact distribution when there are no ties and both samples are small
    (at most EXACT_MAX_N); otherwise the normal approximation with the tie
    correction of the variance and a continuity correction of 0.5, as
    scipy.stats.mannwhitneyu(method="asymptotic") does.
    """
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        return MWU(math.nan, math.nan, "none")
    ranks, ties = _ranks(list(x) + list(y))
    r1 = sum(ranks[:n1])
    u1 = r1 - n1 * (n1 + 1) / 2
    mu = n1 * n2 / 2
    if not ties and n1 <= EXACT_MAX_N and n2 <= EXACT_MAX_N:
        counts = _exact_u_cdf_table(n1, n2)
        total = math.comb(n1 + n2, n1)
        # Two-sided: double the smaller tail, capped at 1.
        k = int(round(u1))
        lo = sum(counts[:k + 1]) / total
        hi = sum(counts[k:]) / total
        return MWU(u1, min(1.0, 2 * min(lo, hi)), "exact")
    n = n1 + n2
    tie_term = sum(t ** 3 - t for t in ties)
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:
        # Every observation equal: no evidence of a difference.
        return MWU(u1, 1.0, "normal")
    d = abs(u1 - mu) - 0.5
    z = max(d, 0) / math.sqrt(var)
    return MWU(u1, min(1.0, 2 * _norm_sf(z)), "normal")


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


def bootstrap_ratio_ci(base, new, rounds=BOOTSTRAP_ROUNDS, level=0.95, seed=0):
    """Percentile bootstrap CI of median(new) / median(base).

    Each side is resampled independently with replacement.  The generator
    is seeded so that a report is reproducible byte for byte.
    """
    b = np.asarray(base, dtype=float)
    a = np.asarray(new, dtype=float)
    if b.size == 0 or a.size == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    mb = np.median(b[rng.integers(0, b.size, (rounds, b.size))], axis=1)
    ma = np.median(a[rng.integers(0, a.size, (rounds, a.size))], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = ma / mb
    r = r[np.isfinite(r)]
    if r.size == 0:
        return (math.nan, math.nan)
    lo, hi = np.quantile(r, [(1 - level) / 2, 1 - (1 - level) / 2])
    return (float(lo), float(hi))


def paired_ratio_ci(base, new, rounds=BOOTSTRAP_ROUNDS, level=0.95, seed=0):
    """Median of the per-pair ratios new[i] / base[i], with a bootstrap CI.

    For samples taken in pairs side by side (one pair per round of an
    interleaved run): a drift of the machine that lasts longer than a pair
    moves both halves and cancels in the ratio, which the unpaired
    bootstrap above cannot see.  Pairs are resampled whole.  Returns
    (ratio, (lo, hi), n); n counts the pairs with a finite ratio.
    """
    b = np.asarray(base[:len(new)], dtype=float)
    a = np.asarray(new[:len(base)], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = a / b
    r = r[np.isfinite(r)]
    if r.size == 0:
        return math.nan, (math.nan, math.nan), 0
    rng = np.random.default_rng(seed)
    meds = np.median(r[rng.integers(0, r.size, (rounds, r.size))], axis=1)
    lo, hi = np.quantile(meds, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(np.median(r)), (float(lo), float(hi)), int(r.size)


@dataclass
class Comparison:
    base: Summary
    new: Summary
    ratio: float        # median(new) / median(base)
    ci: tuple           # bootstrap CI of the ratio
    u: MWU
    p_holm: float = math.nan

    @property
    def delta(self):
        return self.ratio - 1

    @property
    def significant(self):
        return math.isfinite(self.p_holm) and self.p_holm < ALPHA


def compare_samples(base, new, seed=0):
    sb, sn = summarize(base), summarize(new)
    ratio = sn.median / sb.median if sb.n and sn.n and sb.median else math.nan
    return Comparison(sb, sn, ratio, bootstrap_ratio_ci(base, new, seed=seed),
              mann_whitney_u(new, base))


def apply_holm(comparisons):
    adj = holm([c.u.p for c in comparisons])
    for c, p in zip(comparisons, adj):
        c.p_holm = p
    return comparisons


def stable_seed(text):
    """A seed derived from a string, stable across processes (unlike hash())."""
    h = 2166136261
    for ch in text.encode():
        h = ((h ^ ch) * 16777619) & 0xFFFFFFFF
    return h
