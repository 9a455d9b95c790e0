# SPDX-License-Identifier: MIT
"""The lab's step times (ipclab/lab/times.py): what a cache measured of its builds and
boots, the estimate a dry run prints from it, and the reference record's page."""

import json

import pytest

from ipclab import Error
from ipclab import step_times as times


def _build(root, key, arch, seconds, incremental, flavour="tiny"):
    d = root / "images" / key
    d.mkdir(parents=True)
    meta = {"variant": key, "arch": arch, "config_flavour": flavour, "build_seconds": seconds}
    if incremental is not None:
        meta["incremental"] = incremental
    (d / "meta.json").write_text(json.dumps(meta))


def _boot(root, name, seconds, ok=True, suite="icount-check", mode="deterministic", cpus=1):
    d = root / "runs" / name
    d.mkdir(parents=True)
    (d / times.BOOT_RECORD).write_text(json.dumps(
        {"ok": ok, "arch": "x86_64", "suite": suite, "clock": {"mode": mode, "cpus": cpus},
         "timings": {"boot_total_s": seconds}}))


@pytest.fixture
def cache(tmp_path):
    _build(tmp_path, "a", "x86_64", 300.0, False)
    _build(tmp_path, "b", "x86_64", 20.0, True)
    _build(tmp_path, "c", "x86_64", 40.0, True)
    _build(tmp_path, "old", "x86_64", 9999.0, None)       # before `incremental` was kept
    _boot(tmp_path, "r1", 60.0)
    _boot(tmp_path, "r2", 80.0)
    _boot(tmp_path, "r3", 5.0, ok=False)                  # a failed boot is no boot's time
    (tmp_path / "runs" / "torn").mkdir()
    (tmp_path / "runs" / "torn" / times.BOOT_RECORD).write_text('{"ok": tr')
    return tmp_path


def test_a_cache_measures_its_builds_and_boots(cache):
    got = times.measured(cache)
    assert got == {"build x86_64 tiny cold": [300.0], "build x86_64 tiny incremental": [20.0, 40.0],
                   times.boot_step("x86_64", "icount-check", "deterministic", 1): [60.0, 80.0]}


def test_this_machine_first_then_the_reference(cache):
    ref = {"machine": "ref-box", "steps": {
        "build x86_64 tiny cold": {"median": 500.0, "min": 1, "max": 1, "n": 3},
        "build arm64 tiny cold": {"median": 340.0, "min": 1, "max": 1, "n": 2}}}
    est = times.Estimator(cache, ref)
    assert est.seconds("build x86_64 tiny cold") == (300.0, "this machine, n=1")
    assert est.seconds("build arm64 tiny cold") == (340.0, "ref-box, n=2")
    assert est.seconds("build arm64 production cold") is None


def test_the_plan_adds_up_and_names_what_it_cannot_estimate(cache):
    est = times.Estimator(cache, {})
    builds = [{"variant": "mainline"},                                    # cached
              {"variant": "new", "arch": "x86_64", "incremental": True, "dry_run": True},
              {"variant": "steps", "arch": "x86_64", "incremental": True, "dry_run": True,
               "repeat": 3}]
    step = times.boot_step("x86_64", "icount-check", "deterministic", 1)
    lines = times.plan_lines(est, builds, [("boots", step, 3, 2, 1)])
    # 30 s + 3 x 30 s of builds, two rounds of 70 s boots: 260 s
    assert lines[0] == "estimate: about 4.3 min", lines
    assert "  build mainline: cached, 0 s" in lines
    lines = times.plan_lines(est, builds[:1], [("boots", "boot arm64 x timed 2 vCPUs", 2, 1, 1)])
    assert lines[0] == "estimate: 0 s for the steps measured, and 1 step(s) without a figure"


def test_a_reference_that_is_not_one_is_refused(tmp_path):
    bad = tmp_path / "ref.json"
    bad.write_text('{"schema": "something-else"}')
    with pytest.raises(Error, match="not a ipclab-lab-times/1 record"):
        times.reference(bad)
    assert times.reference(tmp_path / "none.json") == {}


def test_the_reference_pools_caches_and_its_page_prints_it(cache, tmp_path_factory):
    import subprocess
    import sys
    other = tmp_path_factory.mktemp("other")
    _build(other, "p", "x86_64", 900.0, False, flavour="production")
    _boot(other, "r9", 100.0)
    out = tmp_path_factory.mktemp("out") / "ref.json"
    r = subprocess.run([sys.executable, "scripts/lab-times", "--cache", str(cache), "--cache",
                        str(other), "--machine", "test box", "--command", "a test", "-o",
                        str(out)], capture_output=True, text=True, cwd=times.REFERENCE.parents[2])
    assert r.returncode == 0, r.stderr
    rec = times.reference(out)
    step = times.boot_step("x86_64", "icount-check", "deterministic", 1)
    assert rec["steps"][step] == {"median": 80.0, "min": 60.0, "max": 100.0, "n": 3}
    assert rec["steps"]["build x86_64 production cold"]["n"] == 1
    from ipclab.report import measured
    page = measured.render_times(out)
    assert "| build x86_64 production cold | 900.0 s | 900.0 s | 900.0 s | 1 |" in page
    assert "test box" in page and "a test" in page
    r = subprocess.run([sys.executable, "scripts/lab-times", "--cache", str(out.parent),
                        "--machine", "m", "--command", "c", "-o", str(out)],
                       capture_output=True, text=True, cwd=times.REFERENCE.parents[2])
    assert r.returncode == 2 and "not an ipclab cache" in r.stderr
