# SPDX-License-Identifier: MIT
"""scripts/icount-floor: every A/A pair is appended with its medians, N and date, per kernel
base; nothing is replaced, a run is not recorded twice, and older maxima stay as such."""
import json
import math
import os
import subprocess
import sys

import pytest
from conftest import ROOT
from test_deterministic import results_of

from ipclab.deterministic import floor

SCRIPT = os.path.join(ROOT, "scripts", "icount-floor")
PATH = "counters.task_clock_ns / metrics.loops"


def aa_dir(tmp_path, name, per_boot, base="mainline", variants=("mainline", "mainline")):
    """An `ab` output directory: per_boot[i] = (A's insn per loop, B's), 9 samples each."""
    d = tmp_path / name
    d.mkdir()
    for i, pair in enumerate(per_boot, 1):
        for side, v, variant in zip("AB", pair, variants):
            res = results_of([v] * 9)
            res["created"] = "2026-11-25T19:00:00Z"
            res["meta"].update(variant=variant, build={"base": {"name": base,
                                                                "release": "7.3.4"}})
            res["meta"]["clock"]["qemu"] = "7.2.22"
            (d / f"{side}-{variant}-boot{i}.json").write_text(json.dumps(res))
    return str(d)


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=120)


def test_pairs_are_appended_never_replaced(tmp_path):
    out = tmp_path / "floor.json"
    legacy = json.loads(floor.FLOOR_FILE.read_text())
    # The project's own mainline pairs out, so that this test's pairs are the cell's only ones.
    legacy["floors"] = [e for e in legacy["floors"] if e.get("base") != "mainline"]
    out.write_text(json.dumps(legacy))
    first = aa_dir(tmp_path, "run1", [(2748.0, 2748.1), (2748.2, 2748.0), (2748.0, 2748.0)])
    r = run("--out", str(out), first)
    assert r.returncode == 0, r.stderr
    # two metrics (insn per loop, loops per 1e9 insn), 3 pairs each
    assert "6 pair records added" in r.stdout and "fewer than 8 pairs" in r.stdout
    floors, entry = floor.load("icount shift=0", 1, "mainline", out)
    f = floors[floor.key("pipe-throughput/copies=1", PATH)]
    assert f.k == 3 and f.dates == ("2026-11-25",) and f.n == 9
    rec = entry["cells"][floor.key("pipe-throughput/copies=1", PATH)]["pairs"][0]
    assert rec["medians"] == [2748.0, 2748.1] and rec["n"] == [9, 9]
    assert rec["delta"] == pytest.approx(0.1 / 2748.0) and rec["run"] == "run1"
    # The same run again adds nothing; another run adds its pairs to the same cell.
    r = run("--out", str(out), first)
    assert "0 pair records added, 6 already there" in r.stdout
    r = run("--out", str(out), aa_dir(tmp_path, "run2", [(2748.0, 2748.1)] * 5))
    assert r.returncode == 0, r.stderr
    floors, _ = floor.load("icount shift=0", 1, "mainline", out)
    f = floors[floor.key("pipe-throughput/copies=1", PATH)]
    assert f.k == 8 and f.trusted
    deltas = [0.1 / 2748.0, -0.2 / 2748.2, 0.0] + [0.1 / 2748.0] * 5
    assert f.rms == pytest.approx(math.sqrt(sum(math.log1p(d) ** 2 for d in deltas) / 8))
    # The lts entry and its legacy maxima are untouched.
    data = json.loads(out.read_text())
    (lts,) = [e for e in data["floors"] if e["base"] == "lts"]
    assert lts == [e for e in legacy["floors"] if e["base"] == "lts"][0]
    assert floor.load("icount shift=0", 1, "lts", out)[0][
        floor.key("mq-latency/prio=constant", "metrics.empty_recv_ns")].legacy[
        "max_abs_delta"] == pytest.approx(0.0215, abs=1e-4)


def test_modes_among_the_boots_are_reported(tmp_path):
    out = tmp_path / "floor.json"
    boots = [(1333.8, 1333.9)] * 7 + [(1333.8, 1362.5)]
    r = run("--out", str(out), aa_dir(tmp_path, "run", boots))
    assert r.returncode == 0, r.stderr
    assert "bimodal in A/A: 15 of 16 boots at 1333.8" in r.stdout


@pytest.mark.parametrize("variants,base,msg", [
    (("mainline", "mainline-write-cost"), "mainline", "one kernel on both sides"),
    (("mainline", "mainline"), None, "names no base"),
])
def test_what_is_not_an_aa_run_of_a_base_is_refused(tmp_path, variants, base, msg):
    out = tmp_path / "floor.json"
    d = aa_dir(tmp_path, "run", [(1.0, 1.0)], base=base or "x", variants=variants)
    if base is None:
        for p in os.listdir(d):
            res = json.loads(open(os.path.join(d, p)).read())
            del res["meta"]["build"]
            open(os.path.join(d, p), "w").write(json.dumps(res))
    r = run("--out", str(out), d)
    assert r.returncode == 2 and msg in r.stderr
    assert not out.exists()
    assert run("--out", str(out), str(tmp_path / "missing")).returncode == 2
