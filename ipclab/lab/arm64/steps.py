# SPDX-License-Identifier: MIT
"""The arm64 init's job and what its steps leave: the job file (scripts/guest-init.c reads
it), each step's exit status and output read back, and the debug variant's checks.

The guest has no Python, so what scripts/guest-run.py does in an x86 guest is steps of the
job: the guest set up (THP, a memory cgroup, no address randomization under icount), and
for fault injection and kmemleak the facilities armed, the runs marked, then disarmed and
scanned (`write`, `make-it-fail`, `copy`). The host reads back what they left into the
boot's status, under the names guest-run.py gives them, so that faults.boot_row and
faults.*_verdict judge an arm64 boot as they judge an x86 one.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ipclab import EXIT_FAILED, Error, engine

from .. import vm

# What the profile's runs must not inherit: the engine would write its marks' file over 9p
# inside the profile's window (profile.marked_cell drops it on x86 too).
NOT_MARKED_ENV = ("IPCBENCH_MARK",)


def job_text(env: dict, thp: str, clock: vm.Clock, steps: list[tuple[str, list[str]]],
             step_timeout: int = 0, marked: list[tuple[str, list[str]]] = (),
             before: list[list[str]] = (), after: list[list[str]] = ()) -> str:
    """The init's job (scripts/guest-init.c): the guest set up as guest-run.py sets up an x86
    guest (THP, a memory cgroup, no address randomization under icount), then the runs, each
    under a watchdog of step_timeout seconds when given, then the `marked` runs of a profile
    (profile_steps) without NOT_MARKED_ENV; `before` and `after` are more steps around the
    runs (before_runs and after_runs: fault injection armed, kmemleak scanned)."""
    lines = setup_lines(env, thp, clock, step_timeout, before)
    lines += [["run", name, *argv] for name, argv in steps]
    if marked:
        lines += [["unset", name] for name in NOT_MARKED_ENV if name in env]
        lines += [["marked", name, *argv] for name, argv in marked]
    return render(lines + list(after))


def setup_lines(env: dict, thp: str, clock: vm.Clock, step_timeout: int = 0,
                before: list[list[str]] = ()) -> list[list[str]]:
    """job_text's steps before the runs, for a job that has more than runs (the census)."""
    lines = [["write", "/sys/kernel/mm/transparent_hugepage/enabled", thp],
             ["write", "/sys/fs/cgroup/cgroup.subtree_control", "+memory"],
             ["mkdir", "/sys/fs/cgroup/ipclab"],
             ["write", "/sys/fs/cgroup/ipclab/cgroup.procs", "0"]]
    if clock.deterministic:
        lines.append(["write", "/proc/sys/kernel/randomize_va_space", "0"])
    lines += [["env", f"{k}={v}"] for k, v in env.items()]
    lines += before
    if step_timeout:
        lines.append(["timeout", str(step_timeout)])
    return lines


def render(lines: list[list[str]]) -> str:
    """The job file: a step a line, its fields separated by tabs; Error for a field that
    would split a step."""
    for line in lines:
        if any("\t" in f or "\n" in f for f in line):
            raise Error(f"a guest job step has a tab or newline: {line!r}", EXIT_FAILED)
    return "".join("\t".join(line) + "\n" for line in lines)


def read_left(path: Path) -> str | None:
    """A file the guest's init left in the shared directory; None when it left none."""
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def step_output(shared: Path, name: str) -> str:
    """A step's standard output then its standard error, as the init left them ('' for
    what it left none of)."""
    return (read_left(shared / f"{name}.out") or "") + (read_left(shared / f"{name}.err") or "")


def read_step(shared: Path, name: str, argv: list[str]) -> engine.CellRun:
    """What one engine invocation of the job gave, from what the init left of its step
    (NAME.rc, a wait status; NAME.out; NAME.err)."""
    try:
        status = int((shared / f"{name}.rc").read_text())
    except (OSError, ValueError):
        return engine.CellRun("failed", error="the guest did not run it (it stopped "
                              "first)", argv=argv)
    if status < 0 or not os.WIFEXITED(status):
        sig = os.WTERMSIG(status) if status >= 0 else None
        return engine.CellRun("failed", error=f"killed by signal {sig}" if sig else
                              "could not be started in the guest", rc=-1, argv=argv)
    try:
        out = (shared / f"{name}.out").read_text(errors="replace")
        err = (shared / f"{name}.err").read_text(errors="replace")
    except OSError as e:
        return engine.CellRun("failed", error=f"the guest left no output of it: {e}",
                              rc=-1, argv=argv)
    return engine.outcome(argv, os.WEXITSTATUS(status), out, err)


# --------------------------------------------------------------------------- debug checks


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
            left, times = read_left(shared / left_name(kind)), int(knobs.get("times", -1))
            with contextlib.suppress(ValueError):
                if times > 0 and left is not None:
                    injected[kind] = times - int(left)
        if injected:
            out["faults_injected"] = sum(injected.values())
            out["faults_injected_by"] = injected
        out["fault_messages"] = (read_left(shared / "dmesg.txt") or "").count(FAULT_LINE)
    for line in (read_left(shared / LOCKDEP_STATS) or "").splitlines():
        if line.strip().startswith("debug_locks:"):
            with contextlib.suppress(ValueError):
                out["debug_locks"] = int(line.split(":")[1])
    return out
