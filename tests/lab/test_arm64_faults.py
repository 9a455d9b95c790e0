# SPDX-License-Identifier: MIT
"""Fault injection and kmemleak in an arm64 guest (ipclab/lab/arm64/steps.py), with no
build and no boot: the init's steps around the tests, the init's own handling of them
(scripts/guest-init.c built for the host with only its job), what the host reads back, and
`vm run --conformance` and scripts/fault-runs on arm64 with a stand-in for the guest."""

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ipclab.cli import main
from ipclab.lab import ab, faults, vm
from ipclab.lab.arm64 import conformance as ac, guest as arm64_guest, steps

# no_ct_env: the host's run.sh variables would change the job (autouse, here too).
from test_arm64_conformance import job_lines, no_ct_env  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
KNOBS = "/sys/kernel/debug/fail_page_alloc"
SLAB = "/sys/kernel/debug/failslab"


def test_the_job_arms_before_the_tests_and_scans_after_them():
    """With faults for the command and kmemleak: every knob written as guest-run.py writes
    it on x86 (the budget in pages), the runs marked, then what is left of `times` kept
    before the facility is disarmed, kmemleak scanned twice and kept, lockdep's state
    kept: each in its place around the runs."""
    spec = vm.fault_injection("2,1,2000,1M", "10,3,400,64K")
    text, _ = ac.job_text(["pipe_order", "stress_pipe_integrity"], vm.TIMED, "madvise",
                     environ={}, faults=spec, kmemleak=True)
    lines = job_lines(text)
    runs = [i for i, line in enumerate(lines) if line[0] == "run"]
    first, last = runs[0], runs[-1]
    writes = {line[1]: line[2] for line in lines[:first] if line[0] == "write"}
    assert {k: writes[f"{KNOBS}/{k}"] for k in (
        "task-filter", "ignore-gfp-wait", "probability", "interval", "times", "space",
        "min-order", "ignore-gfp-highmem", "verbose")} == {
        "task-filter": "Y", "ignore-gfp-wait": "N", "probability": "2", "interval": "1",
        "times": "2000", "space": "256", "min-order": "0", "ignore-gfp-highmem": "N",
        "verbose": "1"}
    # failslab counts its budget in bytes, and has no order to choose.
    assert writes[f"{SLAB}/space"] == "65536" and writes[f"{SLAB}/interval"] == "3"
    assert f"{SLAB}/min-order" not in writes
    assert lines.index(["make-it-fail", "1"]) < first
    assert ["env", "CT_MAKE_IT_FAIL=1"] not in lines
    after = lines[last + 1:]
    assert after == [
        ["make-it-fail", "0"],
        ["copy", f"{KNOBS}/times", "fail_page_alloc.times-left"],
        ["write", f"{KNOBS}/probability", "0"], ["write", f"{KNOBS}/times", "0"],
        ["copy", f"{SLAB}/times", "failslab.times-left"],
        ["write", f"{SLAB}/probability", "0"], ["write", f"{SLAB}/times", "0"],
        ["write", "/sys/kernel/debug/kmemleak", "scan"],
        ["write", "/sys/kernel/debug/kmemleak", "scan"],
        ["copy", "/sys/kernel/debug/kmemleak", "kmemleak.txt"],
        ["copy", "/proc/lockdep_stats", "lockdep_stats.txt"]]


def test_workers_are_marked_by_the_tests_and_a_plain_job_has_no_debug_steps():
    spec = vm.fault_injection("2,1,8", None, "workers")
    lines = job_lines(ac.job_text(["stress_pipe_integrity"], vm.TIMED, "madvise", environ={},
                             faults=spec)[0])
    assert ["env", "CT_MAKE_IT_FAIL=1"] in lines
    assert not any(line[0] == "make-it-fail" and line[1] == "1" for line in lines)
    # Few failures: a stack for each.
    assert ["write", f"{KNOBS}/verbose", "2"] in lines
    assert ["copy", "/sys/kernel/debug/kmemleak", "kmemleak.txt"] not in lines
    plain = job_lines(ac.job_text(["pipe_order"], vm.TIMED, "madvise", environ={})[0])
    assert not any(line[0] in ("make-it-fail", "copy") or "/sys/kernel/debug" in line[1]
                   for line in plain)
    only_leaks = job_lines(ac.job_text(["pipe_order"], vm.TIMED, "madvise", environ={},
                                  kmemleak=True)[0])
    assert only_leaks[-1] == ["copy", "/proc/lockdep_stats", "lockdep_stats.txt"]
    assert not any(line[0] == "make-it-fail" for line in only_leaks)


def test_the_job_takes_run_sh_variables_from_what_it_is_given(monkeypatch):
    """A fault run's variables are its plan's, not whatever the host has set."""
    monkeypatch.setenv("CT_STRESS_ARGS", "--from-the-host")
    plan = faults.PLANS[0]
    lines = job_lines(ac.job_text(list(plan.tests), vm.TIMED, "madvise", environ=plan.env(5))[0])
    runs = {line[1]: line[3:] for line in lines if line[0] == "run"}
    assert runs["stress_pipe_integrity"] == ["--tolerate-enomem", "--duration", "5",
                                             *faults.BIG_RECORDS]
    assert runs["stress_pipe_splice_integrity"] == ["--tolerate-enomem", "--duration", "5"]
    host = job_lines(ac.job_text(["stress_pipe_integrity"], vm.TIMED, "madvise")[0])
    assert [line for line in host if line[0] == "run"][0][3:] == ["--from-the-host"]


# --------------------------------------------------------------------------- the init


@pytest.fixture(scope="module")
def host_init(tmp_path_factory):
    """scripts/guest-init.c with only its job (GUEST_INIT_JOB_ONLY), built for the host."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    out = tmp_path_factory.mktemp("init") / "init"
    subprocess.run(["gcc", "-O2", "-Wall", "-Wno-unused-function", "-Werror",
                    "-DGUEST_INIT_JOB_ONLY", "-o", str(out), str(arm64_guest.GUEST_INIT)],
                   check=True)
    return out


def run_job(init, shared, lines):
    (shared / arm64_guest.JOB).write_text("".join("\t".join(line) + "\n" for line in lines))
    subprocess.run([str(init), str(shared)], check=True, timeout=60)
    return json.loads((shared / "status.json").read_text())


def test_the_init_saves_files_and_notes_what_it_cannot_read(host_init, tmp_path):
    src = tmp_path / "knob"
    src.write_bytes(b"x" * 200000 + b"\nend\n")     # more than one read's worth
    status = run_job(host_init, tmp_path, [["copy", str(src), "copy"],
                                           ["copy", str(tmp_path / "none"), "lost"]])
    assert (tmp_path / "copy").read_bytes() == src.read_bytes()
    assert not (tmp_path / "lost").exists()
    assert status["notes"] == [f"{tmp_path / 'none'}: No such file or directory"]


def test_the_init_marks_only_the_runs_between_make_it_fail_1_and_0(host_init, tmp_path):
    """A marked run writes its /proc/self/make-it-fail before exec: on a kernel with fault
    injection it runs marked, on one without it does not run at all (exit 126, the reason
    on its stderr); an unmarked run is left alone either way."""
    status = run_job(host_init, tmp_path, [
        ["make-it-fail", "1"], ["run", "marked", "/bin/cat", "/proc/self/make-it-fail"],
        ["make-it-fail", "0"], ["run", "plain", "/bin/true"]])
    marked = int((tmp_path / "marked.rc").read_text())
    if os.path.exists("/proc/self/make-it-fail"):
        assert marked == 0 and (tmp_path / "marked.out").read_text().strip() == "1"
        assert status["rc"] == 0
    else:
        assert os.WIFEXITED(marked) and os.WEXITSTATUS(marked) == 126
        assert (tmp_path / "marked.err").read_text() == (
            "/proc/self/make-it-fail: No such file or directory\n")
        assert status["rc"] == 1
    assert int((tmp_path / "plain.rc").read_text()) == 0


# --------------------------------------------------------------------------- read back


def test_the_host_reads_back_what_guest_run_py_reports_on_x86(tmp_path):
    spec = vm.fault_injection("2,1,2000,1M", "10,1,-1")
    (tmp_path / "fail_page_alloc.times-left").write_text("1412\n")
    (tmp_path / "failslab.times-left").write_text("-1\n")
    line = "FAULT_INJECTION: forcing a failure."
    (tmp_path / "dmesg.txt").write_text(f"[1] {line}\n[2] other\n[3] {line}\n")
    (tmp_path / "lockdep_stats.txt").write_text(
        " lock-classes:  900 [max: 8192]\n debug_locks:                     1\n")
    got = steps.read_back(tmp_path, spec, {"notes": ["/dev/mqueue: busy"]})
    # failslab was unbounded: only the kernel log counts it.
    assert got == {"faults_armed": True, "faults_injected": 588,
                   "faults_injected_by": {"fail_page_alloc": 588}, "fault_messages": 2,
                   "debug_locks": 1}
    unarmed = {"notes": [f"{KNOBS}/task-filter: No such file or directory"]}
    assert steps.read_back(tmp_path, spec, unarmed)["faults_armed"] is False
    (tmp_path / "lockdep_stats.txt").write_text(" debug_locks:  0\n")
    assert steps.read_back(tmp_path, None, {}) == {"debug_locks": 0}
    assert steps.read_back(tmp_path / "none", None, {}) == {}


# --------------------------------------------------------------------------- a boot


def fake_guest(leaks="", debug_locks=1, left=(1900, 390), notes=()):
    """vm.boot's stand-in: a guest that ran the job's tests (each passing with a stress
    summary), and left what the job's debug steps leave; its verdict as vm.boot gives it
    (a leak fails the boot)."""
    def guest(meta, accel, argv, *, shared, launcher, faults=None, kmemleak=False, **kw):
        lines = job_lines((shared / arm64_guest.JOB).read_text())
        for line in lines:
            if line[0] == "run":
                (shared / f"{line[1]}.rc").write_text("0\n")
                witness = "".join(f"# case {i}: memory.stat kernel +0 bytes\n"
                                  for i in range(3))
                (shared / f"{line[1]}.out").write_text(
                    witness if line[1] == "pipe_failed_write_allocates_nothing" else
                    "# records sent 40, received 40, bytes 9; ENOMEM retries 2, short "
                    "writes continued 5, 0 corrupt\n")
                (shared / f"{line[1]}.err").write_text("")
            elif line[0] == "copy" and line[1].endswith("/times"):
                page, slab = left
                (shared / line[2]).write_text(f"{page if 'page' in line[1] else slab}\n")
            elif line[0] == "copy" and line[1].endswith("/kmemleak"):
                (shared / line[2]).write_text(leaks)
            elif line[0] == "copy" and line[1] == "/proc/lockdep_stats":
                (shared / line[2]).write_text(f" debug_locks: {debug_locks}\n")
        bad = [f"kmemleak: {leaks.splitlines()[0]}"] if leaks else []
        return vm.Boot("mainline+debug+counters", "7.3.4", "tcg", shared, not bad, 0,
                       "kernel log: leak" if bad else None, bad, "", {}, {"notes": list(notes)})
    return guest


@pytest.fixture
def no_build(tmp_path, monkeypatch):
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(ac, "binaries", lambda: tmp_path / "conformance-arm64-k")
    monkeypatch.setattr(ac, "initrd", lambda bindir, names: tmp_path / "initrd.cpio")


def test_a_fault_boot_on_arm64_is_judged_as_on_x86(tmp_path, monkeypatch, no_build):
    """The fault plan of scripts/fault-runs through arm64_conformance.run: faults.boot_row
    finds the faults armed and injected, the records, and kmemleak and lockdep clean; a
    leak or lockdep switched off fails the row."""
    plan = faults.PLANS[0]
    meta = {"variant": "mainline+debug+counters", "arch": "arm64"}

    def row(**guest):
        monkeypatch.setattr(vm, "boot", fake_guest(**guest))
        run = ac.run(meta, vm.ConformanceJob(plan.tests, plan.env(5)), faults=plan.faults,
                     kmemleak=True, clock=vm.TIMED)
        return faults.boot_row("mainline", plan, run.boot.record(), run.output)

    good = row()
    assert good["ok"], good["problems"]
    assert good["passed"] == list(plan.tests) and good["records_sent"] == 80
    assert good["faults_armed"] is True and good["faults_injected"] == 110
    assert good["faults_injected_by"] == {"fail_page_alloc": 100, "failslab": 10}
    assert good["kmemleak"] == "clean" and good["lockdep"] == "clean"
    leak = row(leaks="unreferenced object 0xffff0000c0de (size 64):\n")
    assert leak["kmemleak"].startswith("leak: unreferenced object") and not leak["ok"]
    assert row(debug_locks=0)["lockdep"] == "off"
    unarmed = row(notes=[f"{KNOBS}/probability: No such file or directory"])
    assert "faults were not armed" in unarmed["problems"]
    nothing = row(left=(2000, 400))
    assert nothing["problems"] == ["no fault was injected"]


def test_vm_run_passes_faults_and_kmemleak_to_the_arm64_guest(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr(ac, "run", lambda meta, job, **kw: seen.update(kw, tests=list(
        job.tests)) or vm.GuestRun(vm.Boot("mainline", "7.3.4", "tcg", tmp_path, True, 0,
                                           None, [], "", {}, {}), "", 0))
    monkeypatch.setattr(ab.kernel, "obtain", lambda kern, **kw: {"arch": kern.arch})
    assert main(["vm", "run", "mainline+debug+counters", "--arch", "arm64", "--conformance",
                 "--fail-page-alloc", "2,1,20", "--fault-tasks", "workers", "--kmemleak",
                 "--", "stress_pipe_integrity"]) == 0
    assert seen["kmemleak"] is True and seen["tests"] == ["stress_pipe_integrity"]
    assert seen["faults"] == {"fail_page_alloc": {"probability": 2, "interval": 1,
                                                  "times": 20, "space": 0,
                                                  "tasks": "workers"}}


# --------------------------------------------------------------------------- fault-runs


def load_fault_runs():
    path = ROOT / "scripts" / "fault-runs"
    loader = importlib.machinery.SourceFileLoader("fault_runs", str(path))
    spec = importlib.util.spec_from_loader("fault_runs", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_fault_runs_on_arm64_boot_each_plan_with_its_own_variables(tmp_path, monkeypatch,
                                                                   no_build, capsys):
    fr = load_fault_runs()
    built = []

    def obtain(kern, **kw):
        if isinstance(kern, dict):
            return kern     # what obtain gives for a build's meta
        built.append(kern)
        return {"variant": kern.name, "arch": kern.arch, "release": "7.3.4"}
    monkeypatch.setattr(fr.kernel, "obtain", obtain)
    guest, cpus = fake_guest(), []
    monkeypatch.setattr(vm, "boot", lambda *a, **kw: cpus.append(kw["cpus"]) or guest(*a, **kw))
    out = tmp_path / "out"
    assert fr.main(["mainline", "--arch", "arm64", "--duration", "3", "--cpus", "1",
                    "--out", str(out)]) == 0
    assert cpus == [1, 1]
    assert [(k.name, k.arch) for k in built] == [("mainline+debug+counters", "arm64")]
    rows = json.loads((out / "fault-runs.json").read_text())["rows"]
    assert [(r["boot"], r["ok"]) for r in rows] == [("faults", True), ("clean", True)]
    assert rows[1]["records_sent"] == 40 and len(rows[1]["memstat"]) == 3
    assert (out / "mainline-faults.ktap").read_text().startswith("TAP version 13")
    jobs = {p.parent.name: job_lines(p.read_text())
            for p in (tmp_path / "cache" / "runs").glob("*/job.txt")}
    assert len(jobs) == 2
    fault_job = next(j for j in jobs.values() if ["env", "CT_MAKE_IT_FAIL=1"] in j)
    stress = [line for line in fault_job if line[:2] == ["run", "stress_pipe_integrity"]][0]
    assert stress[3:6] == ["--tolerate-enomem", "--duration", "3"]
    assert "faults" in capsys.readouterr().out
