# SPDX-License-Identifier: MIT
"""A host A/B inside one run (`run --side A=... --side B=...`): one schedule, the sides
alternating by round, two files that name each other, and a comparison paired by round."""
import io
import json
import os
import stat

import numpy as np
import pytest

from conftest import FAKE_ENGINE
from ipclab import Error, compare, engine, report, results, runner, schedule, stats
from ipclab import power
from ipclab.cli import main


def shifted_engine(tmp_path, shift, name="fake-b"):
    """The fake engine with every metric shifted by `shift`: a second build to compare."""
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\nFAKE_SHIFT={shift} exec {FAKE_ENGINE} \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.mark.parametrize("text,want", [
    ("old=/tmp/ipcbench", ("old", "/tmp/ipcbench", ())),
    ("b=--copies 2", ("b", "", ("--copies", "2"))),
    ("new=bench/ipcbench --copies 2", ("new", "bench/ipcbench", ("--copies", "2"))),
    ("a=", ("a", "", ())),
    ("x.1=", None), ("=eng", None), ("noequals", None), ("q='unclosed", None),
])
def test_side_specs(text, want):
    if want is None:
        with pytest.raises(Error):
            runner.parse_side(text)
    else:
        s = runner.parse_side(text)
        assert (s.name, s.engine, s.args) == want


def test_side_order_alternates_by_round():
    assert [schedule.side_order(r, 2) for r in range(4)] == [[0, 1], [1, 0], [0, 1], [1, 0]]
    assert schedule.side_order(3, 1) == [0]


def test_two_engines_in_one_run_alternate_and_pair_by_round(fake_engine, tmp_path,
                                                             monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    b = shifted_engine(tmp_path, 1.2)
    calls = []
    real = engine.run_cell

    def spy(eng, cell, env=None):
        calls.append((eng, cell.key))
        return real(eng, cell, env)
    monkeypatch.setattr(engine, "run_cell", spy)
    rc = main(["run", "mq-latency", "--reps", "4", "--warmups", "1", "-o", "ab",
               "--side", f"a={FAKE_ENGINE}", "--side", f"b={b}", "--quiet",
               "--report-dir", "rep"])
    assert rc == 0
    out = capsys.readouterr().out
    a, bb = results.load("ab.a.json"), results.load("ab.b.json")
    assert a["pair"]["id"] == bb["pair"]["id"] and (a["pair"]["side"], bb["pair"]["side"]) \
        == ("a", "b")
    assert a["pair"]["files"] == ["ab.a.json", "ab.b.json"]
    # Every slot runs on both sides back to back, A first in even rounds.
    ncells = len(a["cells"])
    assert len(calls) == 2 * ncells * 5
    for i in range(0, len(calls), 2):
        (e1, k1), (e2, k2) = calls[i], calls[i + 1]
        rnd = i // (2 * ncells)
        assert k1 == k2
        assert (e1, e2) == ((FAKE_ENGINE, b) if rnd % 2 == 0 else (b, FAKE_ENGINE))
    rounds = [s["round"] for s in a["cells"][0]["samples"]]
    assert rounds == [0, 1, 2, 3, 4]
    assert "Paired by round" in out and "results: ab.a.json" in out
    assert os.path.exists("rep/report.md")
    outcome = compare.compare_results(a, bb)
    assert outcome.unit == "round" and not any("unpaired" in w for w in outcome.warnings)
    assert {r.cmp.test.n for r in outcome.rows} == {4}
    # mq latencies are lower-is-better; the shifted engine divides them by 1.2.
    assert all(r.verdict == "better" for r in outcome.rows if r.primary)
    rec = compare.outcome_record(outcome)
    assert rec["unit"] == "round" and rec["rows"][0]["pairs"] == 4


def test_two_parameter_sets_differ_by_their_arguments(fake_engine, tmp_path, monkeypatch,
                                                      capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "token-ring", "--reps", "3", "-o", "p.json", "--no-report", "--quiet",
                 "--side", "small=--transfers 100", "--side", "big=--transfers 900"]) == 0
    s, b = results.load("p.small.json"), results.load("p.big.json")
    assert s["cells"][0]["args"][-2:] == ["--transfers", "100"]
    assert b["cells"][0]["args"][-2:] == ["--transfers", "900"]
    assert b["cells"][0]["samples"][0]["params"]["transfers"] == 900
    # compare takes the side names and does not call the differing arguments a mismatch
    assert main(["compare", "p.small.json", "p.big.json"]) == 0
    assert "small: " in capsys.readouterr().out


def test_a_pair_resumes_on_both_sides(fake_engine, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "mq-latency", "--reps", "3", "-o", "r", "--no-report",
                 "--quiet", "--side", "x=", "--side", "y=--seed 2"]) == 0
    for name, keep in (("r.x.json", 2), ("r.y.json", 1)):
        res = json.load(open(name))
        res["cells"][0]["samples"] = res["cells"][0]["samples"][:keep]
        res["complete"] = False
        json.dump(res, open(name, "w"))
    assert main(["run", "--resume", "r.y.json", "--quiet", "--no-report"]) == 0
    x, y = results.load("r.x.json"), results.load("r.y.json")
    assert x["complete"] and y["complete"]
    assert [s["round"] for s in y["cells"][0]["samples"]] == [0, 1, 2, 3]
    # The partner is found beside the file, and a replaced engine is refused.
    with pytest.raises(Error, match="not the engine"):
        runner.resume_sides(dict(y, pair=dict(y["pair"], sides=[
            dict(y["pair"]["sides"][0], engine_sha256="0" * 64), y["pair"]["sides"][1]])),
            "r.y.json")
    os.remove("r.x.json")
    assert main(["run", "--resume", "r.y.json", "--quiet"]) == 2


@pytest.mark.parametrize("argv,msg", [
    (["--side", "a=", "--side", "b=", "--side", "c="], "two sides"),
    (["--side", "a="], "two sides"),
    (["--side", "a=", "--side", "a=--seed 2"], "both sides"),
    (["--side", "a=", "--side", "b=", "--engine", FAKE_ENGINE], "--engine and --side"),
    (["--side", "a=/no/such/engine", "--side", "b="], "engine not found"),
])
def test_bad_sides_are_one_line_and_exit_2(fake_engine, tmp_path, monkeypatch, capsys, argv,
                                           msg):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "seed-mqueue-cache", "--quiet"] + argv) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err
    assert not list(tmp_path.glob("results/*"))


# ---- the method: pairing by round cancels drift ------------------------------------------

def run_pair(rng, rounds, drift_cv, within_cv, shift=1.0):
    """The two files of one run with two sides: round r's level is shared by both sides
    (the machine then), each sample has its own noise on top."""
    level = np.exp(np.cumsum(rng.normal(0, drift_cv, rounds)))
    def side(name, k):
        samples = [{"metrics": {"loops_per_s": {"value": float(1000 * k * level[r] *
                                                                np.exp(rng.normal(0, within_cv))),
                                                "unit": "loops/s", "better": "higher"}},
                    "round": r} for r in range(rounds)]
        return {"schema": results.SCHEMA, "id": name, "suite": "adhoc", "mode": "quick",
                "meta": {}, "env": {}, "plan": {}, "pair": {"id": "p", "side": name},
                "cells": [{"key": "c/1", "suite": "adhoc", "workload": "w", "args": [],
                           "status": "ok", "error": "", "samples": samples}]}
    return side("a", 1.0), side("b", shift)


def test_paired_rounds_hold_the_false_positive_rate_under_drift():
    rng = np.random.default_rng(7)
    runs, flagged, flagged_unpaired = 200, 0, 0
    for _ in range(runs):
        a, b = run_pair(rng, 10, 0.05, 0.02)
        out = compare.compare_results(a, b)
        assert out.unit == "round"
        flagged += out.rows[0].cmp.significant
        # The same data as two separate runs: the drift lands in the difference.
        a2, _ = run_pair(rng, 10, 0.05, 0.02)
        del a2["pair"], b["pair"]
        flagged_unpaired += compare.compare_results(a2, b).rows[0].cmp.significant
    # 5% of 200 is 10; three standard errors above is 19.
    assert flagged <= 19
    assert flagged_unpaired >= 40


@pytest.mark.parametrize("within_cv,change", [(0.02, 0.05), (0.05, 0.10)])
def test_paired_rounds_find_what_their_mde_says(within_cv, change):
    """The MDE printed for a paired-rounds design is what it finds 80% of the time."""
    rng = np.random.default_rng(11)
    rounds = 10
    # The sd of a pair's log ratio: two independent draws of within-round noise.
    sd = np.sqrt(2 * stats.log_var(within_cv))
    mde = power.paired_mde(sd, rounds)
    hits, runs = 0, 300
    for _ in range(runs):
        a, b = run_pair(rng, rounds, 0.05, within_cv, shift=1 + mde)
        hits += compare.compare_results(a, b).rows[0].cmp.significant
    assert abs(hits / runs - stats.POWER) < 0.07
    # and the report prints an MDE of that size for such a run
    a, b = run_pair(rng, rounds, 0.05, within_cv)
    row = compare.compare_results(a, b).rows[0]
    assert 0.5 * mde < row.mde < 2 * mde


def test_report_of_a_pair_shows_what_pairing_removed():
    rng = np.random.default_rng(2)
    a, b = run_pair(rng, 10, 0.10, 0.01)
    text = io.StringIO()
    report.render_compare(compare.compare_results(a, b), text, names=("a", "b"))
    t = text.getvalue()
    assert "Paired by round" in t and "ratio CV" in t and "rounds" in t


def sweep_pair(rng, drift_cv, shift):
    """The seed-pipe-prealloc sweep of tests/fixtures/base.json as the two sides of one run,
    every round's throughput scaled by a level both sides share, with 2% noise of each
    sample's own."""
    from conftest import fixture
    base = results.load(fixture("base.json"))
    base["cells"] = [c for c in base["cells"] if c["key"].startswith("pipe-sweep/")]
    sides = []
    for name, k in (("a", 1.0), ("b", shift)):
        res = json.loads(json.dumps(base))
        res["pair"] = {"id": "p", "side": name}
        sides.append(res)
    rounds = len(base["cells"][0]["samples"])
    level = np.exp(rng.normal(0, drift_cv, rounds))
    for res, k in zip(sides, (1.0, shift)):
        for c in res["cells"]:
            for r, smp in enumerate(c["samples"]):
                smp["round"] = r
                smp["metrics"]["throughput"]["value"] *= k * level[r] * \
                    np.exp(rng.normal(0, 0.02))
    return sides


def test_a_sweep_is_tested_over_rounds():
    rng = np.random.default_rng(4)
    a, b = sweep_pair(rng, 0.3, 1.0)
    (vc,) = [v for v in compare.compare_results(a, b).views if v.geomean is not None][:1]
    assert vc.geomean_over == "round" and vc.geomean.n == 10
    # a drift both sides share is no change...
    assert vc.geomean.ci[0] < 1 < vc.geomean.ci[1]
    # ... and a 10% gain on every point is found
    a, b = sweep_pair(rng, 0.3, 1.10)
    (vc,) = [v for v in compare.compare_results(a, b).views if v.geomean is not None][:1]
    assert vc.geomean.ci[0] > 1.05 and abs(vc.geomean.effect - 1.10) < 0.01
