# SPDX-License-Identifier: MIT
"""Upstream's own benchmarks, built from a kernel source tree and run as cells.

A maintainer trusts the figures of the benchmark a patch was accepted on more than those of
an engine they have never seen. tools/testing/selftests/pipe/pipe_bench.c is the one commit
212ed884a1ae ("fs/pipe: bulk pre-allocate pages outside pipe->mutex") was measured with: N
writer threads and M reader threads on one pipe, 64 KiB writes into a 1 MiB pipe, optionally
beside `stress-ng --vm` (--memory-pressure). It is never copied into this repository: it is
compiled from the tree of the kernel being measured (IPCLAB_KERNEL_SRC, else the lab's
extracted mainline source), into the cache, keyed by the source's hash.

Its output is parsed into a sample of the engine's shape, and kept whole in the sample's
notes, so that the figures it printed itself stay beside what ipclab made of them.
"""

import contextlib
import hashlib
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ipclab import Error, cachedir, engine, peers, proc

PREFIX = "upstream:"
SCHEMA = "ipclab-upstream/1"
BUILD_TIMEOUT_S = 300


@dataclass(frozen=True)
class Program:
    name: str
    path: str           # in the kernel tree
    libs: tuple = ()
    # (NAME, VALUE): `#define NAME` of the source set to VALUE before it is compiled, for a
    # size that has no option (mq_perf_tests' loop counts)
    defines: tuple = ()

    def source(self, tree):
        return Path(tree) / self.path


PIPE_BENCH = Program("pipe_bench", "tools/testing/selftests/pipe/pipe_bench.c")
MQ_PERF = "tools/testing/selftests/mqueue/mq_perf_tests.c"
# mq_perf_tests at its real size (10^7 send/receive pairs on an empty queue, 10^5 on a full
# one per priority pattern), and with a tenth of each, under another name so that no figure
# of one is read as the other's.
MQ_PERF_TESTS = Program("mq_perf_tests", MQ_PERF, ("-lrt", "-lpopt"))
MQ_PERF_TESTS_TENTH = Program("mq_perf_tests-tenth", MQ_PERF, ("-lrt", "-lpopt"),
                              (("TEST1_LOOPS", "1000000"), ("TEST2_LOOPS", "10000")))
PROGRAMS = {p.name: p for p in (PIPE_BENCH, MQ_PERF_TESTS, MQ_PERF_TESTS_TENTH)}
# mq_perf_tests raises these as far as they go and puts them back when it exits; the
# watchdog's SIGKILL would leave them raised, so run_cell puts them back itself.
MQ_SYSCTLS = ("/proc/sys/fs/mqueue/msg_max", "/proc/sys/fs/mqueue/msgsize_max")


def source_tree(program):
    """The kernel tree to build `program` from, or None: IPCLAB_KERNEL_SRC, else the lab's
    extracted mainline tree (`make lab-deps` extracts it)."""
    named = os.environ.get("IPCLAB_KERNEL_SRC")
    if named:
        return Path(named)
    for tree in sorted((cachedir.cache_root() / "src" / "mainline").glob("linux-*")):
        if program.source(tree).is_file():
            return tree
    return None


def missing(program):
    """Why `program` cannot be built here, or None."""
    tree = source_tree(program)
    if tree is None:
        return (f"{program.path} not found: no kernel source (set IPCLAB_KERNEL_SRC to a"
                " kernel tree, or `make lab-deps` to extract the lab's)")
    if not program.source(tree).is_file():
        return f"{program.path} is not in {tree}"
    if shutil.which("gcc") is None:
        return "gcc is not installed (make deps)"
    return None


def with_defines(text, defines, where):
    """The source text with each `#define NAME ...` line set to NAME VALUE; Error unless
    there is exactly one such line."""
    for name, value in defines:
        text, n = re.subn(rf"^#define {name} .*$", f"#define {name} {value}", text,
                          flags=re.MULTILINE)
        if n != 1:
            raise Error(f"{where}: no single `#define {name}` to set to {value}")
    return text


def build(program):
    """The binary of `program`, compiled once per source text into the cache; Error when
    it does not compile."""
    src = program.source(source_tree(program))
    text = with_defines(src.read_text(), program.defines, src)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    out = cachedir.cache_root() / "upstream" / f"{program.name}-{digest}"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    tmp_src = out.with_name(f"{out.name}.{os.getpid()}.c")
    proc.write_text_atomic(tmp_src, text)
    # The selftests' own headers (kselftest.h) are found beside the source's folder.
    argv = ["gcc", "-O2", "-Wall", "-pthread", f"-I{src.parent.parent}", f"-I{src.parent}",
            "-o", str(tmp), str(tmp_src), *program.libs]
    try:
        done = proc.run(argv, BUILD_TIMEOUT_S, capture=True)
    finally:
        tmp_src.unlink(missing_ok=True)
    if done.timed_out or done.rc != 0:
        tmp.unlink(missing_ok=True)
        why = "timed out" if done.timed_out else (done.err.strip().splitlines() or ["?"])[-1]
        raise Error(f"cannot build {src}: {why}")
    os.replace(tmp, out)
    return out


def _staged(program):
    """The binary and source path the host left in a guest's shared directory (stage), or
    (None, None): a guest sees neither the cache nor the kernel tree."""
    shared = os.environ.get("IPCLAB_SHARED")
    if not shared:
        return None, None
    binary = Path(shared) / "upstream" / program.name
    if not binary.is_file():
        return None, None
    return binary, (binary.with_suffix(".source").read_text().strip()
                    if binary.with_suffix(".source").is_file() else "")


def stage(cells, shared):
    """Leave the programs these cells run, built here, in a guest's shared directory."""
    for name in sorted({program_of(c).name for c in cells if is_upstream(c) and program_of(c)}):
        program = PROGRAMS[name]
        if missing(program) is not None:
            continue
        dest = Path(shared) / "upstream"
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(build(program), dest / name)
        proc.write_text_atomic(dest / f"{name}.source", f"{program.source(source_tree(program))}\n")


def prebuild(cells):
    """Build the programs these cells run, where they can be built: what a guest, which
    sees the cache read-only, then finds there. Error when one does not compile."""
    for name in sorted({program_of(c).name for c in cells if is_upstream(c) and program_of(c)}):
        if missing(PROGRAMS[name]) is None:
            build(PROGRAMS[name])


# ---- pipe_bench's output ------------------------------------------------------------------

_FIELDS = (  # (its line's label, our metric, unit, better)
    ("throughput_MBps", "throughput_MBps", "MiB/s", "none"),
    ("lat_avg_ns", "write_lat_avg_ns", "ns", "lower"),
    ("lat_p50_ns_upper", "write_lat_p50_upper_ns", "ns", "lower"),
    ("lat_p99_ns_upper", "write_lat_p99_upper_ns", "ns", "lower"),
    ("lat_max_ns", "write_lat_max_ns", "ns", "lower"),
)


def read_pipe_bench(text):
    """The metrics of one configuration's block of pipe_bench's output (run with -w and -r,
    it prints one): the writers' write() latency, its percentiles as the upper edge of a
    power-of-two bucket, as pipe_bench prints them; its throughput_MBps as it prints it,
    whose MB is 2^20 bytes (it divides by 1024.0 * 1024.0), and as "throughput" in the MB/s of
    ipcbench and the peers (10^6 bytes), so that the two engines' tables read alike."""
    if len(re.findall(r"^config:", text, re.MULTILINE)) != 1:
        raise peers.ParseError("not one configuration's block (run it with -w and -r)")
    m = re.search(r"^writes: total=(\d+) rate=([0-9.]+)/s", text, re.MULTILINE)
    if not m:
        raise peers.ParseError("no `writes:` line in its output")
    metrics = {"writes": peers.metric(float(m.group(1)), "writes"),
               "writes_per_s": peers.metric(float(m.group(2)), "writes/s", "higher")}
    for label, name, unit, better in _FIELDS:
        metrics[name] = peers.metric(peers.number(rf"^{label}:\s*([0-9.]+)", text, label),
                                     unit, better)
    metrics["throughput"] = peers.metric(metrics["throughput_MBps"]["value"] / peers.MIB_PER_MB,
                                         "MB/s", "higher")
    return metrics


# ---- mq_perf_tests' output ---------------------------------------------------------------

MQ_TESTS = {"1": "empty", "2a": "full_constant", "2b": "full_increasing",
            "2c": "full_decreasing", "2d": "full_random"}


def read_mq_perf(text):
    """mq_perf_tests: per test, the ns per mq_send and per mq_receive, whole ns as it prints
    them, which it measures with the thread's CPU clock (pthread_getcpuclockid): CPU time,
    not elapsed time."""
    out = {}
    parts = re.split(r"^\s*Test #(\w+):", text, flags=re.MULTILINE)
    for name, body in zip(parts[1::2], parts[2::2]):
        ns = re.findall(r"^\s*(\d+) nsec/msg", body, re.MULTILINE)
        if name in MQ_TESTS and len(ns) >= 2:
            out[f"{MQ_TESTS[name]}_send_ns"] = peers.metric(float(ns[0]), "ns", "lower")
            out[f"{MQ_TESTS[name]}_recv_ns"] = peers.metric(float(ns[1]), "ns", "lower")
    want = {f"{t}_{op}_ns" for t in MQ_TESTS.values() for op in ("send", "recv")}
    if set(out) != want:
        raise peers.ParseError(f"no nsec/msg for {', '.join(sorted(want - set(out)))}")
    return out


READERS = {"pipe_bench": read_pipe_bench, "mq_perf_tests": read_mq_perf,
           "mq_perf_tests-tenth": read_mq_perf}


def _sysctls(program):
    out = {}
    for path in MQ_SYSCTLS if program.path == MQ_PERF else ():
        with contextlib.suppress(OSError):
            out[path] = Path(path).read_text().strip()
    return out


def _restore(saved):
    for path, value in saved.items():
        with contextlib.suppress(OSError):
            if Path(path).read_text().strip() != value:
                Path(path).write_text(value + "\n")


# ---- cells --------------------------------------------------------------------------------


def is_upstream(cell):
    return peers.workload_of(cell).startswith(PREFIX)


def program_of(cell):
    return PROGRAMS.get(peers.workload_of(cell)[len(PREFIX):])


def workloads():
    return {PREFIX + name for name in PROGRAMS}


def argv_for(cell):
    program = program_of(cell)
    return [f"<{program.name} built from {program.path}>" if program else "?"] + list(cell.args)


def run_cell(cell, env=None):
    """One sample of an upstream program's cell, as engine.run_cell gives one of the
    engine's: skipped when it cannot be built here, failed when it fails or prints what its
    parser cannot read."""
    program = program_of(cell)
    if program is None:
        return engine.CellRun("failed", error=f"unknown upstream program {cell.workload!r}",
                              rc=-1)
    binary, source = _staged(program)
    if binary is None:
        why = missing(program)
        if why:
            return engine.CellRun("skipped", error=why, rc=engine.EXIT_SKIP)
        try:
            binary, source = build(program), str(program.source(source_tree(program)))
        except Error as e:
            return engine.CellRun("failed", error=str(e), rc=-1)
    if "--memory-pressure" in cell.args and peers.missing("stress-ng"):
        return engine.CellRun("skipped", error=peers.missing("stress-ng"), rc=engine.EXIT_SKIP)
    argv = [str(binary)] + list(cell.args)
    limit = engine.cell_timeout(cell) + engine.WATCHDOG_GRACE_S
    saved = _sysctls(program)
    t0 = time.time()
    try:
        done = proc.run(argv, limit, capture=True, env=env)
    except (OSError, Error) as e:
        return engine.CellRun("failed", error=f"cannot run {program.name}: {e}", rc=-1,
                              argv=argv)
    finally:
        _restore(saved)
    t1 = time.time()
    if done.timed_out:
        return engine.CellRun("failed", error=f"timed out after {limit:g}s", rc=-9, argv=argv)
    if done.rc != 0 and program.path == MQ_PERF and "Operation not permitted" in done.err:
        return engine.CellRun("skipped", rc=engine.EXIT_SKIP, argv=argv, error=(
            f"{program.name}: setrlimit(RLIMIT_MSGQUEUE, unlimited) is refused here (it needs"
            " CAP_SYS_RESOURCE): run it in a lab guest"))
    if done.rc != 0:
        last = [line.strip() for line in (done.out + done.err).splitlines() if line.strip()]
        return engine.CellRun("failed", rc=done.rc, argv=argv,
                              error=f"exit {done.rc}: {last[-1] if last else 'no message'}")
    try:
        metrics = READERS[program.name](done.out)
    except peers.ParseError as e:
        return engine.CellRun("failed", error=f"cannot read {program.name}'s output: {e}",
                              rc=done.rc, argv=argv)
    sample = peers.program_sample(SCHEMA, cell.workload, metrics, argv, t0, t1,
                                  notes={"source": source, "output": done.out})
    return engine.CellRun("ok", samples=[sample], rc=0, argv=argv)


# pipe_bench's own sweep (its default with no -w/-r), one configuration per cell so that the
# rounds interleave them; with and without its --memory-pressure.
SWEEP = [(w, r) for w in (1, 2, 5) for r in (1, 5, 10)]


def pipe_bench_cells(duration_s, make_cell):
    """[make_cell(key, workload, args, est_s)] of the sweep, without then with pressure."""
    out = []
    for pressure in (False, True):
        for w, r in SWEEP:
            args = ["-w", str(w), "-r", str(r), "-d", str(duration_s)]
            key = f"pipe_bench/w={w},r={r}"
            if pressure:
                args.append("--memory-pressure")
                key += ",pressure"
            out.append(make_cell(key, PREFIX + PIPE_BENCH.name, args, duration_s + 1.0))
    return out


def mq_perf_cell(real, make_cell):
    """make_cell(key, workload, args, est_s) of mq_perf_tests, at its real size or a tenth."""
    program = MQ_PERF_TESTS if real else MQ_PERF_TESTS_TENTH
    return make_cell(program.name, PREFIX + program.name, [], 60.0 if real else 8.0)
