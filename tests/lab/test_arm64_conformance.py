# SPDX-License-Identifier: MIT
"""The conformance tests in an arm64 guest (ipclab/lab/arm64/conformance.py), with no build
and no boot: the init's job, the KTAP read back from what the guest left, the cross-build
command, the initramfs they go in, and `vm run --conformance` on both architectures."""

import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from init_leaves import leave

from ipclab import EXIT_FAILED
from ipclab.cli import main
from ipclab.lab import ab, faults, vm, x86
from ipclab.lab.arm64 import conformance as ac, guest as arm64_guest
from ipclab.report import lab as labreport

NAMES = vm.ConformanceJob.test_names()


@pytest.fixture(autouse=True)
def no_ct_env(monkeypatch):
    """The host's run.sh variables would change the job: none unless a test sets them."""
    for var in list(os.environ):
        if var.startswith("CT_"):
            monkeypatch.delenv(var)


def job_lines(text):
    return [line.split("\t") for line in text.splitlines()]


def test_the_job_runs_every_test_as_run_sh_would():
    """Every test, in run.sh's order, a step named after it under a watchdog of run.sh's
    120 s stretched 25 times (TCG), with run.sh's environment, after the guest's setup."""
    assert len(NAMES) > 30 and NAMES == sorted(NAMES) and "pipe_order" in NAMES
    text, timeout_s = ac.job_text(NAMES, vm.TIMED, "madvise")
    lines = job_lines(text)
    assert timeout_s == 3000
    runs = [line for line in lines if line[0] == "run"]
    assert runs == [["run", n, f"/conformance/{n}"] for n in NAMES]
    env = dict(line[1].split("=", 1) for line in lines if line[0] == "env")
    assert env["CT_WATCHDOG_SCALE"] == "25" and env["IPCBENCH_ACCEL"] == "tcg"
    assert env["CT_TMPDIR"] == "/tmp" and "CT_SEED" not in env
    # The watchdog is set before the first run, after the cgroup the tests are charged to.
    first_run = lines.index(runs[0])
    assert lines.index(["timeout", "3000"]) < first_run
    assert lines.index(["write", "/sys/fs/cgroup/ipclab/cgroup.procs", "0"]) < first_run


def test_the_job_takes_run_sh_variables_from_the_host(monkeypatch):
    monkeypatch.setenv("CT_WATCHDOG_SCALE", "2")
    monkeypatch.setenv("CT_TIMEOUT", "30")
    monkeypatch.setenv("CT_SEED", "42")
    monkeypatch.setenv("CT_STRESS_ARGS", "--duration 3 --tolerate-enomem")
    monkeypatch.setenv("CT_ARGS_pipe_order", "--extra")
    text, timeout_s = ac.job_text(["pipe_order", "stress_pipe_integrity"], vm.TIMED, "never")
    lines = job_lines(text)
    assert timeout_s == 60 and ["timeout", "60"] in lines
    assert ["env", "CT_WATCHDOG_SCALE=2"] in lines and ["env", "CT_SEED=42"] in lines
    assert ["write", "/sys/kernel/mm/transparent_hugepage/enabled", "never"] in lines
    runs = [line for line in lines if line[0] == "run"]
    assert runs == [["run", "pipe_order", "/conformance/pipe_order", "--extra"],
                    ["run", "stress_pipe_integrity", "/conformance/stress_pipe_integrity",
                     "--duration", "3", "--tolerate-enomem"]]


@pytest.mark.parametrize("var,value", [("CT_TIMEOUT", "2m"), ("CT_WATCHDOG_SCALE", "x")])
def test_bad_run_sh_variables_are_errors(monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    with pytest.raises(ac.Error, match=var):
        ac.job_text(NAMES, vm.TIMED, "madvise")


# --------------------------------------------------------------------------- KTAP


def test_ktap_of_every_way_a_step_can_end(tmp_path):
    """Exit 0, a skip, a failure, a signal, the watchdog, an odd exit status, a step the init
    could not start and one it never reached: each as run.sh would print it, and as the
    lab's own KTAP reader (faults.parse_ktap) reads it back."""
    leave(tmp_path, "a_ok", 0, out="# seed 1\nplain line\n")
    leave(tmp_path, "b_skip", 77 << 8, out="# SKIP needs root\n")
    leave(tmp_path, "c_fail", 1 << 8, out="# FAIL x.c:3: lost a record\n", err="stderr line\n")
    leave(tmp_path, "d_signal", 11, out="# before the crash\n")
    leave(tmp_path, "e_timeout", 9, out="# stuck\n", timeout=3000)
    leave(tmp_path, "f_exit2", 2 << 8)
    leave(tmp_path, "g_nostart", -1)
    names = ["a_ok", "b_skip", "c_fail", "d_signal", "e_timeout", "f_exit2", "g_nostart",
             "h_never"]
    outcomes = [ac.outcome(tmp_path, n) for n in names]
    text = ac.ktap(outcomes)
    lines = text.splitlines()
    assert lines[:3] == ["TAP version 13", "1..8", "# a_ok"]
    assert lines[3:5] == ["# seed 1", "# plain line"]
    for want in ("ok 1 a_ok", "ok 2 b_skip # SKIP needs root", "not ok 3 c_fail",
                 "not ok 4 d_signal # killed by signal 11",
                 "not ok 5 e_timeout # TIMEOUT 3000 seconds",
                 "not ok 6 f_exit2 # error: exit 2",
                 "not ok 7 g_nostart # error: could not be started in the guest",
                 "not ok 8 h_never # error: not run (the guest stopped before it)"):
        assert want in lines, want
    assert lines[-1] == "# Totals: pass:1 fail:3 xfail:0 xpass:0 skip:1 error:3"
    read = {r.name: r for r in faults.parse_ktap(text, tuple(names))}
    assert {n: r.status for n, r in read.items()} == {
        "a_ok": "pass", "b_skip": "skip", "c_fail": "fail", "d_signal": "fail",
        "e_timeout": "fail", "f_exit2": "fail", "g_nostart": "fail", "h_never": "fail"}
    assert read["c_fail"].lines == ["FAIL x.c:3: lost a record", "stderr line"]
    assert ac.guest_run(None, outcomes).judged_rc == EXIT_FAILED
    assert ac.guest_run(None, outcomes[:2]).judged_rc == 0


# --------------------------------------------------------------------------- the build


def test_the_cross_build_is_conformance_s_makefile_static_for_arm64(tmp_path):
    """The command, and (make -n) that its LDFLAGS reach every test's link line and its BIN
    takes every output out of the source tree."""
    argv = ac.build_argv(tmp_path / "bin", 3)
    assert argv[:4] == ["make", "-s", "-C", str(ac.CONFORMANCE)]
    assert {"-j3", "CC=aarch64-linux-gnu-gcc", "LDFLAGS=-static -s",
            f"BIN={tmp_path / 'bin'}"} <= set(argv)
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    dry = [a for a in argv if a != "-s"] + ["-n", "--always-make"]
    out = subprocess.run(dry, capture_output=True, text=True, check=True).stdout
    links = [line for line in out.splitlines() if f" -o {tmp_path}/bin/" in line
             and "/lib/" not in line.split(" -o ")[1].split()[0]]
    assert len(links) == len(NAMES)
    assert all(line.startswith("aarch64-linux-gnu-gcc") and " -static -s " in line
               for line in links), links[:2]


def cpio_names(data: bytes) -> list[str]:
    """The member names of newc archives, one after another."""
    names, pos = [], 0
    while pos < len(data):
        if data[pos:pos + 6] != b"070701":
            pos += 1        # padding between archives
            continue
        size, namesize = (int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16) for i in (6, 11))
        name = data[pos + 110:pos + 110 + namesize - 1].decode()
        names.append(name)
        pos += 110 + namesize
        pos += -pos % 4 + size
        pos += -pos % 4
    return names


def test_the_tests_go_in_an_initramfs_after_the_init_s(tmp_path, monkeypatch):
    base = tmp_path / "initramfs-arm64-k.cpio"
    base.write_bytes(arm64_guest.cpio_archive([("init", 0o100755, b"x" * 5)]))
    monkeypatch.setattr(arm64_guest, "initramfs", lambda: base)
    bindir = tmp_path / "conformance-arm64-abc"
    bindir.mkdir()
    for n in ("t1", "t2"):
        (bindir / n).write_bytes(n.encode() * 3)
    out = ac.initrd(bindir, ["t1", "t2"])
    assert out.name == "initramfs-arm64-k-conformance-abc.cpio"
    assert cpio_names(out.read_bytes()) == ["init", "TRAILER!!!", "conformance",
                                            "conformance/t1", "conformance/t2", "TRAILER!!!"]


# --------------------------------------------------------------------------- vm run


def test_vm_run_conformance_takes_test_names_and_nothing_else(capsys, monkeypatch):
    """The names after -- are run.sh's TEST arguments, checked before anything is built."""
    seen = {}
    monkeypatch.setattr(ab, "vm_conformance", lambda kern, tests, **kw: seen.update(
        kern=kern, tests=tests) or None)
    assert main(["vm", "run", "mainline", "--arch", "arm64", "--conformance"]) == 0
    assert seen["tests"] == [] and seen["kern"].arch == "arm64"
    assert main(["vm", "run", "mainline", "--conformance", "--", "pipe_order"]) == 0
    assert seen["tests"] == ["pipe_order"]
    seen.clear()
    for argv, said in ((["seeds"], "give no SUITE"),
                       (["--profile"], "follow the cells of a SUITE"),
                       (["--cell", "pipe"], "follow the cells of a SUITE"),
                       (["--", "pipe_order", "true"], "no such conformance test: true")):
        assert main(["vm", "run", "mainline", "--conformance", *argv]) == 2
        assert said in capsys.readouterr().err
    assert main(["vm", "run", "mainline"]) == 2
    assert "--conformance" in capsys.readouterr().err
    assert not seen


def test_on_x86_conformance_is_run_sh_in_the_guest(monkeypatch, tmp_path):
    """run.sh in the guest, given its tests and, from a fault run, its variables."""
    seen = {}

    def command(self, meta, argv, **kw):
        seen.update(meta=meta, command=argv, **kw)
        return vm.GuestRun(boot(tmp_path), "TAP version 13\n")
    monkeypatch.setattr(x86.X86, "command", command)
    run = ab.vm_conformance({"arch": "x86_64"}, timeout=5, clock=vm.TIMED)
    assert run.output == "TAP version 13\n" and run.judged_rc is None
    assert seen["command"] == ["conformance/run.sh"] and seen["timeout"] == 5
    assert seen["extra_env"] is None
    ab.vm_conformance({"arch": "x86_64"}, ["pipe_order"], environ={"CT_SEED": "7"},
                     clock=vm.TIMED)
    assert seen["command"] == ["conformance/run.sh", "pipe_order"]
    assert seen["extra_env"] == {"CT_SEED": "7"}


def boot(tmp_path, ok=True):
    return vm.Boot("mainline", "7.3.4", "tcg", tmp_path, ok, 0, None if ok else "guest killed",
                   [], "", {}, {})


@pytest.mark.parametrize("kinds,boot_ok,rc", [(("pass", "skip"), True, 0),
                                              (("pass", "fail"), True, EXIT_FAILED),
                                              (("pass", "error"), True, EXIT_FAILED),
                                              (("pass",), False, EXIT_FAILED)])
def test_on_arm64_the_exit_status_is_run_sh_s(monkeypatch, tmp_path, kinds, boot_ok, rc):
    """0 when every test passed or skipped in a healthy boot, 1 otherwise; the KTAP on
    stdout."""
    outcomes = [ac.KtapLine(f"t{i}", kind) for i, kind in enumerate(kinds)]
    monkeypatch.setattr(ac, "run", lambda meta, job, **kw: ac.guest_run(
        boot(tmp_path, boot_ok), outcomes))
    run = ab.vm_conformance({"arch": "arm64"}, clock=vm.TIMED)
    out = io.StringIO()
    assert labreport.vm_command(run, out=out) == rc
    assert out.getvalue() == ac.ktap(outcomes)


def test_an_unknown_test_is_refused_before_anything_is_built(monkeypatch):
    with pytest.raises(ac.Error, match="no such conformance test: nope"):
        ac.run({"arch": "arm64"}, vm.ConformanceJob(("nope", "pipe_order")), clock=vm.TIMED)
    monkeypatch.setattr(ab.kernel, "obtain", lambda *a, **k: pytest.fail("built"))
    with pytest.raises(ac.Error, match="no such conformance test: nope"):
        ab.vm_conformance({"arch": "arm64"}, ["nope"], clock=vm.TIMED)


def test_a_boot_runs_the_named_tests_in_the_order_given(tmp_path, monkeypatch):
    """run() end to end with a stand-in for the guest that runs the job's first step and
    stops: the steps in run.sh's order (the one given), the KTAP from what it left."""
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(ac, "binaries", lambda: tmp_path / "conformance-arm64-k")
    monkeypatch.setattr(ac, "initrd", lambda bindir, names: tmp_path / "initrd.cpio")
    seen = {}

    def guest(meta, accel, argv, *, shared, launcher, cpus, timeout, **kw):
        seen["qemu"] = launcher(Path("/Image"), cpus, "2G", [], [])
        steps = [line for line in job_lines((shared / arm64_guest.JOB).read_text())
                 if line[0] == "run"]
        seen["steps"] = [line[1] for line in steps]
        leave(shared, steps[0][1], 0, out="# done\n")
        return boot(shared)
    monkeypatch.setattr(vm, "boot", guest)
    run = ac.run({"variant": "mainline", "arch": "arm64"},
                 vm.ConformanceJob(("pipe_order", "mq_notify")), cpus=1, clock=vm.TIMED)
    assert seen["steps"] == ["pipe_order", "mq_notify"]
    assert seen["qemu"][seen["qemu"].index("-initrd") + 1] == str(tmp_path / "initrd.cpio")
    assert "ok 1 pipe_order" in run.output.splitlines() and run.judged_rc == EXIT_FAILED
    assert "not ok 2 mq_notify # error: not run (the guest stopped before it)" in run.output
