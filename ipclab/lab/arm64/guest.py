# SPDX-License-Identifier: MIT
"""Kernel lab, arm64 guests (--arch arm64): their user space, how QEMU boots them, and the
suite job they run.

The host's root and its Python cannot serve an arm64 guest, so its user space is the lab's
own initramfs: a static PID 1 (scripts/guest-init.c) and a static engine, both cross-built
with Debian's gcc-aarch64-linux-gnu and cached by their sources. The boot is
qemu-system-aarch64's virt machine (a Neoverse N1: ARMv8.2 with LSE atomics, as arm64
servers are), under TCG or, deterministic, icount, with the boot's shared directory as a 9p
export mounted at the host's path. Judging a boot is vm.boot's, as on x86.

A suite boot runs the engine invocations of the run's plan (runner's cells, order and
seed), one `run` step of the init's job each; afterwards runner.execute replays the plan on
the host, each sample read back from what the guest left instead of running the engine.
So the results file is the one `ipclab run` writes, sample for sample.

With --profile (deterministic: profile.py's marker way) the job then runs each cell once
more as a `marked` step, which the init brackets with the profile's marker system call as
`ipclab run --profile-by marker` does on x86; the host reads those runs back into the
profile file the x86 guest would have left, and ab.run_suite_boot names the plugin's
addresses with the image's System.map as on x86.
"""

from __future__ import annotations

import collections
import os
import threading
from pathlib import Path

from ipclab import EXIT_FAILED, ROOT, Error, engine, peers, proc, profile, results, runner
from ipclab import schedule, suites

from . import cache, vm
from .cache import cache_root

QEMU = "qemu-system-aarch64"
CC = "aarch64-linux-gnu-gcc"
# An ARMv8.2 server core: LSE atomics and RCpc loads, no pointer authentication (which
# QEMU's `max` CPU emulates at several times the cost of the rest).
CPU = "neoverse-n1"
GUEST_INIT = ROOT / "scripts" / "guest-init.c"
BENCH_SRC = ROOT / "bench" / "src"
GUEST_ENGINE = "/ipcbench"
JOB = "job.txt"
NINEP_TAG = "ipclab"


def digest(paths: list[Path]) -> str:
    return cache.sha256_bytes("".join(f"{p.name}:{cache.sha256_file(p)}"
                                      for p in sorted(paths)).encode())[:12]


# `ab` boots its two sides from two threads, and on a cold cache both need the guest's user
# space: one builds it, the other waits and finds it built.
_BUILD_LOCK = threading.Lock()


def temp_name(out: Path) -> Path:
    """Where to make `out` before it is moved into place: this process and thread's own."""
    return out.with_name(f"{out.name}.tmp{os.getpid()}-{threading.get_ident()}")


def _cross_build(out: Path, argv_tail: list[str]) -> Path:
    """A static arm64 program, built once per source into the lab's tools."""
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(out)
    done = proc.run([CC, "-O2", "-static", "-o", str(tmp), *argv_tail], 600, capture=True)
    if done.rc != 0:
        raise Error(f"cross-building {out.name} failed (is gcc-aarch64-linux-gnu installed? "
                    f"make lab-deps): {done.err.strip()[-300:]}", EXIT_FAILED)
    os.replace(tmp, out)
    return out


def initramfs() -> Path:
    """The guest's whole user space: /init and /ipcbench, as a newc cpio archive."""
    sources = sorted(BENCH_SRC.glob("*.[ch]"))
    tools = cache_root() / "tools"
    key = digest([GUEST_INIT, *sources])
    out = tools / f"initramfs-arm64-{key}.cpio"
    if proc.would_run([CC, "-static", str(GUEST_INIT), "...", str(BENCH_SRC / "*.c")]):
        return out
    with _BUILD_LOCK:
        if not out.exists():
            _build_initramfs(out, tools, sources)
    return out


def _build_initramfs(out: Path, tools: Path, sources: list[Path]) -> None:
    init = _cross_build(tools / f"guest-init-arm64-{digest([GUEST_INIT])}",
                        ["-Wall", str(GUEST_INIT)])
    bench = _cross_build(tools / f"ipcbench-arm64-{digest(sources)}",
                         ["-std=gnu11", f"-I{BENCH_SRC}",
                          *(str(p) for p in sources if p.suffix == ".c"),
                          "-lrt", "-lpthread", "-lm"])
    entries = [(d, 0o040755, b"") for d in ("dev", "proc", "sys", "tmp")]
    entries += [("init", 0o100755, init.read_bytes()),
                (GUEST_ENGINE.lstrip("/"), 0o100755, bench.read_bytes()),
                # The console, so that the kernel hands init a stdout and stderr.
                ("dev/console", 0o020600, b"", (5, 1))]
    write_atomic(out, cpio_archive(entries))


def write_atomic(out: Path, data: bytes) -> None:
    proc.write_text_atomic(out, data)


def cpio_archive(entries: list[tuple]) -> bytes:
    """A newc ("070701") archive, the format the kernel unpacks, of (name, mode, body[,
    (major, minor)]) entries. Archives may be concatenated: the kernel unpacks each."""
    data = b"".join(_cpio_entry(i + 1, *entry) for i, entry in enumerate(entries))
    return data + _cpio_entry(0, "TRAILER!!!", 0, b"")


def _cpio_entry(ino: int, name: str, mode: int, body: bytes, rdev=(0, 0)) -> bytes:
    fields = (ino, mode, 0, 0, 2 if mode & 0o040000 else 1, 0, len(body), 0, 0, rdev[0],
              rdev[1], len(name) + 1, 0)
    head = b"070701" + b"".join(b"%08x" % f for f in fields) + name.encode() + b"\0"
    pad = b"\0" * (-len(head) % 4)
    return head + pad + body + b"\0" * (-len(body) % 4)


def launcher(shared: Path, initrd: Path | None = None):
    """vm.boot's way to start an arm64 guest: the QEMU command line for the image, the
    initramfs (initramfs()'s unless given) and the shared directory."""
    def argv(image: Path, cpus: int, memory: str, append: list[str],
             qemu_opts: list[str]) -> list[str]:
        cmdline = ["console=ttyAMA0", f"ipclab.shared={shared}", "panic=-1", *append]
        # dtb-randomness=off: QEMU would put a fresh kaslr-seed and rng-seed in every boot's
        # device tree, and a guest seeded differently each boot counts differently.
        return [QEMU, "-M", "virt,dtb-randomness=off", "-cpu", CPU, "-smp", str(cpus), "-m", memory,
                "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot",
                # the virt machine's default NIC: the guest has no network stack
                "-nic", "none",
                "-kernel", str(image), "-initrd", str(initrd or initramfs()),
                "-append", " ".join(cmdline),
                "-fsdev", f"local,id=ipclab,path={shared},security_model=none",
                "-device", f"virtio-9p-device,fsdev=ipclab,mount_tag={NINEP_TAG}",
                *qemu_opts]
    return argv


# --------------------------------------------------------------------------- a suite's job


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
    runs (arm64_debug's: fault injection armed, kmemleak scanned)."""
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


def plan(job: vm.SuiteJob, order_seed: int):
    """(results, cells, steps): a new results file for the job's run, its cells, and the
    engine invocations of its plan, in the order `ipclab run` would make them."""
    suite, mode, cells, reps, warmups = runner.plan(job.suite, full=job.mode == suites.FULL,
                                                    reps=job.reps, warmups=job.warmups)
    if job.cells:
        cells = suites.select(cells, job.cells)
    res = results.new(runner.default_id(suite.name, mode), suite.name, mode, cells, reps,
                      warmups, order_seed)
    steps = []
    for slot in schedule.build(len(cells), reps, warmups, order_seed):
        cell = cells[slot.cell]
        if not peers.is_peer(cell):
            steps.append((f"s{len(steps):05d}", engine.argv_for(GUEST_ENGINE, cell, "tcg")))
    return res, cells, steps


def replay(shared: Path, cells, steps):
    """runner.execute's `run` for a guest's samples: the k-th sample of a cell is what the
    guest's k-th invocation of it left (exit status, stdout, stderr)."""
    by_cell = collections.defaultdict(collections.deque)
    for name, argv in steps:
        by_cell[tuple(argv)].append(name)

    def run(_engine, cell):
        if peers.is_peer(cell):
            return engine.CellRun("skipped", error="peer programs are not in the arm64 guest")
        argv = engine.argv_for(GUEST_ENGINE, cell, "tcg")
        names = by_cell.get(tuple(argv))
        if not names:
            return engine.CellRun("failed", error="not in the guest's job", argv=argv)
        return read_step(shared, names.popleft(), argv)
    return run


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


def check_job(job: vm.SuiteJob) -> None:
    """Error for what a suite job asks that the arm64 guest cannot do."""
    if job.profile_by and job.profile_by != "marker":
        raise Error("--profile on arm64 needs --deterministic: a timed guest profiles with "
                    "perf, which the arm64 guest does not have")


def profile_steps(cells) -> list[tuple[str, suites.Cell, list[str]]]:
    """The profile's marked runs: each cell once, in the cells' order, as `ipclab run
    --profile-by marker` makes them (profile.profile_cells), its window the plugin's
    2i + 1. Not the peers' cells, which the guest cannot run: a cell without a marked run
    would leave no window, and the cells after it would take the wrong ones."""
    return [(f"p{i:05d}", cell, engine.argv_for(GUEST_ENGINE, cell, "tcg"))
            for i, cell in enumerate(c for c in cells if not peers.is_peer(c))]


def read_profile(shared: Path, out: Path, marked) -> dict:
    """The profile file `ipclab run --profile-by marker` would have left at `out`, from the
    guest's marked runs (profile_steps): each cell's operations, or why it has none."""
    by_key = {cell.key: (name, argv) for name, cell, argv in marked}
    return profile.profile_cells(GUEST_ENGINE, [cell for _, cell, _ in marked], out,
                                 by="marker", marked=lambda cell: profile.marked_record(
                                     read_step(shared, *by_key[cell.key]), cell))


def boot_suite(meta: dict, job: vm.SuiteJob, shared: Path, *, thp: str, timeout: float,
               clock: vm.Clock, cpus: int | None, insn_counts: Path | None,
               plugin_memory: str) -> vm.Boot:
    """One arm64 boot running a suite job; its results written to shared/job.RESULTS as
    the guest's `ipclab run` would have, unless the guest ran nothing."""
    check_job(job)
    order_seed = int.from_bytes(os.urandom(4), "little") >> 1
    res, cells, steps = plan(job, order_seed)
    marked = profile_steps(cells) if job.profile_by else []
    env = {"IPCBENCH_ACCEL": "tcg", "IPCBENCH_CLOCK": clock.engine_clock()}
    if insn_counts is not None:
        env["IPCBENCH_MARK"] = str(shared / vm.MARKS)
    if not proc.is_dry_run():
        shared.mkdir(parents=True, exist_ok=True)
        proc.write_text_atomic(shared / JOB, job_text(env, thp, clock, steps, marked=[
            (name, argv) for name, _, argv in marked]))
    b = vm.boot(meta, "tcg", [GUEST_ENGINE, f"({len(steps) + len(marked)} invocations)"],
                thp=thp, timeout=timeout, shared=shared, job_rc_fails=False, clock=clock,
                cpus=cpus, insn_counts=insn_counts, plugin_memory=plugin_memory,
                launcher=launcher(shared))
    if proc.is_dry_run() or not (shared / "started").exists():
        return b
    res["host"] = {"machine": b.status.get("machine"), "kernel": b.status.get("release"),
                   "nproc": b.status.get("nproc"), "cpu": f"QEMU {CPU}"}
    path = shared / job.RESULTS
    side = runner.Side(res, cells, GUEST_ENGINE, str(path))
    runner.execute([side], quiet=True, run=replay(shared, cells, steps))
    if marked:
        read_profile(shared, shared / job.PROFILE, marked)
    return b

