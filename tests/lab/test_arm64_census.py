# SPDX-License-Identifier: MIT
"""The census in an arm64 guest (ipclab/lab/arm64/census.py), with no kernel build and no
boot: which workloads the guest runs and as what, the init's job, the driver's rows read
back from what the guest left, the marked rows and the refusals. The boot itself is the
opt-in kernel-tier test tests/kernel/test_lab_arm64_census.py (make test-arm64-census)."""

import shutil
from pathlib import Path

import init_leaves
import pytest

from ipclab import EXIT_FAILED, Error
from ipclab.cli import main
from ipclab.lab import census, vm
from ipclab.lab.arm64 import census as ac, guest as arm64_guest

DRIVER = census.driver()
NAMES = list(DRIVER.WORKLOADS)
SCRIPTS = {"hackbench-pipe", "make-jobserver", "mqueue-selftests", "shell-pipeline",
           "sleeping-reader", "self-loop"}
COMPILED = {"pipe1", "io-uring-full-pipe"}


@pytest.fixture
def built(tmp_path, monkeypatch):
    """Cross-builds and the conformance tests faked: every compiled workload builds but
    io-uring-full-pipe, whose library the toolchain lacks."""
    conf = tmp_path / "conformance-arm64"
    conf.mkdir()
    monkeypatch.setattr(ac.conformance, "binaries", lambda: conf)
    monkeypatch.setattr(ac, "cross_build", lambda name, bindir: (
        "needs liburing for arm64" if name == "io-uring-full-pipe" else None))
    return tmp_path / "bin"


def test_the_driver_module_is_the_one_list():
    assert NAMES == census.workload_names()
    assert SCRIPTS | COMPILED | {"pipe-context", "pipe_poll_race"} <= set(NAMES)
    assert set(DRIVER.SITES) == set(census.SITES)


def test_each_workload_runs_as_its_static_program_or_is_refused_with_why(built):
    p = ac.plan(DRIVER, NAMES, built, named=False)
    assert p.names == NAMES
    # The engine's invocations keep their arguments, on the initramfs's engine.
    assert p.argv["token-ring"] == [arm64_guest.GUEST_ENGINE, *DRIVER.WORKLOADS["token-ring"][1:]]
    assert p.argv["pipe_poll_race"] == ["/conformance/pipe_poll_race"]
    assert p.argv["pipe1"] == ["/census/pipe1"]
    assert p.files["/census/pipe1"] == built / "pipe1"
    assert p.files["/conformance/mq_poll_race"].name == "mq_poll_race"
    assert set(p.refused) == SCRIPTS | {"io-uring-full-pipe"}
    assert set(p.argv) == set(NAMES) - set(p.refused)
    assert "no shell" in p.refused["shell-pipeline"]
    assert "no Python" in p.refused["self-loop"]
    assert "liburing" in p.refused["io-uring-full-pipe"]


@pytest.mark.parametrize("name, reason", [("make-jobserver", "a sh script"),
                                          ("sleeping-reader", "a python3 script"),
                                          ("io-uring-full-pipe", "liburing")])
def test_naming_a_workload_the_guest_cannot_run_is_refused(built, name, reason):
    with pytest.raises(Error, match=f"{name} does not run on arm64: .*{reason}") as e:
        ac.plan(DRIVER, ["pipe-context", name], built, named=True)
    assert e.value.code == 2
    assert ac.plan(DRIVER, ["pipe-context", "pipe1"], built, named=True).refused == {}


def test_the_job_resets_runs_and_copies_out_per_workload(built):
    p = ac.plan(DRIVER, ["pipe-context", "self-loop", "pipe1"], built, named=False)
    lines = [line.split("\t") for line in
             ac.job_text(DRIVER, p, vm.DETERMINISTIC, "madvise").splitlines()]
    assert ["timeout", str(DRIVER.TIMEOUT_S)] in lines
    assert ["write", "/proc/sys/kernel/randomize_va_space", "0"] in lines
    first = next(i for i, line in enumerate(lines) if line[1] in DRIVER.SITES.values())
    pipe, mq = DRIVER.SITES["pipe"], DRIVER.SITES["mqueue"]
    assert lines[first:] == [
        ["write", pipe, "0"], ["write", mq, "0"],
        ["run", "00-pipe-context", *p.argv["pipe-context"]],
        ["copy", pipe, "00-pipe-context.pipe"], ["copy", mq, "00-pipe-context.mqueue"],
        ["write", pipe, "0"], ["write", mq, "0"],
        ["run", "01-pipe1", "/census/pipe1"],
        ["copy", pipe, "01-pipe1.pipe"], ["copy", mq, "01-pipe1.mqueue"]]


def leave(shared: Path, step, status=None, out="", err="", timeout=None, counters=True):
    """What guest-init.c leaves of a workload's steps: a step's, and the counters it read."""
    init_leaves.leave(shared, step, status, out, err, timeout)
    if counters:
        (shared / f"{step}.pipe").write_text("read-wr 10 4\nwrite-rd 7 7\n")
        (shared / f"{step}.mqueue").write_text("send-poll 3 0\nrecv-poll 0 0\n")


def test_the_rows_are_the_driver_s_read_back_from_the_guest(built, tmp_path):
    names = ["pipe-context", "self-loop", "token-ring", "pipe1", "mq-latency", "fastpipe-write-read"]
    p = ac.plan(DRIVER, names, built, named=False)
    leave(tmp_path, "00-pipe-context", 0)
    leave(tmp_path, "01-token-ring", 9, out="one\ntwo\n", err="killed\n")   # SIGKILL
    leave(tmp_path, "02-pipe1", 9, timeout=1800)
    leave(tmp_path, "03-mq-latency", 3 << 8, counters=False)   # no counters in this kernel
    # 04-fastpipe-write-read: the guest stopped before it
    rows = ac.rows(DRIVER, p, tmp_path, 1)
    by = {r["workload"]: r for r in rows}
    assert [r["workload"] for r in rows] == ["pipe-context", "self-loop", "token-ring", "pipe1"]
    assert by["pipe-context"] == {"workload": "pipe-context", "rc": 0, "nproc": 1,
                                  "pipe": {"read-wr": {"calls": 10, "sleepers": 4},
                                           "write-rd": {"calls": 7, "sleepers": 7}},
                                  "mqueue": {"send-poll": {"calls": 3, "sleepers": 0},
                                             "recv-poll": {"calls": 0, "sleepers": 0}}}
    assert by["self-loop"]["skipped"] == "not on arm64" and "Python" in by["self-loop"]["reason"]
    assert by["token-ring"]["rc"] == -9 and by["token-ring"]["output_tail"] == ["one", "two",
                                                                                "killed"]
    assert by["pipe1"]["rc"] == "timeout"
    assert census.failures(names, rows) == (["token-ring", "pipe1"],
                                            ["mq-latency", "fastpipe-write-read"])
    table = census.table(rows).splitlines()
    cells = dict(zip(table[0].split(), table[1].split()))
    assert cells["workload"] == "pipe-context" and cells["read-wr"] == "4/10"
    assert cells["write-rd"] == "7/7" and cells["recv-poll"] == "-"
    skipped = next(line for line in table if line.startswith("self-loop"))
    assert skipped.rstrip() == "self-loop (not on arm64)"


def test_a_missing_library_is_a_reason_and_a_broken_source_an_error(monkeypatch, tmp_path):
    runs = []

    def fake_run(argv, timeout, capture=False):
        runs.append(argv)
        return type("Done", (), {"rc": 2, "out": "", "err": err})()
    monkeypatch.setattr(ac.proc, "run", fake_run)
    err = "ld: cannot find -luring: No such file or directory\ncollect2: error"
    assert "needs liburing for arm64" in ac.cross_build("io-uring-full-pipe", tmp_path)
    assert runs[0][-1] == str(tmp_path / "io-uring-full-pipe")
    assert f"CC={arm64_guest.CC}" in runs[0] and "LDFLAGS=-static -s" in runs[0]
    err = "fatal error: liburing.h: No such file or directory"
    assert "needs liburing.h for arm64" in ac.cross_build("io-uring-full-pipe", tmp_path)
    err = "pipe1.c:3:1: error: expected ';' before '}' token"
    with pytest.raises(Error, match="cross-building pipe1 for arm64 failed") as e:
        ac.cross_build("pipe1", tmp_path)
    assert e.value.code == EXIT_FAILED


@pytest.mark.skipif(not shutil.which(arm64_guest.CC), reason="needs gcc-aarch64-linux-gnu")
def test_the_compiled_workload_cross_builds_static(tmp_path):
    assert ac.cross_build("pipe1", tmp_path) is None
    head = (tmp_path / "pipe1").read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183  # AArch64


def test_the_initramfs_carries_the_programs_after_the_init_s(built, tmp_path, monkeypatch):
    base = tmp_path / "base.cpio"
    base.write_bytes(arm64_guest.cpio_archive([("init", 0o100755, b"INIT")]))
    monkeypatch.setattr(ac.guest, "initramfs", lambda: base)
    built.mkdir()
    (built / "pipe1").write_bytes(b"PIPE1")
    (ac.conformance.binaries() / "pipe_poll_race").write_bytes(b"RACE")
    p = ac.plan(DRIVER, ["pipe1", "pipe_poll_race"], built, named=False)
    data = ac.initrd(p, tmp_path).read_bytes()
    assert data.startswith(base.read_bytes())
    rest = data[len(base.read_bytes()):]
    for member in (b"census\0", b"census/pipe1\0", b"conformance/pipe_poll_race\0", b"PIPE1",
                   b"RACE"):
        assert member in rest


def test_interpreter_reads_the_hash_bang(tmp_path):
    (tmp_path / "a").write_text("#!/bin/sh\necho\n")
    (tmp_path / "b").write_text("#!/usr/bin/env python3\n")
    (tmp_path / "c").write_bytes(b"\x7fELF")
    assert [ac.interpreter(tmp_path / n) for n in "abc"] == ["sh", "python3", None]
    assert ac.interpreter(tmp_path / "nope") is None


def test_cli_refuses_a_script_on_arm64_before_building(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path))
    monkeypatch.setattr(census.kernel, "obtain", lambda *a, **k: pytest.fail("built"))
    assert main(["census", "mainline", "--arch", "arm64", "--workload", "shell-pipeline"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "shell-pipeline does not run on arm64" in err


def test_dry_run_boots_the_arm64_counters_kernel_with_the_init_s_job(capsys, tmp_path,
                                                                     monkeypatch):
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path))
    assert main(["census", "mainline", "--arch", "arm64", "--deterministic",
                 "--workload", "pipe-context", "--dry-run"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert any("would run: patch" in l and "lab-wakeup-counters.patch" in l for l in err)
    assert any("ARCH=arm64" in l and "Image" in l for l in err)
    qemu = next(l for l in err if "would run: qemu-system-aarch64" in l)
    assert "-smp 1" in qemu and "icount" in qemu and "initramfs-census.cpio" in qemu


def test_the_record_names_the_arch():
    b = vm.Boot("v", "7.3", "tcg", Path("/x"), True, 0, None, [], "", {}, {}, {})
    meta = {"variant": "mainline+wakeup-counters", "key": "k", "release": "7.3",
            "arch": "arm64"}
    assert census.record([], meta, b, vm.DETERMINISTIC, 1)["arch"] == "arm64"
    assert census.record([], {**meta, "arch": None} | {"arch": "x86_64"}, b, vm.DETERMINISTIC,
                         1)["arch"] == "x86_64"
    del meta["arch"]
    assert census.record([], meta, b, vm.DETERMINISTIC, 1)["arch"] == "x86_64"
