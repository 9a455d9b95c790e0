# SPDX-License-Identifier: MIT
"""Kernel tier: build the plain kernel of the base under test (once per machine; the image
cache makes reruns cheap), boot it, run a command, the conformance tests and a tiny suite
inside, and kill a panicking guest.

The tier tests one base: mainline, or the one IPCLAB_TEST_BASE names (`make test-lts`);
conftest.py's ROLES says which variant of each base plays each part, for every file of the tier.

Each test boots its own guest under the lab's watchdog; the timeouts below bound a boot, they
are not measurements.
"""

import json
import re

import pytest

from ipclab.lab import bases

from .conftest import PLAIN, RELEASE, REPO, ROLE, TEST_BASE, ipclab, missing_prereq

pytestmark = pytest.mark.skipif(missing_prereq() is not None, reason=str(missing_prereq()))


@pytest.fixture(scope="module")
def base_built():
    # First run on a machine: a clean build (minutes). Later runs: a cache hit.
    r = ipclab("kernel", "build", PLAIN, timeout=3600)
    assert r.returncode == 0, r.stderr[-3000:]
    listed = json.loads(ipclab("kernel", "list", "--json").stdout)
    rows = {row["variant"]: row for row in listed["variants"]}
    assert rows[PLAIN]["built"] and rows[PLAIN]["patches"] == []
    assert rows[PLAIN]["base"] == TEST_BASE
    return rows[PLAIN], {b["base"]: b for b in listed["bases"]}


def test_list_shows_the_plain_kernel_built_on_its_base(base_built):
    row, listed = base_built
    assert row["release"] == RELEASE
    base = bases.load(TEST_BASE)
    assert listed[TEST_BASE]["version"] == base.version
    assert listed[TEST_BASE]["tarball_sha256"] == base.sha256


def test_command_runs_in_guest_with_lab_setup(base_built, tmp_path):
    rec = tmp_path / "record.json"
    script = ("uname -r; cat /proc/self/cgroup; grep -c ' /dev/mqueue mqueue ' /proc/mounts; "
              "cat /sys/kernel/mm/transparent_hugepage/enabled; echo accel=$IPCBENCH_ACCEL")
    r = ipclab("vm", "run", PLAIN, "--thp", "always", "--timeout", "300", "--record", str(rec),
               "--", "sh", "-c", script)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[0] == RELEASE
    assert "0::/ipclab" in lines          # the workload ran in the non-root memory cgroup
    assert lines[2] == "1"                 # /dev/mqueue mounted
    assert "[always]" in lines[3]
    record = json.loads(rec.read_text())
    assert lines[4] == f"accel={record['accel']}"
    assert record["ok"] and record["variant"] == PLAIN and record["kernel"] == RELEASE
    assert int(record["guest"]["memcg"]["memory.peak"]) > 0
    assert record["guest"]["nproc"] == 2      # vng --cpus 2: the guest must see both


def test_failing_command_fails_the_run(base_built):
    r = ipclab("vm", "run", PLAIN, "--timeout", "300", "--", "sh", "-c", "exit 3")
    assert r.returncode == 3


def test_panicking_guest_is_a_failed_run_with_console_tail(base_built, tmp_path):
    rec = tmp_path / "record.json"
    r = ipclab("vm", "run", PLAIN, "--timeout", "300", "--record", str(rec), "--",
               "sh", "-c", "echo c > /proc/sysrq-trigger; sleep 600")
    assert r.returncode == 1
    record = json.loads(rec.read_text())
    assert not record["ok"]
    assert "Kernel panic" in record["console_tail"] or "sysrq" in record["console_tail"].lower()


def test_hung_guest_is_killed_by_the_watchdog(base_built, tmp_path):
    rec = tmp_path / "record.json"
    # The watchdog bounds the whole boot: where it fires, in the boot or in the command,
    # the guest must be killed and the run failed.
    r = ipclab("vm", "run", PLAIN, "--timeout", "20", "--record", str(rec), "--",
               "sleep", "3600")
    assert r.returncode == 1
    record = json.loads(rec.read_text())
    assert not record["ok"] and "watchdog" in record["reason"]


def test_conformance_inside_guest(base_built):
    runner = REPO / "conformance" / "run.sh"
    bins = REPO / "conformance" / "bin"
    if not runner.exists() or not bins.is_dir() or not any(bins.iterdir()):
        pytest.skip("conformance tests not built (make conformance)")
    # Emulated CPUs are ~25x slower: scale the tests' own watchdogs to match.
    r = ipclab("vm", "run", PLAIN, "--timeout", "1200", "--", "env", "CT_WATCHDOG_SCALE=25",
               str(runner), timeout=1500)
    assert "TAP version" in r.stdout or "KTAP version" in r.stdout, r.stdout[-2000:]
    failed = {m.group(1) for m in re.finditer(r"^not ok \d+ (\S+)", r.stdout, re.M)}
    assert failed == ROLE["upstream_fails"], r.stdout[-3000:] + r.stderr[-2000:]
    assert r.returncode == (1 if failed else 0), r.stderr[-2000:]


@pytest.fixture(scope="module")
def tiny_suite(base_built, tmp_path_factory):
    """One timed boot of a tiny suite: its results."""
    if not (REPO / "bench" / "ipcbench").exists():
        pytest.skip("engine not built (make engine)")
    out = tmp_path_factory.mktemp("tiny-suite") / "res.json"
    r = ipclab("vm", "run", PLAIN, "seed-exclusive-waits", "--reps", "2", "--warmups", "0",
               "--timeout", "1200", "-o", str(out), timeout=1500)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(out.read_text())


def test_tiny_suite_results_carry_variant_and_accel(tiny_suite):
    res = tiny_suite
    meta = res["meta"]
    assert meta["variant"] == PLAIN and meta["kernel"] == RELEASE
    assert meta["build"]["base"]["name"] == TEST_BASE
    assert meta["accel"] in ("kvm", "tcg") and meta["emulated"] == (meta["accel"] == "tcg")
    assert meta["patches"] == "none"
    assert res["cells"] and all(c["status"] == "ok" for c in res["cells"])
    samples = [s for c in res["cells"] for s in c["samples"] if not s.get("warmup")]
    assert len(samples) >= 2
    assert all(s["env"]["accel"] == meta["accel"] for s in samples)


def test_a_suite_boot_is_what_the_next_dry_run_estimates_from(tiny_suite):
    """The suite's boot left its time in the cache (times.BOOT_RECORD); `ab --dry-run` of
    the same suite prints an estimate from this machine's own figure."""
    r = ipclab("ab", PLAIN, PLAIN, "--suite", "seed-exclusive-waits", "--boots", "3",
               "--dry-run", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [line.removeprefix("ipclab: ") for line in r.stderr.splitlines()]
    head = next(line for line in lines if line.startswith("estimate:"))
    assert head.startswith("estimate: about "), lines
    boots = next(line for line in lines if "6 x boot x86_64 seed-exclusive-waits timed" in line)
    assert "this machine, n=" in boots, lines
