# SPDX-License-Identifier: MIT
"""Kernel tier, debug kernel: lockdep, kmemleak and fail_page_alloc, fault injection limited
to the command under test, and scripts/fault-runs' two boots. One image carries it all: the
base's whole series with the debug and counters overlays (its own build dir), so that the
tier builds one debug kernel, not one per test."""

import json
from pathlib import Path

import pytest

from ipclab.lab import faults
from .conftest import ROLE, missing_prereq
from .conftest import ipclab as lab_ipclab

pytestmark = pytest.mark.skipif(missing_prereq() is not None, reason=str(missing_prereq()))


def ipclab(*argv, timeout=3600):
    # The debug kernel builds and boots slower than the plain one.
    return lab_ipclab(*argv, timeout=timeout)


def build(variant):
    r = ipclab("kernel", "build", variant)
    assert r.returncode == 0, r.stderr[-3000:]


DEBUG = ROLE["series"] + faults.OVERLAYS


@pytest.fixture(scope="module")
def debug_built():
    build(DEBUG)


def test_fail_page_alloc_hits_only_the_command(debug_built, tmp_path):
    rec = tmp_path / "record.json"
    # 100% once the command's tasks have allocated 8 MiB (start-up of sh and dd stays well
    # below), at most 8 failures: dd's 64 MiB buffer crosses the budget for certain.
    script = ("cat /proc/self/make-it-fail; dd if=/dev/zero of=/dev/null bs=64M count=1 "
              "2>/dev/null; cat /sys/kernel/debug/fail_page_alloc/task-filter; true")
    r = ipclab("vm", "run", DEBUG, "--fail-page-alloc", "100,1,8,8M", "--kmemleak",
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
    r = ipclab("vm", "run", DEBUG, "--kmemleak", "--timeout", "900", "--", "sh", "-c", script)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines()[-1] == "kmemleak"


# ---------------------------------------------------------------------- fault runs (series)
# scripts/fault-runs' two boots (ipclab/lab/faults.py), for the series, which has every
# change to a pipe write's page allocation, through the command line as a user runs them.


def plan_boot(variant, plan, tmp_path, duration):
    """`vm run VARIANT` of one fault-run plan; the row scripts/fault-runs would print."""
    rec = tmp_path / "record.json"
    knobs = [*(["--fail-page-alloc", plan.fail_page_alloc] if plan.fail_page_alloc else []),
             *(["--failslab", plan.failslab] if plan.failslab else []),
             *(["--fault-tasks", "workers"] if plan.faults else [])]
    env = [f"{k}={v}" for k, v in plan.env(duration).items()]
    r = ipclab("vm", "run", variant, *knobs, "--kmemleak", "--timeout", "1200",
               "--record", str(rec), "--", "env", *env, *plan.argv())
    assert rec.exists(), r.stderr[-3000:]
    return r, faults.boot_row(ROLE["series"], plan, json.loads(rec.read_text()), r.stdout)


def test_fault_boot_of_the_series_loses_nothing(debug_built, tmp_path):
    plan = faults.PLANS[0]
    r, row = plan_boot(DEBUG, plan, tmp_path, duration=5)
    assert r.returncode == 0, (row["problems"], r.stderr[-3000:])
    assert row["passed"] == list(plan.tests), row
    assert row["faults_injected"] > 0, row
    assert all(row["stress"].values()), r.stdout[-3000:]     # every summary line is there
    assert row["records_sent"] > 0 and row["records_lost"] == 0, row["stress"]
    # The injected failures came back as errors the tests handled: ENOMEM, or a short write
    # (a failure after the write's first page: the usual case once pages come from before
    # the mutex or from the pipe's spare pages).
    assert row["enomem_retries"] + row["short_writes"] > 0, row["stress"]
    assert row["kmemleak"] == "clean" and row["lockdep"] == "clean", row
    assert row["ok"], row["problems"]


def test_clean_boot_of_the_series_charges_nothing_for_failed_writes(debug_built, tmp_path):
    plan = faults.PLANS[1]
    r, row = plan_boot(DEBUG, plan, tmp_path, duration=5)
    assert r.returncode == 0, (row["problems"], r.stderr[-3000:])
    assert "pipe_failed_write_allocates_nothing" in row["passed"], row
    # It ran both witnesses for the three cases: pgalloc (the counters overlay) and the
    # memcg's memory.stat.
    witness = [t for t in faults.parse_ktap(r.stdout)
               if t.name == "pipe_failed_write_allocates_nothing"][0].lines
    for case in ("EAGAIN (O_NONBLOCK, full pipe)", "EPIPE (no reader, full pipe)",
                 "EPIPE (no reader, empty pipe)"):
        assert any(ln.startswith(f"{case}: memory.stat kernel") for ln in witness), witness
        assert any(ln.startswith(f"{case}: ") and "pages allocated" in ln
                   for ln in witness), witness
    assert row["ok"], row["problems"]
