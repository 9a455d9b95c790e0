# SPDX-License-Identifier: MIT
"""The conformance tests in the arm64 guest (`vm run VARIANT --arch arm64 --conformance`,
and scripts/fault-runs --arch arm64's boots).

The arm64 guest has no shell, so conformance/run.sh cannot run there: this module does its
part on both sides of the boot. Before it, the tests are cross-built static (conformance's
own Makefile with the arm64 compiler, into the lab's tools, once per source) and appended to
the guest's initramfs under /conformance; the init's job runs each test as run.sh would, one
`run` step per test under the init's per-step watchdog, with run.sh's environment. After it,
each step's exit status, output and watchdog are read back from the shared directory and
printed as the KTAP run.sh prints, with one more outcome run.sh never has to say: a test the
guest did not reach because it stopped first (a panic, the boot's watchdog).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from ipclab import EXIT_FAILED, Error, proc
from ipclab.progress import log

from .. import variants, vm
from ..cache import cache_root
from . import guest, steps

CONFORMANCE = vm.ConformanceJob.DIR
GUEST_DIR = "conformance"           # in the initramfs: /conformance/TEST
# run.sh's defaults: 120 s a test, stretched 25 times under TCG (IPCBENCH_ACCEL=tcg), which
# is the only way an arm64 guest runs here.
TIMEOUT_S = 120
TCG_WATCHDOG_SCALE = 25
EXIT_SKIP = 77
# /tmp is a fresh tmpfs of the guest's init that nothing else writes: what run.sh's
# mktemp -d under $TMPDIR gives each run.
GUEST_TMPDIR = "/tmp"


def sources() -> list[Path]:
    """What the tests are built from: their digest names the build."""
    return sorted([*CONFORMANCE.glob("*.c"), *(CONFORMANCE / "lib").glob("*.[ch]"),
                   CONFORMANCE / "Makefile", *(guest.BENCH_SRC.glob("shared.[ch]"))])


def build_argv(bindir: Path, jobs: int) -> list[str]:
    """conformance's own Makefile, with the arm64 compiler, static and stripped, into
    bindir."""
    return ["make", "-s", "-C", str(CONFORMANCE), f"-j{jobs}", f"CC={guest.CC}",
            "LDFLAGS=-static -s", f"BIN={bindir}"]


def binaries() -> Path:
    """The directory of static arm64 tests, built once per source into the lab's tools."""
    out = cache_root() / "tools" / f"conformance-arm64-{guest.digest(sources())}"
    if out.is_dir():
        return out
    tmp = guest.temp_name(out)
    argv = build_argv(tmp, os.cpu_count() or 1)
    if proc.would_run(argv):
        return out
    log(f"conformance: cross-building {len(vm.ConformanceJob.test_names())} tests for arm64")
    done = proc.run(argv, 900, capture=True)
    if done.rc != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise Error(f"cross-building the conformance tests failed (is gcc-aarch64-linux-gnu "
                    f"installed? make lab-deps): {(done.err or done.out).strip()[-300:]}",
                    EXIT_FAILED)
    os.replace(tmp, out)
    return out


def initrd(bindir: Path, names: list[str]) -> Path:
    """The guest's initramfs with the tests under /conformance: initramfs()'s archive and
    one of the tests after it (the kernel unpacks the two in turn)."""
    base = guest.initramfs()
    out = base.with_name(f"{base.stem}-conformance-{bindir.name.rsplit('-', 1)[-1]}.cpio")
    if proc.is_dry_run() or out.exists():
        return out
    entries = [(GUEST_DIR, 0o040755, b"")]
    entries += [(f"{GUEST_DIR}/{name}", 0o100755, (bindir / name).read_bytes())
                for name in names]
    guest.write_atomic(out, base.read_bytes() + guest.cpio_archive(entries))
    return out


def watchdog_scale(environ: Mapping[str, str]) -> float:
    """run.sh's CT_WATCHDOG_SCALE: environ's when set, else TCG's."""
    raw = environ.get("CT_WATCHDOG_SCALE", "")
    try:
        return max(1.0, float(raw)) if raw else TCG_WATCHDOG_SCALE
    except ValueError:
        raise Error(f"CT_WATCHDOG_SCALE={raw!r}: want a number") from None


def per_test_timeout(scale: float, environ: Mapping[str, str]) -> int:
    """run.sh's -t: CT_TIMEOUT or 120 s, stretched by the watchdog scale."""
    raw = environ.get("CT_TIMEOUT", "")
    if raw and not raw.isdigit():
        raise Error(f"CT_TIMEOUT={raw!r}: want whole seconds")
    return int((int(raw) if raw else TIMEOUT_S) * scale + 0.5)


def job_text(names: list[str], clock: vm.Clock, thp: str,
             environ: Mapping[str, str] | None = None, faults: dict | None = None,
             kmemleak: bool = False) -> tuple[str, int]:
    """The init's job and its per-test timeout: each test a step of its own name, with the
    environment run.sh gives it and run.sh's variables from `environ` (the host's unless
    given): CT_TIMEOUT, CT_WATCHDOG_SCALE, CT_SEED, CT_STRESS_ARGS, CT_ARGS_<test>. With
    `faults` or `kmemleak`, the debug variant's checks around the tests (steps.before_runs)."""
    environ = os.environ if environ is None else environ
    scale = watchdog_scale(environ)
    env = {"IPCBENCH_ACCEL": "tcg", "IPCBENCH_CLOCK": clock.engine_clock(),
           "CT_WATCHDOG_SCALE": f"{scale:g}", "CT_TMPDIR": GUEST_TMPDIR}
    for var in ("CT_SEED", "CT_STRESS_ARGS"):
        if environ.get(var):
            env[var] = environ[var]
    timeout_s = per_test_timeout(scale, environ)
    runs = [(name, [f"/{GUEST_DIR}/{name}", *_own_args(name, environ)]) for name in names]
    return steps.job_text(env, thp, clock, runs, step_timeout=timeout_s,
                          before=steps.before_runs(faults),
                          after=steps.after_runs(faults, kmemleak)), timeout_s


def _own_args(name: str, environ: Mapping[str, str]) -> list[str]:
    """run.sh's CT_STRESS_ARGS (stress tests) and CT_ARGS_<test>, as it splits them."""
    args = environ.get("CT_STRESS_ARGS", "").split() if name.startswith("stress_") else []
    return args + environ.get(f"CT_ARGS_{name}", "").split()


# --------------------------------------------------------------------------- KTAP


@dataclasses.dataclass
class KtapLine:
    """One test's result line as run.sh would print it, and its diagnostic lines."""
    name: str
    kind: str                   # "pass", "skip", "fail" or "error" (run.sh's totals)
    directive: str = ""         # what follows "#" on the result line
    lines: list[str] = dataclasses.field(default_factory=list)


def outcome(shared: Path, name: str) -> KtapLine:
    """What the guest left of one test's step, judged as run.sh judges its exit status."""
    lines = [line if line.startswith("#") else f"# {line}"
             for line in steps.step_output(shared, name).splitlines()]
    rc_text = steps.read_left(shared / f"{name}.rc")
    limit = steps.read_left(shared / f"{name}.timeout")
    try:
        status = int(rc_text) if rc_text is not None else None
    except ValueError:
        status = None
    if status is None:
        return KtapLine(name, "error", "error: not run (the guest stopped before it)", lines)
    if limit is not None:
        return KtapLine(name, "fail", f"TIMEOUT {limit.strip()} seconds", lines)
    if status < 0:
        return KtapLine(name, "error", "error: could not be started in the guest", lines)
    if os.WIFSIGNALED(status):
        return KtapLine(name, "fail", f"killed by signal {os.WTERMSIG(status)}", lines)
    rc = os.WEXITSTATUS(status)
    if rc == 0:
        return KtapLine(name, "pass", "", lines)
    if rc == EXIT_SKIP:
        reason = next((ln[len("# SKIP "):] for ln in lines if ln.startswith("# SKIP ")), "")
        return KtapLine(name, "skip", f"SKIP {reason or 'skipped'}", lines)
    if rc == 1:
        return KtapLine(name, "fail", "", lines)
    return KtapLine(name, "error", f"error: exit {rc}", lines)


def ktap(outcomes: list[KtapLine]) -> str:
    """run.sh's KTAP: the plan, each test's name, output and result line, the totals."""
    out = ["TAP version 13", f"1..{len(outcomes)}"]
    totals = dict.fromkeys(("pass", "fail", "skip", "error"), 0)
    for n, o in enumerate(outcomes, 1):
        totals[o.kind] += 1
        result = "not ok" if o.kind in ("fail", "error") else "ok"
        out += [f"# {o.name}", *o.lines,
                f"{result} {n} {o.name}" + (f" # {o.directive}" if o.directive else "")]
    out.append(f"# Totals: pass:{totals['pass']} fail:{totals['fail']} xfail:0 xpass:0 "
               f"skip:{totals['skip']} error:{totals['error']}")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- the boot


def run(meta: dict, job: vm.ConformanceJob, *, thp: str | None = None, timeout: float = 900,
        clock: vm.Clock, cpus: int | None = None, faults: dict | None = None,
        kmemleak: bool = False) -> vm.GuestRun:
    """One arm64 boot running every conformance test (or the job's), with run.sh's
    variables from the job's `environ` (the host's unless it has one), and fault injection
    and kmemleak when asked (vm.fault_injection's `faults`): the boot, with the debug
    checks' results in its status, the KTAP run.sh would print and its exit status."""
    names = vm.ConformanceJob.test_names()
    vm.ConformanceJob.check(job.tests)
    image = initrd(binaries(), names)
    names = list(job.tests) or names     # run.sh's order: the one it was given
    shared = vm.new_shared(variants.slug(meta["variant"]), "conformance")
    text, timeout_s = job_text(names, clock, thp or "madvise", job.environ, faults, kmemleak)
    b = guest.boot(meta, shared, text,
                   [f"/{GUEST_DIR}/*", f"({len(names)} tests, {timeout_s} s each)"],
                   initrd=image, thp=thp or "madvise", timeout=timeout, clock=clock, cpus=cpus,
                   faults=faults, kmemleak=kmemleak)
    if proc.is_dry_run():
        return vm.GuestRun(b)
    # Before anything reads the record: the debug checks' results, where guest-run.py puts
    # them on x86.
    b.status.update(steps.read_back(shared, faults, b.status))
    return guest_run(b, [outcome(shared, name) for name in names])


def guest_run(b: vm.Boot, outcomes: list[KtapLine]) -> vm.GuestRun:
    """The boot, run.sh's KTAP of the outcomes, and its exit status: 0 when every test
    passed or skipped, 1 otherwise (a failed boot fails the command besides)."""
    passed = all(o.kind in ("pass", "skip") for o in outcomes)
    return vm.GuestRun(b, ktap(outcomes), 0 if passed else EXIT_FAILED)
