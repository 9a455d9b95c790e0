# SPDX-License-Identifier: MIT
"""Kernel tier, fault runs on arm64: `scripts/fault-runs mainline-series --arch arm64`, the
two boots of ipclab/lab/faults.py's plans in the series' arm64 debug build (lockdep,
kmemleak, fail_page_alloc and failslab), with the tests run by the guest's init and the
debug checks set up by its job (ipclab/lab/arm64/steps.py). Nothing may be lost, the
injected failures must reach the tests as ENOMEM or short writes, kmemleak and lockdep
stay clean.

It takes a cold arm64 debug build (docs/lab.md, "Fault runs on arm64") on top of the arm64
tier's, so it is in neither `make test` nor `make test-arm64`: `make test-arm64-faults`
runs it (IPCLAB_TEST_ARM64_FAULTS=1). The timeouts bound a build or a boot, they are not
measurements.
"""

import json
import subprocess
import sys
import time

import pytest

from conftest import lab_command_time
from .conftest import REPO
from .test_lab_arm64 import missing_arm64

SERIES = "mainline-series"
MISSING = missing_arm64("IPCLAB_TEST_ARM64_FAULTS", "test-arm64-faults")


pytestmark = pytest.mark.skipif(MISSING is not None, reason=str(MISSING))


def test_fault_runs_of_the_series_on_arm64_lose_nothing(tmp_path):
    out = tmp_path / "fault-runs"
    argv = ["scripts/fault-runs", SERIES, "--arch", "arm64", "--duration", "5",
            "--out", str(out)]
    t0 = time.monotonic()
    try:
        r = subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True,
                           text=True, timeout=7200)
    finally:
        lab_command_time(argv, time.monotonic() - t0)
    rows = json.loads((out / "fault-runs.json").read_text())["rows"]
    assert [row["boot"] for row in rows] == ["faults", "clean"], r.stderr[-3000:]
    fault, clean = rows
    assert fault["faults_armed"] is True and fault["faults_injected"] > 0, fault
    assert fault["records_sent"] > 0 and fault["records_lost"] == 0, fault["stress"]
    assert fault["enomem_retries"] + fault["short_writes"] > 0, fault["stress"]
    assert clean["faults_armed"] is None and len(clean["memstat"]) == 3, clean
    for row in rows:
        assert all(row["stress"].values()), row["stress"]     # every summary line is there
        assert row["kmemleak"] == "clean" and row["lockdep"] == "clean", row
        assert row["ok"], row["problems"]
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
