# SPDX-License-Identifier: MIT
"""Samples that explain themselves (ipclab/bimodal.py): two modes are found in synthetic
samples and one is not made up, the cause comes from the engine's "sides", and show says
it; env's wakeup measurement reads what the engine gives."""
import io
import math
import random

import pytest

from ipclab import bimodal, envinfo, report, results


def lognormal(rng, centre, cv, n):
    return [centre * math.exp(rng.gauss(0, cv)) for _ in range(n)]


def test_two_far_clusters_are_two_modes():
    rng = random.Random(1)
    fast, slow = lognormal(rng, 400000, 0.05, 6), lognormal(rng, 25000, 0.2, 4)
    xs = fast + slow
    rng.shuffle(xs)
    sp = bimodal.split(xs)
    assert sp is not None
    assert sorted(xs[i] for i in sp.high) == sorted(fast)
    assert sorted(xs[i] for i in sp.low) == sorted(slow)
    assert sp.low_median < 40000 < 300000 < sp.high_median


@pytest.mark.parametrize("seed", range(20))
def test_one_noisy_cluster_is_not_two_modes(seed):
    rng = random.Random(seed)
    assert bimodal.split(lognormal(rng, 1000, 0.15, 10)) is None


def test_a_lone_straggler_or_too_few_samples_are_not_modes():
    assert bimodal.split([100, 101, 99, 100, 102, 98, 100, 101, 99, 10]) is None
    assert bimodal.split([1, 1, 1, 100, 100]) is None          # under MIN_SAMPLES
    assert bimodal.split([1.0, 1.01, 1.02, 1.3, 1.31, 1.32, 1.33, 1.3]) is None  # < 1.5x apart
    assert bimodal.split([0, -1, float("nan"), None, 5, 5]) is None


def sides(*cpus, moved=0):
    """pipe-context's sides: (initiator start, initiator end, responder start, end)."""
    a0, a1, b0, b1 = cpus
    return [{"role": "initiator", "copy": 0, "cpu_start": a0, "cpu_end": a1, "migrations": moved},
            {"role": "responder", "copy": 0, "cpu_start": b0, "cpu_end": b1, "migrations": 0}]


def test_placement_of_a_sample():
    assert bimodal.placement({"sides": sides(0, 0, 0, 0)}) == bimodal.SAME
    assert bimodal.placement({"sides": sides(0, 0, 1, 1)}) == bimodal.APART
    assert bimodal.placement({"sides": sides(0, 1, 1, 1)}) == bimodal.MOVED
    assert bimodal.placement({"sides": sides(1, 1, 1, 1, moved=2)}) == bimodal.MOVED
    assert bimodal.placement({}) is None
    assert bimodal.placement({"sides": sides(None, None, 0, 0)}) is None
    # one process per copy has no partner to share a CPU with
    assert bimodal.placement({"sides": [{"copy": 0, "cpu_start": 0, "cpu_end": 0}]}) is None
    two = sides(0, 0, 0, 0) + [dict(s, copy=1, cpu_start=1, cpu_end=1) for s in sides(0, 0, 0, 0)]
    assert bimodal.placement({"sides": two}) == bimodal.SAME


def cell(rates, places=None, args=()):
    samples = []
    for i, r in enumerate(rates):
        s = {"metrics": {"round_trips_per_s": {"value": r, "unit": "round trips/s",
                                               "better": "higher"}}}
        if places:
            s["sides"] = places[i]
        samples.append(s)
    return {"key": "pipe-context/copies=1", "workload": "pipe-context", "args": list(args),
            "samples": samples, "status": "ok", "error": ""}


def test_the_cause_is_named_from_the_sides():
    rates = [420000, 410000, 30000, 405000, 26000, 415000, 33000, 400000, 28000, 412000]
    places = [sides(0, 0, 0, 0) if r > 100000 else sides(0, 0, 1, 1) for r in rates]
    f = bimodal.find(cell(rates, places))
    assert f is not None
    assert "lower values ran with the sides on different CPUs in 4 of 4" in f.cause
    assert "the higher on one CPU in 6 of 6" in f.cause
    assert "--cpus 0,0" in f.advice and "--cpus 0,1" in f.advice


def test_no_cause_without_sides_and_other_advice_when_pinned():
    rates = [420000, 410000, 30000, 405000, 26000, 415000, 33000, 400000, 28000, 412000]
    f = bimodal.find(cell(rates))
    assert f.cause == "" and "not record where they ran" in f.advice
    f = bimodal.find(cell(rates, args=["--cpus", "0,1"]))
    assert "pinned (--cpus) already" in f.advice
    # the same placement in both modes is not a cause
    f = bimodal.find(cell(rates, [sides(0, 0, 1, 1)] * 10))
    assert f.cause == ""


def test_show_warns_about_the_modes():
    rates = [420000, 410000, 30000, 405000, 26000, 415000, 33000, 400000, 28000, 412000]
    places = [sides(0, 0, 0, 0) if r > 100000 else sides(0, 0, 1, 1) for r in rates]
    res = {"schema": results.SCHEMA, "id": "m", "suite": "pipe-context", "mode": "quick",
           "meta": {}, "env": {}, "plan": {"reps": 10}, "complete": True,
           "cells": [cell(rates, places)]}
    buf = io.StringIO()
    report.show(res, buf)
    text = buf.getvalue()
    assert "its samples fall into two modes, 4 near 29000 and 6 near 411000" in text
    assert "different CPUs in 4 of 4" in text and "--cpus" in text


def test_env_measures_the_wakeup_latency_with_the_engine(fake_engine):
    w = envinfo.wakeup_latency()
    if "error" in w:
        assert "one CPU" in w["error"]
        return
    assert w["same_cpu_us"] > 0 and w["cross_cpu_us"] > 0
    assert w["ratio"] == pytest.approx(w["cross_cpu_us"] / w["same_cpu_us"], rel=0.01)
    assert w["runs"] == envinfo.WAKEUP_RUNS and w["round_trips"] == envinfo.WAKEUP_ROUND_TRIPS
    assert "us per round trip" in envinfo.wakeup_text(w)


def test_env_says_why_the_wakeup_latency_is_missing(monkeypatch):
    monkeypatch.setenv("IPCBENCH", "/nonexistent/ipcbench")
    w = envinfo.wakeup_latency()
    assert "error" in w
    assert envinfo.wakeup_text(w).startswith("cross-CPU wakeup latency not measured")
    text = envinfo.wakeup_text({"same_cpu_us": 2.0, "cross_cpu_us": 40.0, "ratio": 20.0,
                                "cpus": [0, 1], "runs": 3, "round_trips": 2000})
    assert "2.00 us" in text and "40.00 us" in text and "--cpus A,B" in text
