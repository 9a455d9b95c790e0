# SPDX-License-Identifier: MIT
"""The method checked against itself: A/A false positives and power for a 10% shift."""
import copy
import json
import random

from conftest import fixture

from ipclab import compare, ranks, stats


def synthetic(values_of, ncells, reps, rnd, run_id):
    cells = []
    for i in range(ncells):
        samples = [{"metrics": {"throughput": {"value": v, "unit": "MB/s", "better": "higher"}}}
                   for v in values_of(i, rnd, reps)]
        cells.append({"key": "sim/%d" % i, "suite": "sim", "workload": "sim", "args": [],
                      "samples": samples, "status": "ok", "error": ""})
    return {"schema": "ipclab-results/1", "id": run_id, "suite": "sim", "mode": "quick",
            "meta": {}, "env": {}, "plan": {"reps": reps}, "cells": cells}


def lognormal(shift=1.0, cv=0.05):
    return lambda i, rnd, n: [1000 * shift * rnd.lognormvariate(0, cv) for _ in range(n)]


def test_aa_flags_at_most_5_percent_of_cells():
    rnd = random.Random(12345)
    base = synthetic(lognormal(), 200, 10, rnd, "a1")
    new = synthetic(lognormal(), 200, 10, rnd, "a2")
    out = compare.compare_results(base, new)
    flagged = sum(1 for r in out.rows if r.cmp.significant)
    assert len(out.rows) == 200
    assert flagged <= 10
    # Even uncorrected, the test keeps its level: about 5% of cells or fewer.
    raw = sum(1 for r in out.rows if r.cmp.u.p < 0.05)
    assert raw <= 0.05 * 200


def test_aa_false_positive_rate_of_the_test_itself():
    rnd = random.Random(99)
    trials = 2000
    hits = 0
    for _ in range(trials):
        a = [rnd.gauss(0, 1) for _ in range(10)]
        b = [rnd.gauss(0, 1) for _ in range(10)]
        hits += ranks.mann_whitney_u(a, b).p < 0.05
    assert hits / trials <= 0.055


def test_ten_percent_shift_detected_with_10_reps():
    rnd = random.Random(2024)
    base = synthetic(lognormal(cv=0.03), 9, 10, rnd, "b")
    new = synthetic(lognormal(shift=1.10, cv=0.03), 9, 10, rnd, "n")
    out = compare.compare_results(base, new)
    assert all(r.cmp.significant and r.verdict == "better" for r in out.rows)
    for r in out.rows:
        assert r.cmp.ci[0] > 1.0


def test_ten_percent_shift_power_at_5_percent_cv():
    rnd = random.Random(7)
    detected = 0
    trials = 300
    for _ in range(trials):
        a = [rnd.lognormvariate(0, 0.05) for _ in range(10)]
        b = [1.10 * rnd.lognormvariate(0, 0.05) for _ in range(10)]
        detected += ranks.mann_whitney_u(b, a).p < 0.05
    assert detected / trials >= 0.9


def test_aa_fixture_files_show_no_significant_change():
    base = json.load(open(fixture("base.json")))
    aa = json.load(open(fixture("aa.json")))
    out = compare.compare_results(base, copy.deepcopy(aa))
    assert not [r for r in out.rows if r.cmp.significant]
