# SPDX-License-Identifier: MIT
"""Kernel lab, the debug variant's checks in an arm64 guest: fault injection and kmemleak
(`vm run VARIANT+debug --arch arm64 --conformance --fail-page-alloc ... --kmemleak`, and
scripts/fault-runs --arch arm64).

On x86, scripts/guest-run.py arms the fault-injection facilities, marks the command, scans
kmemleak and reads lockdep's state in the guest. The arm64 guest has no Python, so the same
is steps of the init's job (scripts/guest-init.c: `write`, `make-it-fail`, `copy`) before
and after the runs, and the host reads back what they left into the boot's status, under
the names guest-run.py gives them, so that faults.boot_row and faults.*_verdict judge an
arm64 boot as they judge an x86 one.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from . import arm64

DEBUGFS = "/sys/kernel/debug"
KMEMLEAK = "kmemleak.txt"           # where vm.boot looks for a scan, on both architectures
LOCKDEP_STATS = "lockdep_stats.txt"
# fail_page_alloc's space is counted in pages: the lab's arm64 configs have 4 KiB pages
# (kernel/config/arch/arm64.config; Debian's arm64 config, the production base, too).
PAGE_SIZE = 4096
FAULT_LINE = "FAULT_INJECTION: forcing a failure"


def left_name(kind: str) -> str:
    """The file the guest leaves with a facility's `times` after the runs."""
    return f"{kind}.times-left"


def _knobs(kind: str, faults: dict) -> dict:
    """A facility's debugfs knobs, as guest-run.py's arm_one sets them on x86."""
    times = int(faults.get("times", -1))
    knobs = {
        "task-filter": "Y",
        # Pipe and mqueue buffers are order-0 allocations that may sleep; the defaults
        # (min-order 1, ignore-gfp-wait Y) would never fail them.
        "ignore-gfp-wait": "Y" if faults.get("ignore_gfp_wait") else "N",
        "probability": faults.get("probability", 10),
        "interval": faults.get("interval", 1),
        "times": times,
        "space": faults.get("space", 0) // (PAGE_SIZE if kind == "fail_page_alloc" else 1),
        # A stack per failure only when they are few: an emulated console is slow.
        "verbose": faults.get("verbose", 2 if 0 < times <= 50 else 1),
    }
    if kind == "fail_page_alloc":
        knobs.update({"min-order": faults.get("min_order", 0), "ignore-gfp-highmem": "N"})
    return knobs


def before_runs(faults: dict | None) -> list[list[str]]:
    """The job's steps before the first run: each facility armed, and who is marked: every
    run (`make-it-fail`), or, for tasks "workers", nobody by the init and the tests told to
    mark their own workers (CT_MAKE_IT_FAIL=1, conformance/lib/stress.c)."""
    if not faults:
        return []
    lines = [["write", f"{DEBUGFS}/{kind}/{k}", str(v)]
             for kind, knobs in faults.items() for k, v in _knobs(kind, knobs).items()]
    if any(k.get("tasks", "command") == "command" for k in faults.values()):
        lines.append(["make-it-fail", "1"])
    else:
        lines.append(["env", "CT_MAKE_IT_FAIL=1"])
    return lines


def after_runs(faults: dict | None, kmemleak: bool) -> list[list[str]]:
    """The job's steps after the last run: what each facility has left of its `times`,
    then disarmed; kmemleak scanned twice (it reports only objects that stay unreferenced
    across scans) and its report kept; lockdep's state kept."""
    lines = [["make-it-fail", "0"]] if faults else []
    for kind in faults or {}:
        lines += [["copy", f"{DEBUGFS}/{kind}/times", left_name(kind)],
                  ["write", f"{DEBUGFS}/{kind}/probability", "0"],
                  ["write", f"{DEBUGFS}/{kind}/times", "0"]]
    if kmemleak:
        lines += [["write", f"{DEBUGFS}/kmemleak", "scan"]] * 2
        lines.append(["copy", f"{DEBUGFS}/kmemleak", KMEMLEAK])
    if faults or kmemleak:
        lines.append(["copy", "/proc/lockdep_stats", LOCKDEP_STATS])
    return lines


def read_back(shared: Path, faults: dict | None, status: dict) -> dict:
    """guest-run.py's fields of the guest's status, from what the job's steps left:
    faults_armed (every knob written), faults_injected and faults_injected_by (a bounded
    facility's `times` less what it left), fault_messages (the kernel log's count, for
    unbounded ones) and debug_locks (whether lockdep still watched at the end)."""
    out: dict = {}
    notes = status.get("notes") or []
    if faults:
        out["faults_armed"] = not any(n.startswith(f"{DEBUGFS}/{kind}/")
                                      for n in notes for kind in faults)
        injected = {}
        for kind, knobs in faults.items():
            left, times = arm64.read_left(shared / left_name(kind)), int(knobs.get("times", -1))
            with contextlib.suppress(ValueError):
                if times > 0 and left is not None:
                    injected[kind] = times - int(left)
        if injected:
            out["faults_injected"] = sum(injected.values())
            out["faults_injected_by"] = injected
        out["fault_messages"] = (arm64.read_left(shared / "dmesg.txt") or "").count(FAULT_LINE)
    for line in (arm64.read_left(shared / LOCKDEP_STATS) or "").splitlines():
        if line.strip().startswith("debug_locks:"):
            with contextlib.suppress(ValueError):
                out["debug_locks"] = int(line.split(":")[1])
    return out
