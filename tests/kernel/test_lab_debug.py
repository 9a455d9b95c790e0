# SPDX-License-Identifier: MIT
"""Kernel tier, debug variant: lockdep/kmemleak/fail_page_alloc kernel, and fault injection
limited to the command under test. Builds `debug` once per machine (its own build dir)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_lab_boot import REPO, missing_prereq

pytestmark = pytest.mark.skipif(missing_prereq() is not None, reason=str(missing_prereq()))


def ipclab(*argv, timeout=3600):
    return subprocess.run([sys.executable, "-m", "ipclab", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def debug_built():
    r = ipclab("kernel", "build", "debug")
    assert r.returncode == 0, r.stderr[-3000:]


def test_fail_page_alloc_hits_only_the_command(debug_built, tmp_path):
    rec = tmp_path / "record.json"
    # 100% once the command's tasks have allocated 8 MiB (start-up of sh and dd stays well
    # below), at most 8 failures: dd's 64 MiB buffer crosses the budget for certain.
    script = ("cat /proc/self/make-it-fail; dd if=/dev/zero of=/dev/null bs=64M count=1 "
              "2>/dev/null; cat /sys/kernel/debug/fail_page_alloc/task-filter; true")
    r = ipclab("vm", "run", "debug", "--fail-page-alloc", "100,1,8,8M", "--kmemleak",
               "--timeout", "900", "--record", str(rec), "--", "sh", "-c", script)
    record = json.loads(rec.read_text())
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[0] == "1" and lines[-1] == "Y"
    assert record["guest"]["faults_armed"] is True
    assert record["guest"]["faults_injected"] > 0
    dmesg = (Path(record["shared"]) / "dmesg.txt").read_text()
    assert "FAULT_INJECTION: forcing a failure" in dmesg
    # Only the command's tasks were hit: every injected failure names a task of the command.
    comms = {line.split("Comm: ")[1].split()[0] for line in dmesg.splitlines()
             if "Comm: " in line and "forcing" not in line}
    assert comms and comms <= {"sh", "dd", "cat"}, comms


def test_debug_kernel_has_lockdep_and_kmemleak(debug_built, tmp_path):
    script = "grep -c . /proc/lockdep_stats; test -e /sys/kernel/debug/kmemleak && echo kmemleak"
    r = ipclab("vm", "run", "debug", "--kmemleak", "--timeout", "900", "--", "sh", "-c", script)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines()[-1] == "kmemleak"
