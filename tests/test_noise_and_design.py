# SPDX-License-Identifier: MIT
"""What a comparison says about its own noise and the next run (issue 22's smaller fixes):
the MDE at the family's level, the noise split pooled over both sides with measured step times,
the CV warning on the paired ratios, and no verdicts on secondary deterministic rows."""
import io
import json
import math

import numpy as np
import pytest

from ipclab import compare, power, report, results, stats


def cell(key, samples):
    return {"key": key, "suite": "adhoc", "workload": "w", "args": [], "status": "ok",
            "error": "", "samples": samples}


def sample(v, **tags):
    return dict({"metrics": {"loops_per_s": {"value": float(v), "unit": "loops/s",
                                             "better": "higher"}}}, **tags)


def side(name, cells, **extra):
    return dict({"schema": results.SCHEMA, "id": name, "suite": "adhoc", "mode": "quick",
                 "meta": {}, "env": {}, "plan": {}, "cells": cells}, **extra)


def rounds_pair(rng, ncells, rounds, drift_cv, ratio_cv, change=0.0):
    """Two sides of one run: per round a level both sides share (drift_cv), and per pair
    its own log ratio noise (ratio_cv)."""
    sides = {"a": [], "b": []}
    for i in range(ncells):
        level = 1000 * np.exp(rng.normal(0, drift_cv, rounds))
        noise = rng.normal(0, ratio_cv, rounds)
        sides["a"].append(cell(f"c/{i}", [sample(v, round=r) for r, v in enumerate(level)]))
        sides["b"].append(cell(f"c/{i}", [sample(v * math.exp(math.log1p(change) + e), round=r)
                                          for r, (v, e) in enumerate(zip(level, noise))]))
    return [side(n, cs, pair={"id": "p", "side": n}) for n, cs in sides.items()]


# ---- the MDE at the family's level -------------------------------------------------------

def test_mde_is_at_the_familys_level():
    rng = np.random.default_rng(3)
    one = compare.compare_results(*rounds_pair(rng, 1, 12, 0.05, 0.02))
    many = compare.compare_results(*rounds_pair(rng, 12, 12, 0.05, 0.02))
    assert one.family == 1 and many.family == 12
    r1, r12 = one.rows[0], many.rows[0]
    t1, t12 = r1.cmp.test, r12.cmp.test
    assert r1.mde == pytest.approx(power.paired_mde(t1.scale_log, t1.n, stats.ALPHA,
                                                    test=t1.method))
    assert r12.mde == pytest.approx(power.paired_mde(t12.scale_log, t12.n, stats.ALPHA / 12,
                                                     test=t12.method))
    # The same noise at a twelfth of the alpha needs a larger change.
    assert r12.mde > power.paired_mde(t12.scale_log, t12.n, stats.ALPHA, test=t12.method)


def test_the_family_mde_is_found_80_percent_of_the_time_at_the_familys_level():
    rng = np.random.default_rng(17)
    n, sd, family, sims = 12, 0.02, 12, 2000
    mde = power.paired_mde(sd, n, stats.ALPHA / family)
    d = math.log1p(mde) + sd * rng.standard_normal((sims, n))
    hits = np.mean([stats.paired_log_ratio(np.zeros(n), x).p < stats.ALPHA / family
                    for x in d])
    assert abs(hits - stats.POWER) <= 3 * math.sqrt(0.16 / sims), hits


# ---- the CV warning on paired rounds -----------------------------------------------------

def test_paired_rounds_warn_on_the_ratios_not_on_each_side():
    rng = np.random.default_rng(5)
    # Each side drifts by 20% over the run, the ratios vary by 1%: the test is fine.
    out = compare.compare_results(*rounds_pair(rng, 1, 12, 0.20, 0.01))
    assert out.rows[0].cmp.old.cv > 0.1
    assert not any("CV over" in w for w in out.warnings)
    # Steady sides, noisy ratios: warned, and said to be the ratios'.
    out = compare.compare_results(*rounds_pair(rng, 1, 12, 0.0, 0.10))
    (w,) = [w for w in out.warnings if "CV over" in w]
    assert "paired ratios" in w


# ---- the noise split and the next run -----------------------------------------------------

def boots_side(name, rng, boots, reps, cv_between, cv_within, elapsed=None, boot_s=None):
    samples = []
    for b in range(boots):
        level = 1000 * math.exp(rng.normal(0, cv_between))
        for v in level * np.exp(rng.normal(0, cv_within, reps)):
            smp = sample(v, lab_boot=b + 1)
            if elapsed:
                smp["elapsed_s"] = elapsed
            samples.append(smp)
    meta = {}
    if boot_s:
        meta["lab"] = [{"timings": {"boot_total_s": boot_s + reps * elapsed}}
                       for _ in range(boots)]
    return side(name, [cell("c/1", samples)], meta=meta)


def test_the_noise_split_pools_both_sides():
    rng = np.random.default_rng(8)
    # Boots of the base side agree; the new side's boots differ by 5%.
    base = boots_side("a", rng, 6, 10, 0.0, 0.01)
    new = boots_side("b", rng, 6, 10, 0.05, 0.01)
    p = compare.compare_results(base, new).rows[0].cmp.components
    alone_base = stats.variance_components(
        [[s["metrics"]["loops_per_s"]["value"] for s in base["cells"][0]["samples"]
          if s["lab_boot"] == b] for b in range(1, 7)])
    assert alone_base.cv_between < 0.01 < p.cv_between
    assert p.units == 12
    # By hand: the pooled mean squares are the sums over sides over the summed df.
    v = stats.variance_components([[1.0, 1.1], [2.0, 2.1]], [[1.0, 1.0], [1.5, 1.5]])
    logs_a = [np.log([1.0, 1.1]), np.log([2.0, 2.1])]
    ss_w = sum(((x - x.mean()) ** 2).sum() for x in logs_a)
    assert v.ms_within == pytest.approx(ss_w / 4)      # 2 units of 2 samples on each side
    means_a, means_b = [x.mean() for x in logs_a], [0.0, math.log(1.5)]
    ss_b = sum(2 * (m - np.mean(ms)) ** 2 for ms in (means_a, means_b) for m in ms)
    assert v.ms_between == pytest.approx(ss_b / 2)


def test_the_next_run_is_planned_from_what_the_boots_measured():
    rng = np.random.default_rng(9)
    base = boots_side("a", rng, 5, 10, 0.02, 0.03, elapsed=0.5, boot_s=40.0)
    new = boots_side("b", rng, 5, 10, 0.02, 0.03, elapsed=0.5, boot_s=40.0)
    out = compare.compare_results(base, new)
    assert out.step_times.measured and out.step_times.boot_s == pytest.approx(40.0)
    assert out.step_times.rep_s["c/1"] == pytest.approx(0.5)
    r = out.rows[0]
    p = r.cmp.components
    want = power.plan_next_run(p.cv_between, p.cv_within, out.min_change, 40.0, 0.5,
                               alpha=stats.ALPHA / out.family)
    assert r.cmp.plan == want
    # A boot worth 80 repetitions, not 60: the design follows the measurement.
    assert want != power.plan_next_run(p.cv_between, p.cv_within, out.min_change, 60.0, 1.0,
                                       alpha=stats.ALPHA / out.family)
    text = io.StringIO()
    report.render_compare(out, text)
    assert "a boot takes 40 s beyond its samples" in text.getvalue()
    rec = compare.outcome_record(out)
    assert rec["step_times"]["measured"] and rec["rows"][0]["next_boots"] == want.units
    # Without the lab's records nothing is measured, and the report says so.
    bare = compare.compare_results(boots_side("a", rng, 5, 10, 0.02, 0.03),
                                   boots_side("b", rng, 5, 10, 0.02, 0.03))
    assert not bare.step_times.measured
    text = io.StringIO()
    report.render_compare(bare, text)
    assert "a boot counted as 60 repetitions' time" in text.getvalue()


# ---- deterministic: verdicts on primary rows only ----------------------------------------

def test_deterministic_secondary_rows_get_no_verdict(tmp_path, capsys):
    from test_deterministic import results_of
    from ipclab.cli import main
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(results_of([2747.9] * 9)))
    b.write_text(json.dumps(results_of([2847.9] * 9)))
    assert main(["compare", str(a), str(b), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    prim = [r for r in rec["rows"] if r["primary"]]
    sec = [r for r in rec["rows"] if not r["primary"]]
    assert prim and prim[0]["verdict"] == "worse"
    # loops per second moved by as much, and is shown, but judged by nobody
    assert sec and all(r["verdict"] == "" for r in sec)
    assert any(abs(r["delta"]) > 0.03 for r in sec)
