# SPDX-License-Identifier: MIT
"""Rank tests, each with the estimate and the interval that invert it.

- Two independent samples: the Mann-Whitney U test (`mann_whitney_u`), and the
  Hodges-Lehmann shift (`hl_shift`): the median of the m x n differences y_j - x_i, with
  the interval [D(c+1), D(mn-c)] of the sorted differences, c the largest count with
  P(U <= c) <= alpha/2 under the null.  A shift d lies inside that interval exactly when
  the U test of x + d against y does not reject, so the interval leaves 0 out exactly
  when the test (without ties) rejects at the interval's level.
- One sample of paired differences: the Wilcoxon signed-rank test (`signed_rank`), with
  the Hodges-Lehmann estimate (the median of the n (n + 1) / 2 Walsh averages) and its
  interval [W(c+1), W(M-c)], c from the null distribution of the signed-rank sum T+.

The exact null distributions are computed here (no ties): U's by the recurrence of its
generating function (Loeffler's sigma form), T+'s by counting subsets of {1..n} per sum.
With ties the p-value comes from a permutation test instead, and the interval from the
untied distribution: the two then agree only approximately (docs/statistics.md).
"""

import functools
import math
from dataclasses import dataclass

import numpy as np

# scipy's exact null distribution of U is quick up to here (0.1 s at 150 against 150).
EXACT_MAX_N = 200
# A Monte Carlo permutation p-value cannot go below 2 / (resamples + 1).  Holm multiplies
# the smallest p by the family size, so a p-value in the tail is drawn again with ten
# times the resamples; the bulk of the rows, far from the tail, stay cheap.
PERMUTATIONS = 9_999
TAIL_PERMUTATIONS = 99_999
TAIL = 0.01
# The signed-rank sum's exact distribution is a vector of n (n + 1) / 2 + 1 counts; past
# this many pairs the normal approximation (continuity-corrected) gives the critical count.
SIGNED_RANK_EXACT_MAX_N = 400


def _rng(seed, stream):
    # One stream per use, so that two draws of one row do not share numbers.
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, stream])


# ---- Mann-Whitney U ------------------------------------------------------

@dataclass
class MWU:
    u: float        # U of the first sample
    p: float        # two-sided p-value
    method: str     # exact | exact-permutation | permutation | none


def mann_whitney_u(x, y, seed=0):
    """Two-sided Mann-Whitney U test of x against y; u is U of x.

    Without ties (and both samples at most EXACT_MAX_N) the exact null distribution of U
    (scipy.stats.mannwhitneyu, method "exact").  With ties, or larger samples, a
    permutation test of U (scipy.stats.permutation_test): exhaustive ("exact-permutation")
    when there are no more splits of the pooled sample than resamples, else Monte Carlo
    from a generator seeded by `seed` ("permutation"), so the same inputs and seed give
    the same p.  Never the normal approximation: with ties it is off by a factor of two
    or more, either way, in the tails where Holm decides.
    """
    import scipy.stats as ss
    x = np.asarray(list(x), dtype=float)
    y = np.asarray(list(y), dtype=float)
    n1, n2 = x.size, y.size
    if n1 == 0 or n2 == 0:
        return MWU(math.nan, math.nan, "none")
    pooled = np.concatenate([x, y])
    if np.unique(pooled).size == pooled.size and max(n1, n2) <= EXACT_MAX_N:
        r = ss.mannwhitneyu(x, y, method="exact")
        return MWU(float(r.statistic), float(r.pvalue), "exact")
    # The mid-ranks of the pooled sample are the same under every split, so U of a split
    # is the sum of its ranks less a constant: scipy's permutation_test on the ranks runs
    # three times as fast as mannwhitneyu(method=PermutationMethod), to the same p-value.
    ranks = ss.rankdata(pooled)
    offset = n1 * (n1 + 1) / 2

    def u_of(a, b, axis=-1):
        return a.sum(axis=axis) - offset
    splits = math.comb(n1 + n2, n1)
    if min(n1, n2) == 1:
        # scipy's permutation_test wants two values a side; one value a side has n1 + n2
        # splits, few enough to count them all.
        return MWU(float(u_of(ranks[:n1], None, axis=None)), _one_value_p(ranks, n1, offset),
                   "exact-permutation")
    for stream, resamples in ((1, PERMUTATIONS), (2, TAIL_PERMUTATIONS)):
        r = ss.permutation_test((ranks[:n1], ranks[n1:]), u_of, n_resamples=resamples,
                                vectorized=True, rng=_rng(seed, stream))
        if splits <= resamples or r.pvalue >= TAIL:
            break
    method = "exact-permutation" if splits <= resamples else "permutation"
    return MWU(float(r.statistic), min(1.0, float(r.pvalue)), method)


def _one_value_p(ranks, n1, offset):
    """The two-sided permutation p of U when one side holds one value: every split puts one
    of the pooled values on that side."""
    n = ranks.size
    if n1 == 1:
        us = ranks - offset
        obs = ranks[0] - offset
    else:
        us = (ranks.sum() - ranks) - offset
        obs = ranks[:n1].sum() - offset
    tol = 1e-9 * max(1.0, abs(obs))
    greater = np.count_nonzero(us >= obs - tol) / n
    less = np.count_nonzero(us <= obs + tol) / n
    return float(min(1.0, 2 * min(greater, less)))


@functools.lru_cache(maxsize=64)
def _u_lower_cdf(m, n, upto):
    """P(U <= u) for u = 0..upto under the null, m and n samples without ties.

    The generating function of U is the Gaussian binomial [m+n choose m]_q, whose
    logarithmic derivative gives u f(u) = sum_{i=1..u} sigma(i) f(u - i), with sigma(i) the
    sum of the divisors d of i with d <= m, less those with n < d <= m + n.  Counts (not
    probabilities) are kept: they are exact in floating point while below 2^53, which
    covers the lower tail the intervals need."""
    sigma = np.zeros(upto + 1)
    for d in range(1, m + 1):
        sigma[d::d] += d
    for d in range(n + 1, m + n + 1):
        sigma[d::d] -= d
    rev = np.ascontiguousarray(sigma[::-1])     # rev[upto - i] = sigma[i]
    f = np.zeros(upto + 1)
    f[0] = 1.0
    for u in range(1, upto + 1):
        f[u] = np.dot(f[:u], rev[upto - u:upto]) / u
    total = math.comb(m + n, m)
    return np.cumsum(f) / total


def u_critical(m, n, alpha):
    """The largest c with P(U <= c) <= alpha / 2 for samples of m and n without ties; -1
    when even U = 0 is more likely than that (no interval at this level exists).  Exact up
    to EXACT_MAX_N a side, as the test's p-value is (0.3 s at 200 against 200, the
    computation being (m n)^2 / 8 multiply-adds), the normal approximation
    (continuity-corrected) past it, which is a little conservative in the far tail: at
    120 against 120 and alpha 0.002 its c is 5544 for the exact 5550."""
    if m <= 0 or n <= 0:
        return -1
    m, n = min(m, n), max(m, n)
    if n > EXACT_MAX_N:
        from scipy.special import ndtri
        mu, sd = m * n / 2, math.sqrt(m * n * (m + n + 1) / 12)
        return int(math.floor(mu - 0.5 + ndtri(alpha / 2) * sd))
    # Grow the computed tail until it passes alpha / 2 (it always does by the middle).
    upto = min(m * n // 2, 64)
    while True:
        cdf = _u_lower_cdf(m, n, upto)
        above = np.nonzero(cdf > alpha / 2 * (1 + 1e-12))[0]
        if above.size or upto >= m * n // 2:
            return int(above[0]) - 1 if above.size else upto
        upto = min(m * n // 2, upto * 4)


@dataclass
class Shift:
    """The Hodges-Lehmann shift of y against x, with its interval at `level`."""
    estimate: float
    ci: tuple
    level: float


def hl_shift(x, y, level=0.95):
    """Hodges-Lehmann estimate of the shift y - x (the median of all y_j - x_i), with the
    interval that inverts the Mann-Whitney test at 1 - level (module docstring).  The
    interval is (NaN, NaN) when the samples are too small for any at this level, which is
    also when the test cannot reject at it."""
    x = np.asarray(list(x), dtype=float)
    y = np.asarray(list(y), dtype=float)
    if x.size == 0 or y.size == 0:
        return Shift(math.nan, (math.nan, math.nan), level)
    d = np.sort((y[None, :] - x[:, None]).ravel())
    c = u_critical(x.size, y.size, 1 - level)
    ci = (float(d[c]), float(d[d.size - 1 - c])) if c >= 0 else (math.nan, math.nan)
    return Shift(float(np.median(d)), ci, level)


# ---- Wilcoxon signed-rank ------------------------------------------------

@functools.lru_cache(maxsize=64)
def _signed_rank_cdf(n):
    """P(T+ <= t) for t = 0..n(n+1)/2 under the null, n nonzero differences without ties:
    T+ is the sum of a random subset of the ranks 1..n, each rank in with probability 1/2,
    so its counts are those of the subsets of {1..n} by their sum."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    top = 0
    for k in range(1, n + 1):
        counts[k:top + k + 1] += counts[:top + 1].copy()
        top += k
    return np.cumsum(counts) / 2.0 ** n


def signed_rank_critical(n, alpha):
    """The largest c with P(T+ <= c) <= alpha / 2 for n pairs; -1 when even T+ = 0 (every
    difference of one sign) is more likely than that, so that no interval at 1 - alpha
    exists and the test cannot reject at alpha.  Exact up to SIGNED_RANK_EXACT_MAX_N, the
    normal approximation (continuity-corrected) past it."""
    if n <= 0:
        return -1
    if n > SIGNED_RANK_EXACT_MAX_N:
        from scipy.special import ndtri
        mu, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        return int(math.floor(mu - 0.5 + ndtri(alpha / 2) * sd))
    cdf = _signed_rank_cdf(n)
    above = np.nonzero(cdf > alpha / 2 * (1 + 1e-12))[0]
    return int(above[0]) - 1


def signed_rank_min_p(n):
    """The smallest two-sided p-value the signed-rank test can give on n pairs: every
    difference of one sign, 2 / 2^n."""
    return min(1.0, 2.0 / 2.0 ** n) if n > 0 else 1.0


@dataclass
class SignedRank:
    """Wilcoxon signed-rank test of differences d against 0, with the Hodges-Lehmann
    estimate (the median of the Walsh averages (d_i + d_j) / 2, i <= j) and the interval
    that inverts the test at `level`."""
    n: int
    t_plus: float       # the sum of the ranks of |d| over the positive d
    p: float            # two-sided
    estimate: float
    ci: tuple
    level: float
    method: str         # exact | exact-permutation | permutation | none


def signed_rank(d, level=0.95, seed=0):
    """The two-sided Wilcoxon signed-rank test of the paired differences d (SignedRank).

    Without ties among |d| and without zeros, the exact null distribution of T+.  With ties
    or zeros, a permutation test that flips the signs of the signed mid-ranks (a zero
    keeps rank and sign 0): exhaustive when 2^n is no more than the resamples, else drawn
    from a generator seeded by `seed`.  The interval counts c Walsh averages off each end,
    c from the untied distribution: T+ is the number of positive Walsh averages, so without
    ties the interval leaves out 0 exactly when p < 1 - level."""
    import scipy.stats as ss
    d = np.asarray(list(d), dtype=float)
    n = d.size
    if n == 0:
        return SignedRank(0, math.nan, math.nan, math.nan, (math.nan, math.nan), level, "none")
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2)
    c = signed_rank_critical(n, 1 - level)
    ci = (float(walsh[c]), float(walsh[walsh.size - 1 - c])) if c >= 0 else \
        (math.nan, math.nan)
    est = float(np.median(walsh))
    ranks = ss.rankdata(np.abs(d))
    signed = np.sign(d) * ranks
    t_plus = float(ranks[d > 0].sum())
    untied = np.unique(np.abs(d)).size == n and not (d == 0).any()
    if untied and n <= SIGNED_RANK_EXACT_MAX_N:
        cdf = _signed_rank_cdf(n)
        t = int(round(t_plus))
        top = n * (n + 1) // 2
        # The distribution is symmetric: P(T+ >= t) = P(T+ <= top - t).
        lower, upper = cdf[t], cdf[top - t]
        return SignedRank(n, t_plus, min(1.0, 2 * min(lower, upper)), est, ci, level, "exact")
    flips = 2 ** n

    def stat(x, axis=-1):
        return (x * (x > 0)).sum(axis=axis)
    for stream, resamples in ((1, PERMUTATIONS), (2, TAIL_PERMUTATIONS)):
        r = ss.permutation_test((signed,), stat, permutation_type="samples",
                                n_resamples=resamples, vectorized=True, rng=_rng(seed, stream))
        if flips <= resamples or r.pvalue >= TAIL:
            break
    method = "exact-permutation" if flips <= resamples else "permutation"
    return SignedRank(n, t_plus, min(1.0, float(r.pvalue)), est, ci, level, method)
