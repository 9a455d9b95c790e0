# SPDX-License-Identifier: MIT
"""The statistics agree with known values."""
import itertools
import math
import random

import pytest

from ipclab import ranks, stats


def test_median_quantile_iqr_cv():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 3, 2]) == 2.5
    # numpy.percentile([1..10], 25/75) = 3.25 / 7.75
    xs = list(range(1, 11))
    assert stats.quantile(xs, 0.25) == pytest.approx(3.25)
    assert stats.iqr(xs) == pytest.approx(4.5)
    # sd(ddof=1) of 2,4,4,4,5,5,7,9 is 2.138089935; mean 5
    assert stats.cv([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(2.138089935299395 / 5)
    assert math.isnan(stats.cv([1.0]))


def test_geomean():
    assert stats.geomean([1.1, 1 / 1.1]) == pytest.approx(1.0)
    assert stats.geomean([2, 8]) == pytest.approx(4.0)


def test_mwu_scipy_doc_example_exact():
    # scipy.stats.mannwhitneyu docs: males vs females, U1 = 17, exact p = 0.1111...
    r = ranks.mann_whitney_u([19, 22, 16, 29, 24], [20, 11, 17, 12])
    assert r.u == 17
    assert r.method == "exact"
    assert r.p == pytest.approx(0.1111111111111111, abs=1e-12)


def test_mwu_full_separation():
    r = ranks.mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert r.u == 0
    assert r.p == pytest.approx(2 / math.comb(10, 5))
    r = ranks.mann_whitney_u(range(10), range(10, 20))
    assert r.p == pytest.approx(2 / math.comb(20, 10))


def brute_force_p(x, y):
    """Two-sided exact p by enumerating every split of the pooled sample."""
    pooled = list(x) + list(y)
    n1 = len(x)

    def u_of(idx):
        a = [pooled[i] for i in idx]
        b = [pooled[i] for i in range(len(pooled)) if i not in idx]
        return sum((ai > bi) + 0.5 * (ai == bi) for ai in a for bi in b)

    u = u_of(range(n1))
    us = [u_of(set(c)) for c in itertools.combinations(range(len(pooled)), n1)]
    lo = sum(1 for v in us if v <= u) / len(us)
    hi = sum(1 for v in us if v >= u) / len(us)
    return u, min(1.0, 2 * min(lo, hi))


@pytest.mark.parametrize("seed", range(8))
def test_mwu_exact_matches_enumeration(seed):
    rnd = random.Random(seed)
    x = [rnd.random() for _ in range(rnd.randint(2, 6))]
    y = [rnd.random() + 0.2 for _ in range(rnd.randint(2, 6))]
    u, p = brute_force_p(x, y)
    r = ranks.mann_whitney_u(x, y)
    assert r.u == u
    assert r.p == pytest.approx(p, abs=1e-12)


def test_mwu_ties_are_a_permutation_test_not_the_normal_approximation():
    # x = 1,2,2,3,4,5; y = 2,6,7,8,9,10: U1 = 4.  The normal approximation with its tie
    # correction said p = 0.02948; all 924 splits of the pooled sample give 0.025974.
    r = ranks.mann_whitney_u([1, 2, 2, 3, 4, 5], [2, 6, 7, 8, 9, 10])
    assert r.method == "exact-permutation"
    assert r.u == 4
    assert r.p == pytest.approx(24 / 924, rel=1e-12)


def test_mwu_all_equal_is_not_significant():
    r = ranks.mann_whitney_u([5.0] * 10, [5.0] * 10)
    assert r.p == 1.0


def test_holm_known_values():
    # p = 0.01, 0.04, 0.03, 0.005 -> sorted 0.005*4, 0.01*3, 0.03*2, 0.04*1
    # = 0.02, 0.03, 0.06, 0.06 (monotone), back in input order:
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_bootstrap_ci_contains_ratio_and_is_deterministic():
    rnd = random.Random(1)
    base = [100 * (1 + rnd.gauss(0, 0.02)) for _ in range(10)]
    new = [110 * (1 + rnd.gauss(0, 0.02)) for _ in range(10)]
    lo, hi = stats.bootstrap_ratio_ci(base, new, seed=7)
    ratio = stats.median(new) / stats.median(base)
    assert lo <= ratio <= hi
    assert 1.0 < lo and hi < 1.2
    assert stats.bootstrap_ratio_ci(base, new, seed=7) == (lo, hi)
    assert stats.bootstrap_ratio_ci(base, new, seed=8) != (lo, hi)
    assert all(math.isnan(x) for x in stats.bootstrap_ratio_ci([1.0], new))


def test_bootstrap_ci_covers_the_ratio_at_about_its_level():
    # The percentile interval of a ratio of medians, 10 log-normal samples a side at CV 5%.
    rnd = random.Random(4)
    trials, cover = 300, 0
    for seed in range(trials):
        base = [rnd.lognormvariate(0, 0.05) for _ in range(10)]
        new = [1.05 * rnd.lognormvariate(0, 0.05) for _ in range(10)]
        lo, hi = stats.bootstrap_ratio_ci(base, new, seed=seed)
        cover += lo <= 1.05 <= hi
    # Percentile intervals of medians of 10 run a little short; not by more than this.
    assert 0.88 <= cover / trials <= 0.99


def test_compare_samples_direction():
    c = stats.compare_samples([10, 11, 12, 10.5, 11.5], [20, 21, 22, 20.5, 21.5])
    assert c.ratio == pytest.approx(21 / 11)
    assert c.delta == pytest.approx(10 / 11)
    assert c.diff == pytest.approx(10) and c.direction == 1
    assert c.u.p < 0.05 and c.p == c.u.p
    assert c.ci[0] <= c.ratio <= c.ci[1] and c.diff_ci[0] <= c.diff <= c.diff_ci[1]
    stats.apply_holm([c])
    assert c.p_holm == c.p and c.significant


def test_compare_samples_is_reproducible_per_seed():
    base = [10, 10, 11, 11, 12, 12, 10, 11]
    new = [11, 12, 12, 13, 12, 11, 13, 12]
    a = stats.compare_samples(base, new, seed=stats.stable_seed("k/throughput"))
    b = stats.compare_samples(base, new, seed=stats.stable_seed("k/throughput"))
    assert a == b and a.u.method in ("exact-permutation", "permutation")


def test_noise_warning_text():
    assert stats.noise_warning(3, "9 cells").startswith("CV over 5% in 3 of 9 cells:")


def test_one_value_a_side_has_a_p_value_and_no_traceback():
    """`run --reps 1` with two sides compares one value with one: scipy's permutation test
    refuses samples of one, so the lab counts the splits itself."""
    from ipclab import ranks
    import scipy.stats as ss
    assert ranks.mann_whitney_u([1.0], [1.0]).p == 1.0
    assert ranks.mann_whitney_u([1.0], [2.0, 2.0, 3.0]).p == 0.5
    assert ranks.mann_whitney_u([5.0, 5.0, 1.0], [2.0]).p == 1.0
    # Without ties, what scipy's exact test gives.
    got = ranks.mann_whitney_u([1.0], [2.0, 3.0, 4.0, 5.0])
    assert got.p == pytest.approx(ss.mannwhitneyu([1.0], [2.0, 3.0, 4.0, 5.0],
                                                  method="exact").pvalue)
    got = ranks.mann_whitney_u([1.0, 1.0, 2.0, 3.0], [9.0])
    assert got.p == pytest.approx(0.4) and got.method == "exact-permutation"
