# SPDX-License-Identifier: MIT
"""Kernel lab logic that needs no kernel build and no VM, on the boot's side: console
scanning, merging boots, the command line down to the guest's job, fault-run rows, the arm64
job, and the statuses of `vm run` and `ab` (tests/lab/test_lab_unit.py has the kernel's)."""

import json
from pathlib import Path

import pytest

from ipclab import Error, results
from ipclab.cli import main
from ipclab.lab import ab, faults, kernel, vm


def test_scan_flags_splats_not_ordinary_boot_lines():
    log = "\n".join([
        "[    0.000000] Linux version 6.12.117",
        "[    1.000000] WARNING: CPU: 1 PID: 7 at fs/pipe.c:100 pipe_write+0x1/0x2",
        "[    1.1] BUG: kernel NULL pointer dereference, address: 0000000000000008",
        "[    2.0] ======================================================",
        "[    2.1] WARNING: possible circular locking dependency detected",
        "[    3.0] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)",
        "[    4.0] virtme-ng-init: mount /dev/mqueue",
    ])
    bad = vm.scan(log)
    assert len(bad) == 4
    assert not vm.scan("[ 0.1] Booting paravirtualized kernel on bare hardware\n")
    # The debug variant's boot banner is not a lockdep report.
    assert not vm.scan("[    0.276495] rcu: \tRCU lockdep checking is enabled.\n")
    # Nor is a frame of a stack trace that fault injection prints on purpose...
    assert not vm.scan("[   25.966525]  ? seqcount_lockdep_reader_access.constprop.0+0x46/0x54\n")
    # ...but lockdep saying it gave up is.
    assert vm.scan("[    9.0] INFO: lockdep is turned off.\n")


def test_merge_concatenates_samples_across_boots():
    def res(n, status="ok"):
        return {"schema": "ipclab-results/1", "suite": "s", "mode": "quick",
                "meta": {"variant": "base", "accel": "tcg", "lab": {"ok": status == "ok"}},
                "cells": [{"key": "c1", "workload": "w", "args": [], "status": status,
                           "samples": [{"sample": i} for i in range(n)], "error": None}],
                "complete": True}
    m = results.merge_boots([res(3), res(2), res(4, "failed")], "A:base")
    (cell,) = m["cells"]
    assert len(cell["samples"]) == 5 and cell["status"] == "ok" and cell["boots_ok"] == 2
    assert [smp["lab_boot"] for smp in cell["samples"]] == [1, 1, 1, 2, 2]
    assert m["meta"]["boots"] == 3 and m["meta"]["accel"] == "tcg"
    # ipclab.results insists on string errors; the merged file must load there.
    assert cell["error"] == "" and all(isinstance(e, str) for e in cell["boot_errors"])


def parse(argv):
    """argv as ipclab.cli.main parses it: cut at `--`, the tail in engine_args."""
    from ipclab.cli.parser import build_parser
    tail = None
    if "--" in argv:
        i = argv.index("--")
        argv, tail = argv[:i], argv[i + 1:]
    a = build_parser().parse_args(argv)
    if tail is not None:
        a.engine_args = tail
    return a


def test_vm_run_argument_forms(capsys):
    a = parse(["vm", "run", "lts", "seed-exclusive-waits", "--thp", "always"])
    assert a.suite == "seed-exclusive-waits" and a.thp == "always" and a.engine_args is None
    a = parse(["vm", "run", "--timeout", "60", "base", "--", "uname", "-r", "--x"])
    assert a.engine_args == ["uname", "-r", "--x"] and a.suite is None and a.timeout == 60
    a = parse(["vm", "run", "lts", "--", "true"])
    assert a.engine_args == ["true"]
    # Options anywhere, also between VARIANT and SUITE.
    a = parse(["vm", "run", "lts", "--full", "seed-exclusive-waits", "--reps", "3"])
    assert a.variant == "lts" and a.suite == "seed-exclusive-waits" and a.full and a.reps == 3
    # Misuse is one line and exit 2, before anything is built or booted.
    for argv in (["vm", "run", "lts"], ["vm", "run", "lts", "--"],
                 ["vm", "run", "lts", "icount-check", "--", "ls"],
                 ["vm", "run", "lts", "--", "true", "--dry-run"]):
        assert main(argv) == 2, argv
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ipclab: error: nothing to run: give a SUITE, -- CMD or --conformance",
                   "ipclab: error: nothing after --",
                   "ipclab: error: give a SUITE or -- CMD, not both",
                   "ipclab: error: --dry-run after -- would go to the command and the guest "
                   "would boot; put it before --"]


def test_bad_input_is_one_line_and_exit_2(capsys):
    assert main(["kernel", "build", "no-such-variant"]) == 2
    assert main(["vm", "run", "lts", "--fail-page-alloc", "x", "--", "true"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("ipclab: error:") for line in err)


def test_the_variant_base_is_refused_with_the_lts_variants_name(capsys):
    # `base` names a kernel base (--base); the unpatched LTS kernel is the variant `lts`.
    assert main(["kernel", "build", "base"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown variant 'base' (the unpatched LTS kernel is `lts`)" in err[0]


def test_profile_without_a_suite_is_a_usage_error(capsys):
    assert main(["vm", "run", "lts", "--profile", "--", "true"]) == 2
    assert "--profile" in capsys.readouterr().err


def test_fault_injection_names_each_facility():
    assert vm.fault_injection(None, None) is None
    assert vm.fault_injection("10", None) == {
        "fail_page_alloc": {"probability": 10, "interval": 1, "times": -1, "space": 0,
                            "tasks": "command"}}
    both = vm.fault_injection("5,1,-1,1M", "3,2", "workers")
    assert set(both) == {"fail_page_alloc", "failslab"}
    assert both["failslab"] == {"probability": 3, "interval": 2, "times": -1, "space": 0,
                                "tasks": "workers"}
    with pytest.raises(Error, match="--failslab 101"):
        vm.fault_injection(None, "101")
    with pytest.raises(Error, match="--fault-tasks"):
        vm.fault_injection("10", None, "everyone")


def test_parse_faults():
    assert vm.parse_faults("10,2,5") == {"probability": 10, "interval": 2, "times": 5, "space": 0}
    assert vm.parse_faults("100,1,10,8M")["space"] == 8 << 20
    with pytest.raises(Error):
        vm.parse_faults("200")


def test_failed_boot_fails_its_cells_with_console_tail(tmp_path):
    res = {"schema": "ipclab-results/1", "suite": "s", "meta": {},
           "cells": [{"key": "a", "status": "ok", "samples": [{}], "error": ""},
                     {"key": "b", "status": "pending", "samples": [], "error": ""}],
           "complete": False}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(res))
    written = path.read_text()
    boot = vm.Boot("base", "6.12.117", "tcg", tmp_path, False, None,
                   "guest killed by the watchdog after 60 s (hang or timeout)", [],
                   "[ 12.0] rcu: INFO: rcu_preempt self-detected stall", {}, {})
    meta = {"variant": "base", "release": "6.12.117", "patches": []}
    out = ab.guest_results(path, boot, meta)
    assert [c["status"] for c in out["cells"]] == ["failed", "failed"]
    assert all("watchdog" in c["error"] and "rcu_preempt" in c["error"] for c in out["cells"])
    assert out["meta"]["accel"] == "tcg" and out["meta"]["emulated"] is True
    assert out["meta"]["lab"]["console_tail"].endswith("stall")
    # The guest's file stays as the guest wrote it: the tagged results are written once,
    # where the lab keeps them (run_suite_boot's `out`).
    assert path.read_text() == written


def dry_run_lines(capsys, *argv):
    assert main(list(argv) + ["--dry-run"]) == 0
    return capsys.readouterr().err.splitlines()


def test_full_suite_and_deterministic_clock_reach_the_guest(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    lines = dry_run_lines(capsys, "vm", "run", "lts", "seed-skip-wakeups", "--full",
                          "--deterministic")
    vng = next(l for l in lines if "would run:" in l and "vng" in l)
    job = json.loads(next(l for l in lines if "guest job:" in l).split("guest job: ", 1)[1])
    assert "--full" in job["argv"] and "--quick" not in job["argv"]
    assert "--qemu-opts=-icount shift=0,sleep=off" in vng and "--disable-kvm" in vng
    assert "--cpus 1 " in vng
    assert job["env"]["IPCBENCH_CLOCK"] == "icount shift=0" and job["deterministic"]
    assert job["argv"][job["argv"].index("--reps") + 1] == "9"
    # Guest time under icount is not host time: only the host's watchdog bounds the boot.
    assert job["timeout"] is None
    # The timed mode is unchanged: the quick suite, no icount, two CPUs.
    lines = dry_run_lines(capsys, "vm", "run", "lts", "seed-skip-wakeups")
    vng = next(l for l in lines if "would run:" in l and "vng" in l)
    job = json.loads(next(l for l in lines if "guest job:" in l).split("guest job: ", 1)[1])
    assert "--quick" in job["argv"] and "icount" not in vng and "--cpus 2 " in vng
    assert job["env"]["IPCBENCH_CLOCK"] == "real" and "--profile" not in job["argv"]
    assert job["timeout"] == 900 - 120
    lines = dry_run_lines(capsys, "vm", "run", "lts", "icount-check", "--deterministic",
                          "--profile")
    job = json.loads(next(l for l in lines if "guest job:" in l).split("guest job: ", 1)[1])
    vng = next(l for l in lines if "would run:" in l and "vng" in l)
    assert job["argv"][job["argv"].index("--profile-by") + 1] == "marker"
    assert "-plugin file=insncount.so" in vng


@pytest.mark.parametrize("accel, deterministic, keeps_tsc", [
    ("tcg", False, True), ("kvm", False, False), ("tcg", True, False)])
def test_a_timed_tcg_guest_keeps_its_tsc(capsys, tmp_path, monkeypatch, accel, deterministic,
                                         keeps_tsc):
    # Without tsc=reliable the clocksource watchdog of a starved timed-TCG guest moves it
    # to the HPET mid-run; KVM and icount guests keep their kernel's own choice.
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(vm, "accel_for", lambda *a, **k: accel)
    lines = dry_run_lines(capsys, "vm", "run", "lts", "icount-check",
                          *(["--deterministic"] if deterministic else []))
    vng = next(l for l in lines if "would run:" in l and "vng" in l)
    assert ("--append tsc=reliable" in vng) == keeps_tsc


def test_cell_reaches_every_boot_and_a_cell_no_suite_has_is_exit_2(capsys, tmp_path,
                                                                     monkeypatch):
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    lines = dry_run_lines(capsys, "ab", "lts", "lts", "--suite", "seed-skip-wakeups",
                          "--deterministic", "--cell", "pipe-throughput/copies=1")
    jobs = [json.loads(l.split("guest job: ", 1)[1]) for l in lines if "guest job:" in l]
    assert len(jobs) == 2
    assert all(j["argv"][j["argv"].index("--cell") + 1] == "pipe-throughput/copies=1"
               for j in jobs)
    assert main(["ab", "lts", "lts", "--suite", "icount-check", "--cell", "nope"]) == 2
    assert main(["vm", "run", "lts", "--cell", "pipe", "--", "true"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("ipclab: error: --cell nope: no cell has that key")
    assert "--cell" in err[1] and len(err) == 2
    assert not (tmp_path / "cache").exists()


def test_unknown_suite_fails_on_the_host_before_any_build(capsys, tmp_path, monkeypatch):
    # "Before any build": the untouched cache shows it, which a time bound under a load would not
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    assert main(["ab", "lts", "lts", "--suite", "nosuch"]) == 2
    assert main(["vm", "run", "lts", "nosuch", "--deterministic"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("unknown suite or workload 'nosuch'" in l for l in err)
    assert not (tmp_path / "cache").exists()


def test_clock_record_names_mode_shift_cpus_and_qemu():
    rec = vm.DETERMINISTIC.record("tcg", 1)
    assert rec["mode"] == "deterministic" and rec["icount"]["shift"] == 0 and rec["cpus"] == 1
    assert "qemu" in rec
    assert vm.TIMED.record("kvm", 2)["mode"] == "timed" and vm.TIMED.qemu_opts() == []


def test_the_vm_package_keeps_mains_boot_options(tmp_path, monkeypatch):
    """What the lab's boots gained on main, where the vm package keeps them: timed TCG with a
    thread per vCPU and the record saying whether vCPUs ran at once; 9p's root only for 9p;
    arm64's own system-call symbols for the plugin's markers."""
    from ipclab import proc
    assert vm.TIMED.qemu_opts("tcg") == ["-accel", "tcg,thread=multi"]
    assert vm.DETERMINISTIC.qemu_opts("tcg")[0] == "-icount"
    assert vm.TIMED.record("kvm", 2)["vcpus_concurrent"]
    assert not vm.DETERMINISTIC.record("tcg", 2)["vcpus_concurrent"]
    ninep = vm.vng_argv(Path("bzImage"), "kvm", None, "true")
    virtiofs = vm.vng_argv(Path("bzImage"), "kvm", None, "true", fs="virtiofs")
    assert "--force-9p" in ninep and "root=/dev/root" in ninep
    assert "--force-9p" not in virtiofs and "root=/dev/root" not in virtiofs
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path))
    assert vm.host_fs({"key": "k1", "variant": "v"}) == "9p"    # no config: 9p
    with proc.dry_run():
        opts = vm.insn_plugin_opts({"key": "k1", "arch": "arm64"}, tmp_path / "counts")
    assert "__arm64_sys_swapon" in opts[1] and "__x64_sys_" not in opts[1]


def test_suite_thp_reaches_the_guest_setup():
    assert vm.suite_thp("seed-fast-pipes") == "madvise"
    assert vm.suite_thp("seed-mqueue-cache") is None and vm.suite_thp("nosuch") is None


def test_guest_killed_before_its_job_still_leaves_a_record(tmp_path, monkeypatch, capsys):
    # The watchdog can fire before guest-run.py starts: no job.out, but a record and exit 1.
    shared = tmp_path / "shared"
    shared.mkdir()
    boot = vm.Boot("base", "6.12.117", "tcg", shared, False, None,
                   "guest killed by the watchdog after 45 s (hang or timeout)", [], "", {}, {})
    monkeypatch.setattr(kernel, "build", lambda *a, **k: {"key": "k", "variant": "base",
                                                          "release": "6.12.117", "patches": []})
    monkeypatch.setattr(vm, "accel_for", lambda *a: "tcg")
    monkeypatch.setattr(vm, "boot", lambda *a, **k: boot)
    rec = tmp_path / "record.json"
    assert main(["vm", "run", "lts", "--record", str(rec), "--", "sleep", "3600"]) == 1
    assert "watchdog" in json.loads(rec.read_text())["reason"]


# A clean fault-run boot's KTAP as the guest printed it (seeds+debug+counters, 2026-11-24).
CLEAN_KTAP = """TAP version 13
1..4
# pipe_nonblock_eagain
ok 1 pipe_nonblock_eagain
# pipe_epipe_sigpipe
ok 2 pipe_epipe_sigpipe
# pipe_failed_write_allocates_nothing
# EAGAIN (O_NONBLOCK, full pipe): 11 pages allocated system-wide during 4096 writes
# EAGAIN (O_NONBLOCK, full pipe): memory.stat kernel +0 bytes
# EPIPE (no reader, full pipe): 12 pages allocated system-wide during 4096 writes
# EPIPE (no reader, full pipe): memory.stat kernel +0 bytes
# EPIPE (no reader, empty pipe): 11 pages allocated system-wide during 4096 writes
# EPIPE (no reader, empty pipe): memory.stat kernel +4096 bytes
ok 3 pipe_failed_write_allocates_nothing
# stress_pipe_integrity
# seed 312732336977 (CT_SEED=312732336977 reproduces)
# 8 writers x 4 readers, 10.00 s, records fixed, pipe 65536 bytes
# records sent 56417, received 56417, bytes 28885504; ENOMEM retries 0, short writes \
continued 0, writers capped 0
ok 4 stress_pipe_integrity
# Totals: pass:4 fail:0 xfail:0 xpass:0 skip:0 error:0
"""


def fault_record(tmp_path, **kw):
    (tmp_path / "dmesg.txt").write_text(f"[0.0] {faults.LOCKDEP_BANNER}: Copyright\n")
    (tmp_path / "kmemleak.txt").write_text("")
    return {"variant": "seeds+debug+counters", "ok": True, "bad_lines": [],
            "shared": str(tmp_path), "timings": {"boot_total_s": 102.3}, "guest": {}, **kw}


def test_fault_run_row_of_a_clean_boot(tmp_path):
    clean = faults.PLANS[1]
    row = faults.boot_row("seeds", clean, fault_record(tmp_path), CLEAN_KTAP)
    assert row["ok"], row["problems"]
    assert row["passed"] == list(clean.tests) and row["records_lost"] == 0
    assert row["records_sent"] == 56417 and len(row["memstat"]) == 3
    assert (row["kmemleak"], row["lockdep"]) == ("clean", "clean")
    # Each way a boot can go wrong is a problem of its own.
    lost = faults.boot_row("seeds", clean, fault_record(tmp_path),
                           CLEAN_KTAP.replace("received 56417", "received 56416"))
    assert lost["problems"] == ["stress_pipe_integrity: 1 records lost"]
    skipped = CLEAN_KTAP.replace("ok 3 pipe_failed_write_allocates_nothing",
                                 "ok 3 pipe_failed_write_allocates_nothing # SKIP no memcg")
    assert "skipped: pipe_failed_write_allocates_nothing" in faults.boot_row(
        "seeds", clean, fault_record(tmp_path), skipped)["problems"]
    cut = CLEAN_KTAP.split("# stress_pipe_integrity")[0]
    assert faults.boot_row("seeds", clean, fault_record(tmp_path), cut)["problems"] == [
        "missing: stress_pipe_integrity"]
    leak = fault_record(tmp_path, ok=False, reason="kernel log: kmemleak: 1 new suspected",
                        bad_lines=["kmemleak: 1 new suspected memory leaks"])
    row = faults.boot_row("seeds", clean, leak, CLEAN_KTAP)
    assert row["kmemleak"].startswith("leak: 1 new") and row["lockdep"] == "clean"
    # A kernel without lockdep's banner had no lockdep watching: not "clean".
    rec = fault_record(tmp_path)
    (tmp_path / "dmesg.txt").write_text("no banner\n")
    assert faults.lockdep_verdict(rec) == "off"
    assert faults.lockdep_verdict({"bad_lines": [], "shared": str(tmp_path / "none")}) == "off"
    # What the guest found at the end outranks the banner, which a busy log wraps past.
    assert faults.lockdep_verdict({**rec, "guest": {"debug_locks": 1}}) == "clean"
    (tmp_path / "dmesg.txt").write_text(f"{faults.LOCKDEP_BANNER}\n")
    assert faults.lockdep_verdict({**rec, "guest": {"debug_locks": 0}}) == "off"


def test_scan_reads_each_bad_line_once():
    line = "[   9.0] WARNING: CPU: 0 PID: 1 at fs/pipe.c:1 pipe_write+0x1/0x2"
    assert vm.scan(f"{line}\n[   9.1] ok\n{line}\n") == [line]


def test_fault_run_row_of_a_fault_boot_wants_faults_and_their_errors(tmp_path):
    plan = faults.PLANS[0]
    assert plan.faults["fail_page_alloc"]["tasks"] == "workers"
    assert plan.env(5)["CT_STRESS_ARGS"] == "--tolerate-enomem --duration 5"
    assert "--tolerate-enomem" not in faults.PLANS[1].env(5)["CT_STRESS_ARGS"]
    ktap = "\n".join(["1..2", "# stress_pipe_integrity",
                      "# records sent 10, received 10, bytes 9; ENOMEM retries 3, short writes continued 0, x",
                      "ok 1 stress_pipe_integrity", "# stress_pipe_splice_integrity",
                      "# records sent 5, received 5, bytes 9; ENOMEM retries 0, short writes continued 2, x",
                      "ok 2 stress_pipe_splice_integrity"])
    guest = {"faults_armed": True, "faults_injected": 7}
    row = faults.boot_row("seeds", plan, fault_record(tmp_path, guest=guest), ktap)
    assert row["ok"] and row["enomem_retries"] == 3 and row["records_sent"] == 15
    # Only short writes (every failure after a write's first page) is as good as ENOMEM.
    only_short = ktap.replace("ENOMEM retries 3", "ENOMEM retries 0")
    row = faults.boot_row("seeds", plan, fault_record(tmp_path, guest=guest), only_short)
    assert row["ok"] and row["enomem_retries"] == 0 and row["short_writes"] == 2
    neither = only_short.replace("short writes continued 2", "short writes continued 0")
    row = faults.boot_row("seeds", plan, fault_record(tmp_path, guest=guest), neither)
    assert row["problems"] == ["faults injected, but no test saw ENOMEM or a short write"]
    guest["faults_injected"] = 0
    row = faults.boot_row("seeds", plan, fault_record(tmp_path, guest=guest), ktap)
    assert row["problems"] == ["no fault was injected"]


def test_arm64_job_replays_the_plan_sample_for_sample(tmp_path):
    """An arm64 suite boot: the init's job is the plan's engine invocations in order; what
    the guest leaves (exit status, stdout) reads back as the samples `ipclab run` would
    have written, each in its cell; a run the guest never made fails its cell."""
    from ipclab import runner
    from ipclab.lab.arm64 import guest, suite
    from ipclab.lab.arm64 import steps as init_steps
    job = vm.SuiteJob("icount-check", reps=2, warmups=1)
    res, cells, steps = suite.plan(job, order_seed=7)
    assert len(steps) == 3 * len(cells) and any(c.workload == "mq-latency" for c in cells)
    assert all(argv[0] == guest.GUEST_ENGINE and "--json" in argv for _, argv in steps)
    text = init_steps.job_text({"IPCBENCH_CLOCK": "icount shift=0"}, "madvise", vm.DETERMINISTIC,
                               steps)
    assert "write\t/proc/sys/kernel/randomize_va_space\t0\n" in text
    assert text.count("\nrun\t") == len(steps)
    seen = {}
    for n, (name, argv) in enumerate(steps):
        if argv[1] == "mq-latency":
            continue        # the guest stopped before these
        seen[argv[1]] = seen.get(argv[1], 0) + 1
        (tmp_path / f"{name}.rc").write_text("0\n")     # a wait status: exit 0
        (tmp_path / f"{name}.err").write_text("")
        (tmp_path / f"{name}.out").write_text(json.dumps(
            {"workload": argv[1], "metrics": {"n": n}, "env": {"clock": "icount shift=0"}}) + "\n")
    side = runner.Side(res, cells, guest.GUEST_ENGINE, str(tmp_path / "r.json"))
    assert runner.execute([side], quiet=True, run=suite.replay(tmp_path, cells, steps)) == 0
    for cell, rc in zip(cells, res["cells"]):
        if cell.workload == "mq-latency":
            assert rc["status"] == "failed" and "did not run it" in rc["error"]
            continue
        assert rc["status"] == "ok" and len(rc["samples"]) == 3
        assert [s.get("warmup", False) for s in rc["samples"]] == [True, False, False]
        order = [s["metrics"]["n"] for s in rc["samples"]]
        assert order == sorted(order)       # in the plan's order
    assert results.load(str(tmp_path / "r.json"))["cells"][0]["samples"]


def test_arm64_initramfs_members_are_newc():
    from ipclab.lab.arm64 import guest
    entry = guest._cpio_entry(3, "init", 0o100755, b"abcde")
    assert entry.startswith(b"070701") and len(entry) % 4 == 0
    assert entry[110:115] == b"init\0" and b"abcde" in entry
    assert int(entry[6 + 6 * 8:6 + 7 * 8], 16) == 5      # filesize


def test_arm64_initramfs_is_built_once_when_both_sides_of_an_ab_ask(tmp_path, monkeypatch):
    import threading
    import time
    from ipclab.lab.arm64 import guest
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path))
    inside, most, built = [0], [0], []

    def cross_build(out, argv_tail):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.2)             # the other side's thread asks meanwhile
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(b"\x7fELF")
        built.append(out.name)
        inside[0] -= 1
        return out
    monkeypatch.setattr(guest, "_cross_build", cross_build)
    got, errors = [], []

    def side():
        try:
            got.append(guest.initramfs())
        except Exception as e:      # what a race raised: the test reports it
            errors.append(e)
    threads = [threading.Thread(target=side) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(got) == 2 and got[0] == got[1] and got[0].is_file()
    assert most[0] == 1 and len(built) == 2             # init and engine, once each
    assert not list(tmp_path.glob("tools/*.tmp*"))


# ---- the lab returns data, report/lab.py prints it -------------------------------------------


def _ab_run(failures=()):
    from ipclab import compare
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    base, new = results.load(fixtures / "base.json"), results.load(fixtures / "new.json")
    outcome = compare.compare_results(base, new)
    build = {"release": "7.3.4", "patches": []}
    return ab.ABRun({"A": "mainline", "B": "mainline-series"}, {"A": build, "B": build},
                    "seeds", 5, "kvm", vm.TIMED, Path("/nowhere"), {"A": base, "B": new},
                    outcome, compare.outcome_record(outcome), None, list(failures))


def test_ab_prints_the_comparison_it_was_handed():
    import io
    from ipclab.report import lab as labreport
    run = _ab_run()
    assert run.record["overall"]["verdict"] == "better"
    buf = io.StringIO()
    assert labreport.ab(run, buf) == 3          # the record's overall verdict: better
    text = buf.getvalue()
    assert text.startswith("ipclab ab mainline -> mainline-series: suite seeds, 5 boots each,"
                           " accel=kvm, timed clock\n  A: 7.3.4, no patches")
    assert "geometric mean of ratios" in text
    buf = io.StringIO()
    assert labreport.ab(run, buf, as_json=True) == 3
    assert json.loads(buf.getvalue()) == run.record
    # A failed boot is 1 whatever the verdict of the boots that were measured.
    assert labreport.ab(_ab_run(["A boot 2: guest killed"]), io.StringIO()) == 1
    assert labreport.ab(None) == 0          # a dry run


def test_vm_run_statuses_come_from_the_boot_and_the_cells(tmp_path):
    import io
    from ipclab.report import lab as labreport
    boot = vm.Boot("base", "6.12.117", "kvm", tmp_path, False, 3, "job exited 3", [], "", {},
                   {})
    buf = io.StringIO()
    assert labreport.vm_command(ab.VmRun(boot, "kvm", vm.TIMED, output="hello\n"), buf) == 3
    assert buf.getvalue() == "hello\n"
    boot.ok, boot.rc, boot.reason = True, 0, None
    res = {"meta": {"variant": "base", "build": {"release": "6.12.117"}},
           "cells": [{"key": "a", "status": "ok"}, {"key": "b", "status": "failed"}]}
    run = ab.VmRun(boot, "kvm", vm.TIMED, results=res, out=tmp_path / "r.json")
    buf = io.StringIO()
    assert run.failed_cells == ["b"] and labreport.vm_suite(run, buf) == 1
    assert buf.getvalue().startswith(f"results: {tmp_path / 'r.json'} (variant=base"
                                     " kernel=6.12.117")
    res["cells"].pop()
    assert labreport.vm_suite(run, io.StringIO()) == 0
