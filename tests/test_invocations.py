# SPDX-License-Identifier: MIT
"""Issue 42, case 5: samples of one engine invocation are one repetition. `run --reps 2 --
--samples 5` is two independent invocations, so every statistic has n = 2, made of each
invocation's median (docs/statistics.md, "The unit of analysis")."""

import json

from conftest import REAL_ENGINE

from ipclab import metrics, results
from ipclab.cli import main


def _sample(i, v, **kw):
    return {"sample": i, "warmup": False,
            "metrics": {"x": {"value": v, "unit": "", "better": "higher"}}, **kw}


def test_one_value_per_invocation():
    """Two invocations of three samples, one of one: three values, each invocation's
    median; a sample without a number is an invocation of its own."""
    cell = {"samples": [_sample(0, 1.0), _sample(1, 2.0), _sample(2, 9.0),
                        _sample(0, 5.0), _sample(1, 7.0), _sample(2, 6.0),
                        _sample(0, 4.0), {"metrics": {"x": {"value": 3.0}}}]}
    assert [len(g) for g in results.invocations(cell)] == [3, 3, 1, 1]
    assert metrics.metric_values(cell, "metrics.x") == [2.0, 6.0, 4.0, 3.0]


def test_rounds_and_boots_split_invocations():
    """Samples numbered 0, 1 of two rounds (or two boots) are two invocations."""
    for field in ("round", "lab_boot"):
        cell = {"samples": [_sample(0, 1.0, **{field: 1}), _sample(1, 2.0, **{field: 2})]}
        assert len(results.invocations(cell)) == 2


def test_reps_count_invocations_not_samples():
    """One invocation of five samples is one of two repetitions: the run is not complete,
    and a resume runs the second."""
    res = {"plan": {"reps": 2}, "cells": [
        {"status": "ok", "samples": [_sample(i, 1.0) for i in range(5)]}]}
    results.finish(res)
    assert res["complete"] is False


def test_run_samples_five_reports_n_two(tmp_path, monkeypatch, capsys):
    """The real engine, `--reps 2 -- --samples 5`: show and compare say n = 2."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IPCBENCH", REAL_ENGINE)
    assert main(["run", "pipe-throughput", "--reps", "2", "--warmups", "0", "-o", "r.json",
                 "--quiet", "--no-report", "--", "--samples", "5", "--duration", "0.01"]) == 0
    res = results.load("r.json")
    assert len(results.measured(res["cells"][0])) == 10
    capsys.readouterr()
    assert main(["show", "--json", "r.json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and {r["n"] for r in rows} == {2}, rows
    assert main(["compare", "--json", "r.json", "r.json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ns = [r["n"] for r in out["rows"]]
    assert ns and all(n == [2, 2] for n in ns), ns
