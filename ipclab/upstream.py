# SPDX-License-Identifier: MIT
"""Upstream's own benchmarks: tools/testing/selftests/pipe/pipe_bench.c and
tools/testing/selftests/mqueue/mq_perf_tests.c, compiled from a kernel source tree (never
copied into the repository) and run as cells.

A cell's workload is "upstream:" + the program; its args are the program's argv, except
leading NAME=VALUE words, which replace a `#define NAME` of the source before it is
compiled (mq_perf_tests' TEST1_LOOPS and TEST2_LOOPS have no option). Its output is read
into one sample of the engine's shape, in the program's own units, and kept whole in the
sample's "raw".

The binary is cached under the lab's cache, keyed by the hash of the source (and of the
header it includes, and of the defines), so a variant whose tree changes the file gets its
own build.
"""

import hashlib
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ipclab import Error, engine, peers, proc

PREFIX = "upstream:"
SCHEMA = "ipclab-upstream/1"
COMPILE_TIMEOUT_S = 120
SELFTESTS = Path("tools") / "testing" / "selftests"
# mq_perf_tests raises these as far as they go and puts them back when it exits; a
# watchdog's SIGKILL would leave them raised, so the runner puts them back itself.
MQ_SYSCTLS = ("/proc/sys/fs/mqueue/msg_max", "/proc/sys/fs/mqueue/msgsize_max")


class ParseError(peers.ParseError):
    pass


@dataclass(frozen=True)
class Program:
    name: str
    path: Path              # in the kernel tree
    libs: tuple
    read: object            # (stdout + stderr text) -> metrics
    needs: tuple = ()       # programs it runs (pipe_bench's --memory-pressure: stress-ng)

    @property
    def workload(self):
        return PREFIX + self.name


# ---- where the source is --------------------------------------------------------------


def default_tree():
    """The kernel tree to build from: $IPCLAB_KERNEL_TREE, else the default base's tree as
    the lab extracts it (ipclab/lab/source.py owns that layout; tests/test_upstream.py checks
    this path against it)."""
    if os.environ.get("IPCLAB_KERNEL_TREE"):
        return Path(os.environ["IPCLAB_KERNEL_TREE"])
    src = Path(os.environ.get("IPCLAB_CACHE", "/var/cache/ipclab")) / "src" / "mainline"
    trees = sorted(p for p in src.glob("linux-*") if (p / "Makefile").is_file())
    return trees[0] if trees else src / "linux-?"


def cache_dir():
    return Path(os.environ.get("IPCLAB_CACHE", "/var/cache/ipclab")) / "upstream"


def missing(program, tree):
    """Why `program` cannot be built from `tree`, or None."""
    src = Path(tree) / program.path
    if not src.is_file():
        return (f"no {program.path} in {tree} (`ipclab kernel fetch` or `make lab-deps` fetches"
                " the base's source; IPCLAB_KERNEL_TREE names another tree)")
    for tool in ("cc",) + program.needs:
        why = peers.missing(tool)
        if why:
            return why
    return None


def _defines(args):
    """The leading NAME=VALUE words of a cell's args, and the program's own argv after them."""
    defs = []
    for i, a in enumerate(args):
        if not re.fullmatch(r"[A-Z][A-Z0-9_]*=\d+", a):
            return defs, list(args[i:])
        defs.append(tuple(a.split("=", 1)))
    return defs, []


def _with_defines(text, defs, path):
    for name, value in defs:
        text, n = re.subn(rf"^#define {name} .*$", f"#define {name} {value}", text,
                          flags=re.MULTILINE)
        if n != 1:
            raise Error(f"{path}: no single `#define {name}` to set to {value}")
    return text


def build(program, tree, defs=()):
    """The compiled program (cached): Error when the tree has no source or cc fails."""
    src = Path(tree) / program.path
    if not src.is_file():
        raise Error(missing(program, tree))
    text = _with_defines(src.read_text(), defs, src)
    header = Path(tree) / SELFTESTS / "kselftest.h"
    h = hashlib.sha256(text.encode())
    h.update(header.read_bytes() if header.is_file() else b"")
    h.update(" ".join(program.libs).encode())
    out_dir = cache_dir() / f"{program.name}-{h.hexdigest()[:16]}"
    binary = out_dir / program.name
    if binary.is_file():
        return binary
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp_src = out_dir / f".{program.name}.{os.getpid()}.c"
    tmp_bin = out_dir / f".{program.name}.{os.getpid()}"
    tmp_src.write_text(text)
    try:
        argv = ["cc", "-O2", "-Wall", "-pthread", f"-I{Path(tree) / SELFTESTS}",
                f"-I{src.parent}", "-o", str(tmp_bin), str(tmp_src)] + list(program.libs)
        done = proc.run(argv, COMPILE_TIMEOUT_S, capture=True)
        if done.timed_out:
            raise Error(f"compiling {program.path} timed out after {COMPILE_TIMEOUT_S} s")
        if done.rc != 0:
            last = [l for l in done.err.splitlines() if l.strip()]
            raise Error(f"compiling {program.path} failed: {last[-1] if last else done.rc}")
        os.replace(tmp_bin, binary)
    finally:
        tmp_src.unlink(missing_ok=True)
        tmp_bin.unlink(missing_ok=True)
    return binary


# ---- pipe_bench -------------------------------------------------------------------------


def _num(pattern, text, what):
    m = re.search(pattern, text, re.MULTILINE)
    if not m:
        raise ParseError(f"no {what} in its output")
    return float(m.group(1))


def read_pipe_bench(text):
    """One config's block of pipe_bench: its throughput in MB/s, where it divides by 2^20
    (so MiB/s), its writes and writes/s, and its write latencies in ns: the average, the
    maximum, and the upper bound of the log2 bucket holding p50 and p99."""
    blocks = [b for b in re.split(r"^---$", text, flags=re.MULTILINE) if "config:" in b]
    if len(blocks) != 1:
        raise ParseError(f"{len(blocks)} config blocks in its output, one expected")
    b = blocks[0]
    writes = _num(r"^writes: total=(\d+)", b, "write count")
    if writes <= 0:
        raise ParseError("no write completed")
    m = peers._metric
    return {"throughput": m(_num(r"^throughput_MBps: ([0-9.]+)", b, "throughput_MBps"),
                            "MB/s", "higher"),
            "writes": m(writes, "writes"),
            "writes_per_s": m(_num(r"^writes: total=\d+ rate=([0-9.]+)/s", b, "write rate"),
                              "writes/s", "higher"),
            "lat_avg_ns": m(_num(r"^lat_avg_ns: (\d+)", b, "lat_avg_ns"), "ns", "lower"),
            "lat_p50_ns_upper": m(_num(r"^lat_p50_ns_upper: (\d+)", b, "lat_p50_ns_upper"),
                                  "ns"),
            "lat_p99_ns_upper": m(_num(r"^lat_p99_ns_upper: (\d+)", b, "lat_p99_ns_upper"),
                                  "ns"),
            "lat_max_ns": m(_num(r"^lat_max_ns: (\d+)", b, "lat_max_ns"), "ns")}


# ---- mq_perf_tests ----------------------------------------------------------------------

MQ_TESTS = {"1": "empty", "2a": "full_constant", "2b": "full_increasing",
            "2c": "full_decreasing", "2d": "full_random"}


def read_mq_perf(text):
    """mq_perf_tests: per test, the ns per mq_send and per mq_receive, as the thread's CPU
    clock measured them (pthread_getcpuclockid), whole ns as it prints them."""
    out = {}
    parts = re.split(r"^\s*Test #(\w+):", text, flags=re.MULTILINE)
    for name, body in zip(parts[1::2], parts[2::2]):
        label = MQ_TESTS.get(name)
        ns = re.findall(r"^\s*(\d+) nsec/msg", body, re.MULTILINE)
        if label is None or len(ns) < 2:
            continue
        out[f"{label}_send_ns"] = peers._metric(float(ns[0]), "ns", "lower")
        out[f"{label}_recv_ns"] = peers._metric(float(ns[1]), "ns", "lower")
    want = {f"{label}_{op}_ns" for label in MQ_TESTS.values() for op in ("send", "recv")}
    if set(out) != want:
        raise ParseError(f"no nsec/msg for {', '.join(sorted(want - set(out)))}")
    return out


PROGRAMS = {p.name: p for p in (
    Program("pipe_bench", SELFTESTS / "pipe" / "pipe_bench.c", (), read_pipe_bench),
    Program("mq_perf_tests", SELFTESTS / "mqueue" / "mq_perf_tests.c",
            ("-lrt", "-lpopt"), read_mq_perf),
)}


# ---- cells ------------------------------------------------------------------------------

# pipe_bench's own sweep (its run_sweep), one cell per config so that rounds interleave.
PIPE_BENCH_WRITERS, PIPE_BENCH_READERS = (1, 2, 5), (1, 5, 10)


def pipe_bench_specs(duration, pressure=False):
    """[(key, workload, args, est_s)]: pipe_bench's sweep, one config per cell."""
    out = []
    for w in PIPE_BENCH_WRITERS:
        for r in PIPE_BENCH_READERS:
            key = f"pipe_bench/{'pressure/' if pressure else ''}w={w},r={r}"
            # -d is whole seconds; stress-ng gets a second to map its memory first.
            args = ["-w", str(w), "-r", str(r), "-d", str(duration)]
            args += ["--memory-pressure"] if pressure else []
            out.append((key, PROGRAMS["pipe_bench"].workload, args,
                        duration + 0.2 + (1.5 if pressure else 0)))
    return out


def mq_perf_specs(real):
    """[(key, workload, args, est_s)]: mq_perf_tests at its real size (10^7 and 4 x 10^5
    timed pairs), or with a tenth of TEST1's and TEST2's loops, named in the key so that no
    figure of one is read as the other's."""
    wl = PROGRAMS["mq_perf_tests"].workload
    if real:
        return [("mq_perf_tests/real", wl, [], 60.0)]
    return [("mq_perf_tests/loops=1000000,10000", wl,
             ["TEST1_LOOPS=1000000", "TEST2_LOOPS=10000"], 10.0)]


def beside_rows():
    """The rows of pipe_bench's figures beside ipcbench's pipe-sweep cell of the same config:
    pipe_bench prints MB/s of 2^20 bytes over its -d, ipcbench of 10^6 bytes over its
    measured time; the write latency is each one's average."""
    rows = []
    for w in PIPE_BENCH_WRITERS:
        for r in PIPE_BENCH_READERS:
            ours, theirs = f"pipe-sweep/w={w},r={r}", f"pipe_bench/w={w},r={r}"
            rows.append((f"{w}x{r}", [(theirs, f"metrics.throughput * {1 / peers.MIB_PER_MB:.12g}"),
                                      (ours, "metrics.throughput"),
                                      (theirs, "latency.write.mean"),
                                      (ours, "latency.write.mean")]))
    return rows


def is_upstream(cell):
    return peers._workload(cell).startswith(PREFIX)


def workloads():
    return {p.workload for p in PROGRAMS.values()}


def program_of(cell):
    return PROGRAMS.get(peers._workload(cell)[len(PREFIX):])


def argv_for(cell):
    p = program_of(cell)
    _, argv = _defines(cell.args)
    return [p.name if p else cell.workload] + argv


def _sysctls():
    out = {}
    for path in MQ_SYSCTLS:
        try:
            out[path] = Path(path).read_text().strip()
        except OSError:
            pass
    return out


def _restore(saved):
    for path, value in saved.items():
        try:
            if Path(path).read_text().strip() != value:
                Path(path).write_text(value + "\n")
        except OSError:
            pass


def run_cell(cell, tree=None, env=None):
    """One sample of an upstream cell, as engine.run_cell gives one of the engine's:
    skipped when the source or a tool is missing, failed when it does not build, fails or
    prints what its parser cannot read."""
    program = program_of(cell)
    if program is None:
        return engine.CellRun("failed", error=f"unknown upstream program {cell.workload!r}",
                              rc=-1)
    tree = Path(tree) if tree else default_tree()
    defs, args = _defines(cell.args)
    if "--memory-pressure" in args and not shutil.which("stress-ng"):
        return engine.CellRun("skipped", error=peers.missing("stress-ng"), rc=engine.EXIT_SKIP)
    why = missing(program, tree)
    if why:
        return engine.CellRun("skipped", error=why, rc=engine.EXIT_SKIP)
    try:
        binary = build(program, tree, defs)
    except (Error, OSError) as e:
        return engine.CellRun("failed", error=str(e), rc=-1)
    argv = [str(binary)] + args
    limit = engine.cell_timeout(cell) + engine.WATCHDOG_GRACE_S
    saved = _sysctls() if program.name == "mq_perf_tests" else {}
    t0 = time.time()
    try:
        done = proc.run(argv, limit, capture=True, env=env, cwd=str(binary.parent))
    except (OSError, Error) as e:
        return engine.CellRun("failed", error=f"cannot run {program.name}: {e}", rc=-1,
                              argv=argv)
    finally:
        _restore(saved)
    t1 = time.time()
    if done.timed_out:
        return engine.CellRun("failed", error=f"timed out after {limit:g}s", rc=-9, argv=argv)
    text = done.out + "\n" + done.err
    if done.rc != 0 and program.name == "mq_perf_tests" and "Operation not permitted" in text:
        return engine.CellRun("skipped", rc=engine.EXIT_SKIP, argv=argv, error=(
            "mq_perf_tests: setrlimit(RLIMIT_MSGQUEUE, unlimited) is not permitted here (it"
            " needs CAP_SYS_RESOURCE): run it in a lab guest"))
    if done.rc != 0:
        last = [l.strip() for l in text.splitlines() if l.strip()]
        why = last[-1] if last else "no message"
        return engine.CellRun("failed", error=f"exit {done.rc}: {why}", rc=done.rc, argv=argv)
    try:
        metrics = program.read(done.out)
    except ParseError as e:
        return engine.CellRun("failed", error=f"cannot read {program.name}'s output: {e}",
                              rc=done.rc, argv=argv)
    sample = {"schema": SCHEMA, "workload": cell.workload, "warmup": False, "sample": 0,
              "params": {"source": str(tree / program.path), "defines": dict(defs)},
              "metrics": metrics, "latency": {}, "counters": {},
              "notes": {"argv": " ".join([program.name] + args)},
              "raw": {"stdout": done.out, "stderr": done.err},
              "env": dict(peers._env()), "start": peers._iso(t0), "end": peers._iso(t1),
              "elapsed_s": round(t1 - t0, 6)}
    if program.name == "pipe_bench":
        # Where the engine keeps a write's latency, so a view reads both the same way.
        sample["latency"] = {"write": {"mean": metrics["lat_avg_ns"]["value"],
                                       "max": metrics["lat_max_ns"]["value"]}}
    return engine.CellRun("ok", samples=[sample], rc=0, argv=argv)
