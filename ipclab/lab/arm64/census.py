# SPDX-License-Identifier: MIT
"""The census in the arm64 guest (`census VARIANT --arch arm64`).

kernel/tests/wakeup-sites is Python, and the arm64 guest has neither Python nor a shell, so
this module does the driver's part on both sides of one boot, as conformance.py does
run.sh's. The driver stays the one list of workloads and the one reader of the counters
(census hands its module in). Each workload's argv becomes the guest's: the engine's is the
initramfs's /ipcbench, a conformance test's the static one under /conformance, a compiled
workload of kernel/tests/workloads its static cross-build under /census. A script has no
interpreter in the guest: its row is marked "not on arm64" with the reason, and naming it
is refused (exit 2). So is a compiled workload whose library the arm64 toolchain lacks.

For each workload the init's job resets both counter files (`write`), runs it under the
driver's watchdog (`run`) and copies the counters to the shared directory (`copy`); the
host turns what the guest left into the driver's row, so the table and the record are the
x86 census's.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from pathlib import Path

from ipclab import EXIT_FAILED, Error, proc

from .. import variants, vm
from . import conformance, guest, steps

WORKLOADS_DIR = vm.CensusJob.WORKLOADS_DIR
CONFORMANCE_BIN = vm.ConformanceJob.DIR / "bin"
GUEST_DIR = "census"                # in the initramfs: /census/NAME
# What a cross-build's error says when the arm64 toolchain lacks a header or a library (not
# a fault of the workload's source, which then fails the census).
MISSING_DEP = re.compile(r"fatal error: ([\w./+-]+): No such file|cannot find -l([\w.+-]+)")
INTERPRETERS = {"sh": "shell", "bash": "shell", "python3": "Python", "python": "Python"}


@dataclasses.dataclass
class GuestWorkloads:
    """What the arm64 guest runs: each workload's argv there, or why it cannot run."""
    names: list[str]                                    # all, in the driver's order
    argv: dict[str, list[str]]                          # name -> argv in the guest
    refused: dict[str, str]                             # name -> reason
    files: dict[str, Path] = dataclasses.field(default_factory=dict)  # guest path -> host


def interpreter(path: Path) -> str | None:
    """The program a script's #! line names (`env X` gives X); None for no #! line."""
    try:
        with open(path, "rb") as f:
            first = f.readline(200).decode(errors="replace")
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if words and os.path.basename(words[0]) == "env":
        words = words[1:]
    return os.path.basename(words[0]) if words else None


def cross_build(name: str, bindir: Path) -> str | None:
    """kernel/tests/workloads' own Makefile builds NAME static for arm64 into bindir; None
    when built, the reason when the toolchain lacks what it needs; Error on another
    failure."""
    argv = ["make", "-s", "-C", str(WORKLOADS_DIR), f"CC={guest.CC}", "LDFLAGS=-static -s",
            f"BIN={bindir}", str(bindir / name)]
    if proc.would_run(argv):
        return None
    done = proc.run(argv, 600, capture=True)
    if done.rc == 0:
        return None
    text = (done.err or done.out).strip()
    missing = MISSING_DEP.search(text)
    if missing:
        what = missing.group(1) or f"lib{missing.group(2)}"
        return (f"needs {what} for arm64, which the arm64 toolchain here lacks "
                f"(make lab-deps installs no arm64 libraries)")
    raise Error(f"cross-building {name} for arm64 failed: {text[-300:]}", EXIT_FAILED)


def plan(driver, names: list[str], bindir: Path, named: bool) -> GuestWorkloads:
    """The guest's argv of each workload, building what it needs; Error (exit 2) when a
    workload that cannot run on arm64 was named (`named`), before any kernel is built."""
    p = GuestWorkloads(names, {}, {})
    tests = None
    for name in names:
        argv = driver.WORKLOADS[name]
        exe = Path(argv[0]).resolve()       # the driver's paths go through kernel/tests/../..
        if exe == Path(driver.ENGINE).resolve():
            p.argv[name] = [guest.GUEST_ENGINE, *argv[1:]]
        elif exe.parent == CONFORMANCE_BIN:
            tests = tests or conformance.binaries()
            there = f"/{conformance.GUEST_DIR}/{exe.name}"
            p.argv[name], p.files[there] = [there, *argv[1:]], tests / exe.name
        elif exe.parent == WORKLOADS_DIR / "bin":
            reason = cross_build(exe.name, bindir)
            if reason:
                p.refused[name] = reason
            else:
                there = f"/{GUEST_DIR}/{exe.name}"
                p.argv[name], p.files[there] = [there, *argv[1:]], bindir / exe.name
        else:
            prog = interpreter(exe)
            what = INTERPRETERS.get(prog or "", prog)
            p.refused[name] = (f"a {prog} script, and the arm64 guest has no {what} (its user "
                               f"space is the lab's static initramfs)" if prog else
                               "not a program the arm64 guest can run")
    if named and p.refused:
        name = next(iter(p.refused))
        raise Error(f"census --arch arm64: {name} does not run on arm64: {p.refused[name]}; "
                    f"leave it out (--workload)")
    return p


def step(i: int, name: str) -> str:
    """A workload's step name: its files in the shared directory are STEP.out, .pipe..."""
    return f"{i:02d}-{name}"


def job_text(driver, p: GuestWorkloads, clock: vm.Clock, thp: str) -> str:
    """The init's job: the guest set up as for a suite, then per workload the counters
    reset, the run, and the counters copied out, as the driver does per workload."""
    env = {"IPCBENCH_ACCEL": "tcg", "IPCBENCH_CLOCK": clock.engine_clock()}
    lines = steps.setup_lines(env, thp, clock, step_timeout=driver.TIMEOUT_S)
    for i, name in enumerate(n for n in p.names if n in p.argv):
        # A write of anything resets the counters (the overlay's patch).
        lines += [["write", path, "0"] for path in driver.SITES.values()]
        lines.append(["run", step(i, name), *p.argv[name]])
        lines += [["copy", path, f"{step(i, name)}.{kind}"]
                  for kind, path in driver.SITES.items()]
    return steps.render(lines)


def initrd(p: GuestWorkloads, where: Path) -> Path:
    """The guest's initramfs with the workloads' programs: the init's archive and one with
    the programs after it (the kernel unpacks both)."""
    base = guest.initramfs()
    out = where / "initramfs-census.cpio"
    if proc.is_dry_run():
        return out
    dirs = sorted({str(Path(g).parent).lstrip("/") for g in p.files})
    entries = [(d, 0o040755, b"") for d in dirs]
    entries += [(g.lstrip("/"), 0o100755, host.read_bytes())
                for g, host in sorted(p.files.items())]
    proc.write_text_atomic(out, base.read_bytes() + guest.cpio_archive(entries))
    return out


def row(driver, shared: Path, step_name: str, name: str, nproc) -> dict | None:
    """The driver's row for one workload from what its steps left; None when the guest did
    not run it or left no counters (a kernel without them)."""
    rc_text = steps.read_left(shared / f"{step_name}.rc")
    if rc_text is None or any(not (shared / f"{step_name}.{k}").is_file()
                              for k in driver.SITES):
        return None
    try:
        status = int(rc_text)
    except ValueError:
        return None
    if (shared / f"{step_name}.timeout").exists():
        rc = "timeout"
    elif status < 0:
        rc = "not started"
    elif os.WIFSIGNALED(status):
        rc = -os.WTERMSIG(status)       # as Python's subprocess says it on x86
    else:
        rc = os.WEXITSTATUS(status)
    out = {"workload": name, "rc": rc, "nproc": nproc}
    for kind in driver.SITES:
        out[kind] = driver.read_sites(str(shared / f"{step_name}.{kind}"))
    if rc != 0:
        out["output_tail"] = steps.step_output(shared, step_name).splitlines()[-5:]
    return out


def rows(driver, p: GuestWorkloads, shared: Path, nproc) -> list[dict]:
    """Every workload's row in the driver's order: a refused one marked with its reason."""
    out, ran = [], [n for n in p.names if n in p.argv]
    for name in p.names:
        if name in p.refused:
            out.append({"workload": name, "skipped": "not on arm64", "reason": p.refused[name]})
            continue
        r = row(driver, shared, step(ran.index(name), name), name, nproc)
        if r is not None:
            out.append(r)
    return out


def boot(driver, meta: dict, p: GuestWorkloads, *, clock: vm.Clock, cpus: int, timeout: float,
         thp: str = "madvise") -> tuple[vm.Boot, list[dict]]:
    """One arm64 boot running the plan's workloads; (boot, rows), rows empty in a dry
    run."""
    shared = vm.new_shared(variants.slug(meta["variant"]), "census")
    with tempfile.TemporaryDirectory(prefix="ipclab-census-") as tmp:
        image = initrd(p, Path(tmp))
        text = "" if proc.is_dry_run() else job_text(driver, p, clock, thp)
        b = guest.boot(meta, shared, text, ["/init", f"({len(p.argv)} workloads)"],
                       initrd=image, thp=thp, timeout=timeout, clock=clock, cpus=cpus)
    if proc.is_dry_run():
        return b, []
    return b, rows(driver, p, shared, b.status.get("nproc"))
