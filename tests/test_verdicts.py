# SPDX-License-Identifier: MIT
"""What a row's verdict says, checked on the cases review found (issue 22): the direction
comes from the test's effect, "within ±T" needs the whole interval inside ±T, an unpaired
interval inverts the test it is shown with, and too few samples give no 95% interval."""
import functools
import itertools
import json
import math

import numpy as np
import pytest

from ipclab import compare, ranks, results, stats
from ipclab.cli import main


def paired_files(tmp_path, base, ratios, better="higher"):
    """The two files of one run with two sides (`run --side`), one cell, one sample per
    round: round r has base[r] on side a and base[r] * ratios[r] on side b."""
    paths = []
    for side, values in (("a", base), ("b", [b * r for b, r in zip(base, ratios)])):
        samples = [{"metrics": {"loops_per_s": {"value": float(v), "unit": "loops/s",
                                                "better": better}}, "round": r}
                   for r, v in enumerate(values)]
        res = {"schema": results.SCHEMA, "id": side, "suite": "adhoc", "mode": "quick",
               "meta": {}, "env": {}, "plan": {}, "pair": {"id": "p", "side": side},
               "cells": [{"key": "c/1", "suite": "adhoc", "workload": "w", "args": [],
                          "status": "ok", "error": "", "samples": samples}]}
        path = tmp_path / f"{side}.json"
        path.write_text(json.dumps(res))
        paths.append(str(path))
    return paths


def compare_json(capsys, paths):
    assert main(["compare", *paths, "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["unit"] == "round"
    (row,) = [r for r in rec["rows"] if r["primary"]]
    return row


def test_direction_comes_from_the_effect_not_the_medians(tmp_path, capsys):
    # Issue 22's case: four rounds 35% up, one 2% down.  The median of the base rounds
    # (30) is above that of the new ones (29.4), but every test of the pairs says up.
    row = compare_json(capsys, paired_files(
        tmp_path, [10, 20, 30, 40, 50], np.exp([0.3, 0.3, -0.02, 0.3, 0.3])))
    assert row["new"] < row["old"]
    assert row["delta"] == pytest.approx(0.266, abs=0.001)
    assert row["ci"][0] == pytest.approx(1.06, abs=0.01)
    assert row["ci"][1] == pytest.approx(1.51, abs=0.01)
    assert row["p_holm"] == pytest.approx(0.021, abs=0.001)
    assert row["verdict"] == "better"


def test_direction_of_a_lower_is_better_metric(tmp_path, capsys):
    row = compare_json(capsys, paired_files(
        tmp_path, [10, 20, 30, 40, 50], np.exp([0.3, 0.3, -0.02, 0.3, 0.3]), better="lower"))
    assert row["verdict"] == "worse"


def test_a_change_whose_interval_reaches_past_the_threshold_is_not_within_it(tmp_path,
                                                                            capsys):
    # +1.6% on average, significant, its interval [+1.1%, +2.1%]: it may be 2% or more.
    z = np.array([-1.5, -1.0, -0.6, -0.3, 0.0, 0.1, 0.4, 0.7, 1.0, 1.2])
    z = (z - z.mean()) / z.std(ddof=1)
    ratios = np.exp(0.016 + 0.007 * z)
    base = [1000.0 * (1 + 0.1 * i) for i in range(10)]
    row = compare_json(capsys, paired_files(tmp_path, base, ratios))
    assert row["p_holm"] < 0.05
    assert row["delta"] == pytest.approx(0.016, abs=0.001)
    assert row["ci"][0] - 1 == pytest.approx(0.011, abs=0.002)
    assert row["ci"][1] - 1 == pytest.approx(0.021, abs=0.002)
    assert row["verdict"] == "changed, below ±2%"
    # With the threshold past the interval's top, it is within it.
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json",
                 "--min-change", "3"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert row["verdict"] == "within ±3%"


def test_an_interval_inside_the_threshold_is_within_it_significant_or_not(tmp_path, capsys):
    rng = np.random.default_rng(1)
    ratios = np.exp(0.003 + 0.001 * rng.standard_normal(12))
    row = compare_json(capsys, paired_files(tmp_path, [1000.0] * 12, ratios))
    assert row["p_holm"] < 0.05 and row["verdict"] == "within ±2%"


# ---- the unpaired interval inverts the U test -------------------------------------------

@pytest.mark.parametrize("level", [0.95, 0.99, 1 - 0.05 / 24])
def test_unpaired_interval_leaves_out_1_exactly_when_the_test_rejects(level):
    rng = np.random.default_rng(round(level * 1000))
    disagree, rejected = 0, 0
    for m, n in itertools.product((3, 5, 8, 10, 13), (4, 10, 12)):
        for _ in range(12):
            shift = rng.choice([0.0, 0.02, 0.05])
            x = 1000 * np.exp(rng.normal(0, 0.03, m))
            y = 1000 * np.exp(shift + rng.normal(0, 0.03, n))
            c = stats.compare_samples(x, y, seed=1, level=level)
            excludes = math.isfinite(c.ci[0]) and (c.ci[0] > 1 or c.ci[1] < 1)
            rejects = c.p < 1 - level
            disagree += excludes != rejects
            rejected += rejects
            if math.isfinite(c.ci[0]):
                assert c.ci[0] <= c.ratio <= c.ci[1]
    assert rejected > 10
    assert disagree == 0


def test_hodges_lehmann_by_hand():
    # differences y - x: 1-0, 1-2, 5-0, 5-2 = 1, -1, 5, 3: median 2
    s = ranks.hl_shift([0, 2], [1, 5])
    assert s.estimate == 2
    # 2 against 2 cannot reject at 5% (the smallest two-sided p is 1/3): no interval
    assert all(math.isnan(v) for v in s.ci)
    # 5 against 5 without overlap: U = 0, p = 2/252; the 95% interval leaves c = 2 of the
    # 25 differences out on each side.
    x, y = [0, 1, 2, 3, 4], [10, 11, 12, 13, 14]
    assert ranks.u_critical(5, 5, 0.05) == 2
    d = sorted(b - a for a in x for b in y)
    s = ranks.hl_shift(x, y)
    assert s.ci == (d[2], d[22]) and s.estimate == 10


def u_counts(m, n):
    """Counts of each U under the null, by the textbook recursion on the largest value:
    it is either one of the m (adding n to U) or one of the n."""
    @functools.lru_cache(maxsize=None)
    def f(m, n):
        if m == 0 or n == 0:
            return (1,)
        a, b = f(m - 1, n), f(m, n - 1)
        out = [0] * (m * n + 1)
        for u, k in enumerate(a):
            out[u + n] += k
        for u, k in enumerate(b):
            out[u] += k
        return tuple(out)
    return f(m, n)


def test_u_critical_is_the_exact_quantile():
    for m, n in ((4, 6), (7, 7), (10, 12), (20, 25)):
        counts = u_counts(m, n)
        cdf = np.cumsum(counts) / math.comb(m + n, m)
        for alpha in (0.05, 0.01, 0.002):
            c = ranks.u_critical(m, n, alpha)
            assert c == -1 or cdf[c] <= alpha / 2
            assert cdf[c + 1] > alpha / 2


def test_unpaired_interval_covers_at_its_level():
    rng = np.random.default_rng(9)
    sims, cover = 600, 0
    for _ in range(sims):
        x = np.exp(rng.normal(0, 0.05, 10))
        y = 1.03 * np.exp(rng.normal(0, 0.05, 10))
        lo, hi = stats.compare_samples(x, y).ci
        cover += lo <= 1.03 <= hi
    assert cover / sims >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / sims)
