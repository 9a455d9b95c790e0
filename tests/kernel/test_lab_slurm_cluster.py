# SPDX-License-Identifier: MIT
"""The Slurm executor (ipclab/lab/slurm.py) against a real one-node cluster started here
(tests/slurm_cluster.py: Debian's slurm-wlm and munge), in `make test`, without a kernel:
each boot's command is replaced by one that writes what a boot writes, and a build's by
`true` or `false`, so that a job takes seconds. What Slurm itself does is real: job arrays
and their tasks' ids in squeue, a dependency on a build that failed (the boots behind it
cancelled, the others kept), scancel of exactly the jobs submitted (a job of someone else's
keeps running), a drained node (its jobs wait, and run once it is back) and a job past its
time limit. The boots themselves through Slurm: test_lab_slurm.py (make test-slurm).

A cluster that cannot start fails these tests with its daemons' own log lines; no skip."""

import _thread
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from ipclab import results, suites
from ipclab.lab import ab, kernel, slurm, variants, vm
from ipclab.lab.boot_plan import BootOpts, Here, SuiteBoot

CELL = "pipe-throughput/copies=1"
META = {"variant": "vA", "key": "0" * 20, "release": "7.3.4", "source": "src",
        "patches": [], "config_sha256": "c"}


@pytest.fixture
def boot_files(tmp_path):
    """What a boot leaves (a results file, a boot record), for the stand-in command to
    copy; the results' one cell ok."""
    cell = suites.Cell(CELL, "pipe-throughput", [], suite="icount-check")
    res = results.new("r", "icount-check", "quick", [cell], 6, None, None,
                      meta={"variant": "vA", "kernel": "7.3.4"})
    res["cells"][0]["status"] = "ok"
    boot = vm.Boot("vA", "7.3.4", "tcg", tmp_path, True, 0, None, [], "",
                   {"boot_total_s": 1.0}, {"nproc": 1}, {"mode": "deterministic"})
    (tmp_path / "results.json").write_text(json.dumps(res))
    (tmp_path / "record.json").write_text(json.dumps(boot.record()))
    return tmp_path


@pytest.fixture
def stand_ins(monkeypatch, boot_files):
    """A boot is `sleep BOOT_S` then a copy of boot_files into its results and record; a
    build is `true`, or `false` for a variant named in `failing`."""
    knobs = {"boot_s": 1, "failing": set()}

    def boot_command(b, o, record):
        return [sys.executable, "-c",
                "import shutil, sys, time; time.sleep(float(sys.argv[1]));"
                " shutil.copy(sys.argv[2], sys.argv[3]); shutil.copy(sys.argv[4], sys.argv[5])",
                str(knobs["boot_s"]), str(boot_files / "results.json"), str(b.out.resolve()),
                str(boot_files / "record.json"), str(record)]

    def build_argv(self, kern, log_path):
        return self._sbatch(f"build-{variants.slug(kern.name)}", log_path,
                            ["false" if kern.name in knobs["failing"] else "true"], None, True)
    monkeypatch.setattr(slurm, "vm_run_argv", boot_command)
    monkeypatch.setattr(slurm.Slurm, "build_argv", build_argv)
    monkeypatch.setattr(slurm, "cache_root", lambda: boot_files / "cache")
    monkeypatch.setattr(kernel, "find", lambda kern: (
        {**kernel._before_build(kern, kern.name.ljust(20, "0")[:20]), "to_build": True},
        kern.name not in knobs["failing"] and kern.name != "mainline"))
    return knobs


def opts(clock=vm.DETERMINISTIC):
    return BootOpts("tcg", vm.SuiteJob("icount-check", suites.QUICK, 6, None, None, (CELL,)),
                    clock)


def here(o):
    return Here(lambda p: pytest.fail("booted here"),
                lambda p, b, run_id: ab.no_results(o.job, b, p.meta, run_id), lambda b: None)


def planned(tmp_path, metas):
    out = tmp_path / "ab"
    out.mkdir(exist_ok=True)
    return [SuiteBoot(f"boot {i + 1} of {side}", meta, out / f"{side}-boot{i + 1}.json")
            for side, meta in metas.items() for i in range(2)]


def test_arrays_of_boots_behind_their_builds_and_a_failed_build_cancels_only_its_own(
        cluster, stand_ins, tmp_path):
    stand_ins["failing"].add("mainline-write-cost")
    s = slurm.Slurm(poll_s=0.2)
    metas = s.images({"A": variants.resolve("mainline"),
                      "B": variants.resolve("mainline-write-cost")}, vm.DETERMINISTIC)
    o = opts()
    p = planned(tmp_path, metas)
    done = s.run_boots(p, o, here(o))
    assert [b.ok for _, b in done] == [True, True, False, False], [b.reason for _, b in done]
    assert all(r["cells"][0]["status"] == "ok" for r, _ in done[:2])
    for _, b in done[2:]:
        assert "the build of mainline-write-cost" in b.reason and "ended failed" in b.reason
    # each boot of A a task of one array, its log where a job of its own would put it
    assert all(slurm.Slurm.files(b)["log"].exists() for b in p[:2])


def test_ctrl_c_cancels_the_jobs_submitted_and_no_other(cluster, stand_ins, tmp_path):
    stand_ins["boot_s"] = 120
    other = subprocess.run(["sbatch", "--parsable", "--output", str(tmp_path / "other.log"),
                            "--chdir", str(tmp_path), "--wrap", "sleep 120"], text=True,
                           capture_output=True, timeout=60).stdout.strip().split(";")[0]
    s = slurm.Slurm(poll_s=0.2)
    submitted, submit, states = [], s._submit, s.states
    s._submit = lambda argv: submitted.append(submit(argv)) or submitted[-1]
    polled = threading.Event()
    s.states = lambda ids: (polled.set(), states(ids))[1]
    o = opts()

    stop = threading.Event()

    def ctrl_c_once_polled():
        # once the jobs are in and squeue was asked, not after a guessed delay: under load
        # a timer could fire while sbatch still runs
        while not stop.is_set():
            if polled.wait(0.1):
                if not stop.wait(2.0):
                    _thread.interrupt_main()
                return
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    watcher = threading.Thread(target=ctrl_c_once_polled, daemon=True)
    watcher.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            s.run_boots(planned(tmp_path, {"A": {**META}}), o, here(o))
    finally:
        stop.set()
        watcher.join()
        signal.signal(signal.SIGINT, before)
    try:
        [array] = submitted
        tasks = [f"{array}_0", f"{array}_1"]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and \
                any(cluster.job(t)["JobState"] != "CANCELLED" for t in tasks):
            time.sleep(0.5)
        assert [cluster.job(t)["JobState"] for t in tasks] == ["CANCELLED"] * 2
        assert cluster.job(other)["JobState"] == "RUNNING"
    finally:
        subprocess.run(["scancel", other], timeout=60)


def test_a_drained_node_holds_the_jobs_until_it_is_back(cluster, stand_ins, tmp_path):
    def scontrol(state):
        r = subprocess.run(["scontrol", "update", f"nodename={cluster.node}", f"state={state}",
                            "reason=ipclab-test"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    scontrol("drain")
    resumed = threading.Timer(6.0, scontrol, ("resume",))
    resumed.start()
    try:
        t0 = time.monotonic()
        s = slurm.Slurm(poll_s=0.2)
        o = opts()
        done = s.run_boots(planned(tmp_path, {"A": {**META}}), o, here(o))
    finally:
        resumed.join()
    assert all(b.ok for _, b in done) and time.monotonic() - t0 >= 6.0


@pytest.mark.skipif(not os.environ.get("IPCLAB_TEST_SLURM"),
                    reason="opt-in: make test-slurm (slurmctld looks at time limits about once a"
                           " minute: 90 s of waiting)")
def test_a_job_past_its_time_limit_is_a_failed_boot(cluster, stand_ins, tmp_path):
    """A five-second limit and a boot that would take five minutes: Slurm ends it (TIMEOUT)
    when slurmctld next looks, and its failed cell says so."""
    stand_ins["boot_s"] = 300
    s = slurm.Slurm(poll_s=0.5, time_limit="0:05")
    o = opts(vm.TIMED)          # one job at a time: the one past its limit alone
    [(res, b)] = s.run_boots(planned(tmp_path, {"A": {**META}})[:1], o, here(o))
    assert not b.ok and "timeout" in b.reason.lower(), b.reason
    assert res["cells"][0]["status"] == "failed"
