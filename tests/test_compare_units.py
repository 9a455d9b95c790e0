# SPDX-License-Identifier: MIT
"""compare's method (issue 12): the boot is the unit when the lab pooled boots, one primary
metric per cell, a threshold, and a zero base that is judged by its difference."""
import io

import numpy as np
import pytest

from ipclab import compare, report


def results_of(boots, metric="loops_per_s", better="higher", unit="loops/s"):
    """A results file with one cell; boots: [[value per sample] per boot] (tagged lab_boot
    when there is more than one boot)."""
    tag = len(boots) > 1
    samples = [dict({"metrics": {metric: {"value": float(v), "unit": unit, "better": better}}},
                    **({"lab_boot": i + 1} if tag else {}))
               for i, vals in enumerate(boots) for v in vals]
    return {"schema": "ipclab-results/1", "id": "r", "suite": "adhoc", "mode": "quick",
            "meta": {}, "env": {}, "plan": {},
            "cells": [{"key": "c/1", "suite": "adhoc", "workload": "w", "args": [],
                       "status": "ok", "error": "", "samples": samples}]}


def simulated_side(rng, boots, reps, cv_boot, cv_within, shift=1.0):
    return [list(1000 * shift * np.exp(rng.normal(0, cv_boot))
                 * np.exp(rng.normal(0, cv_within, reps))) for _ in range(boots)]


def test_zero_base_to_42_lower_is_better_is_worse():
    base = results_of([[0.0] * 10], "cpu_migrations", "lower", "")
    new = results_of([[42.0, 41.0, 43.0, 42.0, 40.0, 44.0, 42.0, 42.0, 41.0, 43.0]],
                     "cpu_migrations", "lower", "")
    out = compare.compare_results(base, new)
    (row,) = out.rows
    assert row.verdict == "worse"
    text = io.StringIO()
    report.render_compare(out, text)
    assert "+42" in text.getvalue()


def test_boots_are_the_unit_and_an_aa_flags_about_alpha():
    rng = np.random.default_rng(12)
    flagged_boot = flagged_pooled = 0
    runs = 120
    for _ in range(runs):
        a = simulated_side(rng, 5, 10, 0.02, 0.03)
        b = simulated_side(rng, 5, 10, 0.02, 0.03)
        out = compare.compare_results(results_of(a), results_of(b))
        assert out.unit == "boot" and out.rows[0].cmp.test.n == 5
        flagged_boot += out.rows[0].cmp.significant
        # The old method: every sample independent, boots forgotten.
        pooled = compare.compare_results(results_of([sum(a, [])]), results_of([sum(b, [])]))
        assert pooled.unit == "sample"
        flagged_pooled += pooled.rows[0].cmp.significant
    # 120 A/A runs: 5% is 6 expected; 3 standard errors above is 13.
    assert flagged_boot <= 13
    assert flagged_pooled >= 24


def test_a_real_change_across_boots_is_found():
    rng = np.random.default_rng(3)
    a = simulated_side(rng, 5, 10, 0.01, 0.03)
    b = simulated_side(rng, 5, 10, 0.01, 0.03, shift=1.10)
    out = compare.compare_results(results_of(a), results_of(b))
    assert out.rows[0].verdict == "better"


def test_two_boots_claim_nothing_and_say_why():
    rng = np.random.default_rng(5)
    a = simulated_side(rng, 2, 10, 0.01, 0.03)
    b = simulated_side(rng, 2, 10, 0.01, 0.03, shift=1.5)
    out = compare.compare_results(results_of(a), results_of(b))
    assert out.unit == "boot" and not out.rows[0].cmp.significant
    assert out.rows[0].verdict == "inconclusive"
    text = io.StringIO()
    report.render_compare(out, text)
    assert "no significance claimed" in text.getvalue()


@pytest.mark.parametrize("delta,verdict", [(0.003, "within ±2%"), (0.10, "better")])
def test_threshold(delta, verdict):
    rng = np.random.default_rng(7)
    base = results_of([list(1000 * np.exp(rng.normal(0, 0.002, 30)))])
    new = results_of([list(1000 * (1 + delta) * np.exp(rng.normal(0, 0.002, 30)))])
    assert compare.compare_results(base, new).rows[0].verdict == verdict
    # A threshold above the change turns a real change into "within".
    big = compare.compare_results(base, new, min_change=0.2)
    assert big.rows[0].verdict == "within ±20%"


def test_only_primary_metrics_get_a_verdict():
    base, new = results_of([[1.0] * 5]), results_of([[1.0] * 5])
    for res in (base, new):
        for s in res["cells"][0]["samples"]:
            s["metrics"]["p99"] = {"value": 5.0, "unit": "ns", "better": "lower"}
    out = compare.compare_results(base, new)
    assert [r.primary for r in out.rows] == [True, False]
    assert out.rows[1].verdict == ""
