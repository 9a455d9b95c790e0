# SPDX-License-Identifier: MIT
"""scripts/test-fresh-record: a `make test-fresh` log becomes a row of the record that
docs/measured/test-fresh.md is printed from."""

import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

SCRIPT = Path(ROOT) / "scripts" / "test-fresh-record"
LOG = """test-fresh: make test in /tmp/ipclab-fresh.x/ipclab (HEAD abc1234)
test-fresh: IPCLAB_CACHE=/tmp/ipclab-fresh.x/cache IPCLAB_SOURCES=/tmp/ipclab-fresh.x/sources, no virtualenv
test-fresh: started 2026-11-29T09:30:00Z
test-fresh: machine: AMD EPYC, 2 CPUs, load average 0.10 0.20 0.30
not ok - sweep_matrix (exit 1)
.....F....
=========================== short test summary info ============================
FAILED tests/kernel/test_x.py::test_y - AssertionError
SKIPPED [1] tests/kernel/test_z.py:1: opt-in
1 failed, 9 passed, 1 skipped in 1900.00s (0:31:40)
test-fresh: ran make test in /tmp/ipclab-fresh.x/ipclab
test-fresh: exit status 2 after 1950 s
test-fresh: time per tier: engine 18 s, conformance 21 s, Python 310 s, kernel builds 484 s, boots 1072 s; first kernel build beside 367 s; arm64 beside 814 s (kernel builds 486 s, boots 326 s)
"""


def record(tmp_path, *logs):
    path = tmp_path / "fresh.json"
    r = subprocess.run([sys.executable, str(SCRIPT), str(path), *map(str, logs)],
                       capture_output=True, text=True, timeout=60)
    return r, path


def test_a_log_becomes_one_row_and_only_once(tmp_path):
    log = tmp_path / "test-fresh.log"
    log.write_text(LOG)
    r, path = record(tmp_path, log, log)
    assert r.returncode == 0, r.stderr
    (run,) = json.loads(path.read_text())["runs"]
    assert (run["commit"], run["status"], run["seconds"], run["started"]) == \
        ("abc1234", 2, 1950, "2026-11-29T09:30:00Z")
    assert run["tiers"] == {"engine": 18, "conformance": 21, "Python": 310,
                            "kernel builds": 484, "boots": 1072}
    assert run["beside"] == {"first kernel build": 367, "arm64": 814}
    assert run["failed"] == ["tests/kernel/test_x.py::test_y", "engine test sweep_matrix"]
    assert run["pytest"] == "1 failed, 9 passed, 1 skipped"
    assert run["machine"] == {"cpu": "AMD EPYC", "cpus": 2, "load_before": "0.10 0.20 0.30"}
    assert "already in" in r.stdout


def test_an_unfinished_log_is_refused_in_one_line(tmp_path):
    log = tmp_path / "test-fresh.log"
    log.write_text(LOG.split("test-fresh: ran")[0])
    r, path = record(tmp_path, log)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "not the output of a finished" in r.stderr and not path.exists()
