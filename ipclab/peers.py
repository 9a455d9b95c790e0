# SPDX-License-Identifier: MIT
"""Live peers: established tools from Debian's packages, run as cells beside the ipcbench
cells that do the same work.

A peer is a cell whose runner is an external program: its argv, and a parser that turns
the program's output into one sample of the engine's JSON shape (metrics with unit and
better, env, start, end), so that results, compare and report treat it like any cell.
Each pair names the ipcbench cell that does the same work and the figures both report in
the same unit; `ipclab run peers` runs both, interleaved round by round.

This module owns the peer programs' command lines and parsers; the engine's cells are
still run by ipclab/engine.py.
"""

import functools
import json
import os
import platform
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ipclab import Error, engine, envinfo, proc

PREFIX = "peer:"            # a peer cell's workload: "peer:" + the pair's name
SCHEMA = "ipclab-peer/1"

# The Debian package of each program (scripts/install-deps.sh installs them).
PACKAGES = {"perf": "linux-perf", "stress-ng": "stress-ng", "pmqtest": "rt-tests",
            "taskset": "util-linux"}

MIB_PER_MB = 1e6 / 2 ** 20      # stress-ng's "MB" is 2^20 bytes (its MB constant)


class ParseError(ValueError):
    """The program's output is not what its parser knows."""


def number(pattern, text, what):
    m = re.search(pattern, text, re.MULTILINE)
    if not m:
        raise ParseError(f"no {what} in its output")
    try:
        return float(m.group(1))
    except ValueError:
        raise ParseError(f"{what} is not a number: {m.group(1)!r}") from None


def metric(value, unit, better="none"):
    return {"value": value, "unit": unit, "better": better}


# ---- perf bench ---------------------------------------------------------------------------


def read_perf_pipe(text, args, files):
    """`perf bench sched pipe`: N round trips between two processes (an "op" is one
    write+read on each side), "usecs/op" to 6 decimals."""
    us = number(r"^\s*([0-9.]+)\s+usecs/op", text, "usecs/op")
    if us <= 0:
        raise ParseError(f"usecs/op is {us:g}")
    ops = number(r"Executed\s+(\d+)\s+pipe operations", text, "operation count")
    return {"round_trips_per_s": metric(1e6 / us, "round trips/s", "higher"),
            "us_per_round_trip": metric(us, "us"),
            "round_trips": metric(ops, "round trips")}


def _option(args, short, long, default):
    """The value of -X N / --long N / --long=N in an argv, or default."""
    for i, a in enumerate(args):
        if a in (short, long) and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(long + "="):
            return a.split("=", 1)[1]
    return default


def read_perf_messaging(text, args, files):
    """`perf bench sched messaging`: per group, S senders each write `loops` messages of
    100 bytes to each of S receivers, which read them; messages/s over its total time."""
    total = number(r"Total time:\s*([0-9.]+)\s*\[sec\]", text, "total time")
    per_group = number(r"#\s*(\d+)\s+sender and receiver processes per group", text,
                     "processes per group")
    groups = number(r"#\s*(\d+)\s+groups?\s*==", text, "group count")
    try:
        loops = int(_option(args, "-l", "--nr_loops", "100"))
    except ValueError:
        raise ParseError("its -l is not a number") from None
    if total <= 0:
        raise ParseError(f"total time is {total:g} s (too short to time: raise -l)")
    messages = groups * per_group * per_group * loops
    return {"messages_per_s": metric(messages / total, "messages/s", "higher"),
            "total_s": metric(total, "s"),
            "messages": metric(messages, "messages")}


# ---- stress-ng ----------------------------------------------------------------------------

_SNG = r"^stress-ng:\s*\w+:\s*\[\d+\]\s+"


def stress_ng_table(text, stressor):
    """stress-ng --metrics: {"bogo_ops", "real_s", "usr_s", "sys_s", "ops_per_s"} from the
    stressor's row, and {description: value} from its miscellaneous metrics."""
    row = re.search(_SNG + re.escape(stressor) + r"\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)"
                    r"\s+([0-9.]+)", text, re.MULTILINE)
    if not row:
        raise ParseError(f"no metrics row for stressor {stressor} (was --metrics given?)")
    ops, real, usr, sys_, rate = (float(x) for x in row.groups())
    misc = {}
    for m in re.finditer(_SNG + re.escape(stressor) + r"\s+([0-9.]+)\s+(.+?)\s*"
                         r"(?:\((?:geometic|geometric|harmonic|arithmetic)[^)]*\))?\s*$",
                         text, re.MULTILINE):
        misc[m.group(2).strip()] = float(m.group(1))
    return {"bogo_ops": ops, "real_s": real, "usr_s": usr, "sys_s": sys_, "ops_per_s": rate,
            "misc": misc}


def _misc(table, starts, stressor):
    for k, v in table["misc"].items():
        if k.startswith(starts):
            return v
    raise ParseError(f"stress-ng {stressor} printed no '{starts} ...' metric")


def _stress_ng_common(t):
    if t["bogo_ops"] <= 0 or t["real_s"] <= 0 or t["ops_per_s"] <= 0:
        raise ParseError(f"no operations counted ({t['bogo_ops']:g} in {t['real_s']:g} s)")
    return {"bogo_ops": metric(t["bogo_ops"], "bogo ops"),
            "real_s": metric(t["real_s"], "s"),
            "cpu_s": metric(t["usr_s"] + t["sys_s"], "s")}


def read_stress_ng_pipe(text, args, files):
    """Writer and reader processes, one write of --pipe-data-size bytes per bogo op; its
    write rate is timed around the writer's loop."""
    t = stress_ng_table(text, "pipe")
    common = _stress_ng_common(t)
    rate = _misc(t, "MB per sec pipe write rate", "pipe")
    return {"throughput": metric(rate / MIB_PER_MB, "MB/s", "higher"),
            "ops_per_s": metric(t["ops_per_s"], "bogo ops/s"), **common}


def read_stress_ng_pipeherd(text, args, files):
    """101 processes read, increment and write back one 8-byte counter on one pipe; a bogo
    op is one pass, and real time includes forking and killing the herd."""
    t = stress_ng_table(text, "pipeherd")
    common = _stress_ng_common(t)
    out = {"transfers_per_s": metric(t["ops_per_s"], "transfers/s", "higher"),
           "us_per_transfer": metric(1e6 / t["ops_per_s"], "us")}
    # It prints switches per op to two decimals, too coarse near 0.02: switches per second
    # (more digits) times its real time over its ops is the same figure, within its
    # fork and kill.
    per_s = [v for k, v in t["misc"].items() if k.startswith("context switches per sec")]
    cs = [v for k, v in t["misc"].items() if k.startswith("context switches per bogo op")]
    if per_s:
        out["cs_per_transfer"] = metric(per_s[0] * t["real_s"] / t["bogo_ops"], "switches")
    elif cs:
        out["cs_per_transfer"] = metric(cs[0], "switches")
    return {**out, **common}


def read_stress_ng_mq(text, args, files):
    """A sender and a receiver process on one POSIX queue; a bogo op is one message."""
    t = stress_ng_table(text, "mq")
    common = _stress_ng_common(t)
    return {"ns_per_message": metric(1e9 / t["ops_per_s"], "ns", "lower"),
            "ops_per_s": metric(t["ops_per_s"], "messages/s"), **common}


def _read_stress_ng_rate(stressor, starts):
    def read(text, args, files):
        t = stress_ng_table(text, stressor)
        common = _stress_ng_common(t)
        mib = _misc(t, starts, stressor)
        return {"throughput": metric(mib / 1024, "GiB/s", "higher"),
                "ops_per_s": metric(t["ops_per_s"], "bogo ops/s"), **common}
    read.__doc__ = f"stress-ng {stressor}: its '{starts}' metric, in GiB/s."
    return read


# ---- rt-tests -----------------------------------------------------------------------------


def read_pmqtest(text, args, files):
    """pmqtest: a sender thread stamps a message, the receiver blocked in mq_receive()
    measures how long it took to get it; the average over the loops, in ns. The JSON file
    has 0.1 us; the text summary whole microseconds."""
    avg = None
    raw = files.get("json")
    if raw:
        try:
            data = json.loads(raw)
            threads = data.get("thread", {})
            avgs = [float(t["receiver"]["avg"]) for t in threads.values()]
            avg = sum(avgs) / len(avgs) if avgs else None
        except (ValueError, KeyError, TypeError, AttributeError, ZeroDivisionError):
            avg = None
    if avg is None:
        avg = number(r"Avg\s+([0-9.]+)", text, "Avg latency")
    return {"latency_ns": metric(avg * 1000, "ns", "lower"),
            "max_ns": metric(number(r"Max\s+([0-9.]+)", text, "Max latency") * 1000, "ns")}


# ---- the pairs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Measure:
    """One figure both sides report in the same unit."""
    label: str
    ours: str               # metric path in the ipcbench cell's samples
    peer: str               # metric path in the peer's samples
    seed: tuple = ()        # (suite, view id, row, column) of the seed table entry it stands in


@dataclass(frozen=True)
class PeerCommand:
    name: str               # the peer cell is "peer/" + name
    tool: str
    args: tuple             # after the tool; "{json}" is a file the tool writes
    read: object            # (output text, args, {"json": text}) -> metrics
    ours: tuple             # (key, workload, engine args) of the matching ipcbench cell
    measures: tuple
    differs: str            # what the two programs do differently
    est_s: float = 1.0      # seconds per sample, both sides
    pin: str = ""           # run the program under `taskset -c PIN`

    @property
    def key(self):
        return "peer/" + self.name

    @property
    def argv(self):
        return (["taskset", "-c", self.pin] if self.pin else []) + [self.tool] + list(self.args)

    @property
    def workload(self):
        return PREFIX + self.name

    @property
    def command(self):
        return " ".join(self.argv[:len(self.argv) - len(self.args) + 3])


_SKIP = "seed-skip-wakeups"

# Each pair runs the same work on both sides: the engine has every peer's shape
# (bench/README.md, "Workload shapes of the live peers"). `differs` says only what is
# left: what the peer does that the engine does not, or times that the engine does not.
PAIRS = (
    PeerCommand("perf-sched-pipe", "perf", ("bench", "sched", "pipe", "-l", "20000"), read_perf_pipe,
         ("pipe-context/copies=1", "pipe-context", ("--copies", "1", "--count", "20000")),
         (Measure("round trips/s", "metrics.round_trips_per_s", "metrics.round_trips_per_s",
                  (_SKIP, "unixbench", "pipe context (round trips/s)", "copies=1")),),
         "unpinned, where the scheduler puts the two sides decides most of either figure;"
         " perf passes 4 bytes and its clock covers forking and reaping its second process,"
         " ipcbench passes 8 and times the loop",
         est_s=1.0),
    # Five times the loops of the unpinned pair: perf's clock also covers forking and
    # reaping its second process, which took 1-30 ms here on a busy machine (-l 10).
    PeerCommand("perf-sched-pipe-cpu0", "perf", ("bench", "sched", "pipe", "-l", "100000"),
         read_perf_pipe,
         ("pipe-context/cpus=0,0", "pipe-context",
          ("--copies", "1", "--cpus", "0,0", "--count", "100000")),
         (Measure("round trips/s", "metrics.round_trips_per_s",
                  "metrics.round_trips_per_s"),),
         "both sides on CPU 0; perf's clock covers forking and reaping its second process",
         est_s=1.5, pin="0"),
    PeerCommand("perf-sched-messaging", "perf",
         ("bench", "sched", "messaging", "--pipe", "-g", "1", "-l", "1000"),
         read_perf_messaging,
         ("messaging/g=1,20x20", "messaging",
          ("--groups", "1", "--senders", "20", "--receivers", "20", "--loops", "1000")),
         (Measure("messages/s", "metrics.messages_per_s", "metrics.messages_per_s"),),
         "perf's clock also covers the exits of its 40 children, each a copy of perf: with -l 1"
         " its total was 26 ms against ipcbench's 3.7 ms (medians of 5, load 12), which raises"
         " ours/peer by about 3% at -l 1000; perf prints whole milliseconds",
         est_s=1.0),
    PeerCommand("stress-ng-pipe", "stress-ng", ("--pipe", "1", "--pipe-ops", "200000", "--metrics"),
         read_stress_ng_pipe,
         ("pipe-sweep/packet,512B", "pipe-sweep",
          ("--writers", "1", "--readers", "1", "--write-size", "512", "--pipe-size", "64K",
           "--packet", "--fill", "--no-latency", "--count", "200000")),
         (Measure("MB/s", "metrics.throughput", "metrics.throughput"),),
         "unpinned; stress-ng times its writer's loop, ipcbench from the start to the"
         " reader's last read",
         est_s=1.0),
    PeerCommand("stress-ng-pipe-cpu0", "stress-ng",
         ("--pipe", "1", "--pipe-ops", "200000", "--metrics"),
         read_stress_ng_pipe,
         ("pipe-sweep/packet,512B,cpus=0,0", "pipe-sweep",
          ("--writers", "1", "--readers", "1", "--write-size", "512", "--pipe-size", "64K",
           "--packet", "--fill", "--no-latency", "--count", "200000", "--cpus", "0,0")),
         (Measure("MB/s", "metrics.throughput", "metrics.throughput"),),
         "both processes on CPU 0 (taskset for stress-ng, --cpus 0,0 for ipcbench)",
         est_s=1.0, pin="0"),
    PeerCommand("stress-ng-pipeherd", "stress-ng", ("--pipeherd", "1", "--timeout", "3", "--metrics"),
         read_stress_ng_pipeherd,
         ("token-ring/herd=101", "token-ring",
          ("--procs", "101", "--no-decoy", "--packet", "--duration", "3",
           "--counters", "rusage")),
         (Measure("transfers/s", "params.transfers / metrics.elapsed_s",
                  "metrics.transfers_per_s"),
          Measure("context switches per transfer", "metrics.cs_per_transfer",
                  "metrics.cs_per_transfer")),
         "stress-ng's clock also covers forking and killing the herd: ipcbench's fork_s + reap_s"
         " were 1.1% of its elapsed_s (median of 10, load 16); stress-ng's token is 8 bytes,"
         " ipcbench's 4",
         est_s=3.5),
    PeerCommand("stress-ng-mq", "stress-ng", ("--mq", "1", "--mq-ops", "100000", "--metrics"),
         read_stress_ng_mq,
         ("mq-latency/stream,process", "mq-latency",
          ("--receiver", "process", "--stream", "--priorities", "random", "--count",
           "100000")),
         (Measure("ns per message", "metrics.ns_per_message", "metrics.ns_per_message"),),
         "stress-ng's receiver also makes three failing calls per message (two bad descriptors,"
         " one short buffer; strace: 3 of its 4 receives fail), 0.39 us of CPU per message"
         " here; they slow its receiver, and it then switches 0.86 times per message against"
         " ipcbench's 0.4 and spends 4.5 against 2.4 us of CPU per message (perf software"
         " counters, 3 runs each, load 12): its figure is not the time a message takes",
         est_s=1.0),
    PeerCommand("stress-ng-mq-cpu0", "stress-ng", ("--mq", "1", "--mq-ops", "100000", "--metrics"),
         read_stress_ng_mq,
         ("mq-latency/stream,process,cpus=0,0", "mq-latency",
          ("--receiver", "process", "--stream", "--priorities", "random", "--count",
           "100000", "--cpus", "0,0")),
         (Measure("ns per message", "metrics.ns_per_message", "metrics.ns_per_message"),),
         "both processes on CPU 0; stress-ng's receiver also makes three failing calls per"
         " message, and on one CPU it then switches 0.86 times per message against"
         " ipcbench's 0.37-0.49 (perf software counters, 3 runs each, load 12)",
         est_s=1.0, pin="0"),
    PeerCommand("stress-ng-vm-splice", "stress-ng",
         ("--vm-splice", "1", "--vm-splice-ops", "50000", "--metrics"),
         _read_stress_ng_rate("vm-splice", "MB per sec vm-splice rate"),
         ("splice-chain/vmsplice", "splice-chain",
          ("--chain", "vmsplice", "--count", "50000")),
         (Measure("GiB/s", "metrics.call_throughput", "metrics.throughput"),),
         "none in the calls: both time the two vmsplice calls of each round",
         est_s=1.0),
    PeerCommand("stress-ng-splice", "stress-ng", ("--splice", "1", "--splice-ops", "25000", "--metrics"),
         _read_stress_ng_rate("splice", "MB per sec splice rate"),
         ("splice-chain/splice", "splice-chain", ("--chain", "splice", "--count", "25000")),
         (Measure("GiB/s", "metrics.call_throughput", "metrics.throughput"),),
         "stress-ng sizes each pipe at random (64-256 KiB), adds a 1-byte splice and seven"
         " failing or empty calls per round, and ping-pongs a page between two more pipes;"
         " only the two timed splices count",
         est_s=1.0),
    PeerCommand("stress-ng-tee", "stress-ng", ("--tee", "1", "--tee-ops", "5000", "--metrics"),
         _read_stress_ng_rate("tee", "MB per sec tee rate"),
         ("splice-chain/tee", "splice-chain", ("--chain", "tee", "--count", "5000")),
         (Measure("GiB/s", "metrics.call_throughput", "metrics.throughput"),),
         "unpinned, three processes on two CPUs; stress-ng's tee process also makes three"
         " tee calls that fail or move nothing per round",
         est_s=1.0),
    PeerCommand("stress-ng-tee-cpu0", "stress-ng", ("--tee", "1", "--tee-ops", "5000", "--metrics"),
         _read_stress_ng_rate("tee", "MB per sec tee rate"),
         ("splice-chain/tee,cpus=0,0", "splice-chain",
          ("--chain", "tee", "--count", "5000", "--cpus", "0,0")),
         (Measure("GiB/s", "metrics.call_throughput", "metrics.throughput"),),
         "all three processes on CPU 0; stress-ng's tee process also makes three tee calls"
         " that fail or move nothing per round",
         est_s=1.0, pin="0"),
    PeerCommand("pmqtest", "pmqtest", ("-l", "5000", "-i", "100", "-d", "0", "-q", "--json={json}"),
         read_pmqtest,
         ("mq-latency/wake,thread,100us", "mq-latency",
          ("--receiver", "thread", "--interval", "100", "--count", "5000")),
         (Measure("ns per message", "metrics.wake_latency_ns", "metrics.latency_ns"),),
         "unpinned; pmqtest reads the clock in microseconds (gettimeofday), locks its memory"
         " (mlockall) and asks for SCHED_FIFO priority 0, which the kernel refuses",
         est_s=1.0),
    PeerCommand("pmqtest-cpu0", "pmqtest",
         ("-l", "5000", "-i", "100", "-d", "0", "-q", "--json={json}"),
         read_pmqtest,
         ("mq-latency/wake,thread,100us,cpus=0,0", "mq-latency",
          ("--receiver", "thread", "--interval", "100", "--count", "5000", "--cpus", "0,0")),
         (Measure("ns per message", "metrics.wake_latency_ns", "metrics.latency_ns"),),
         "both threads on CPU 0; pmqtest's sender makes a getcpu() system call between its send"
         " and its wait, which the receiver on the same CPU waits for: 155 ns of CPU here"
         " (perf task-clock, 2M calls), about 4% of the latency; it reads the clock in"
         " microseconds",
         est_s=1.0, pin="0"),
)

BY_NAME = {p.name: p for p in PAIRS}


def cell_specs():
    """[(key, workload, args, est_s)]: each pair's ipcbench cell (once, where two pairs
    share it), then its peer cell."""
    out, seen = [], set()
    for p in PAIRS:
        key, workload, args = p.ours
        if key not in seen:
            seen.add(key)
            out.append((key, workload, list(args), p.est_s))
        out.append((p.key, p.workload, p.argv, p.est_s))
    return out


def workload_of(cell):
    """A suites.Cell's or a results cell's workload."""
    return cell.get("workload", "") if isinstance(cell, dict) else cell.workload


def is_peer(cell):
    return workload_of(cell).startswith(PREFIX)


def workloads():
    return {p.workload for p in PAIRS}


def pair_of(cell):
    return BY_NAME.get(workload_of(cell)[len(PREFIX):])


def argv_for(cell):
    return list(cell.args)


@functools.lru_cache(maxsize=None)
def _env():
    """The engine's env fields, for a peer's samples: where they ran."""
    return {"kernel": platform.release(), "cpu": envinfo.cpu_model(), "nproc": os.cpu_count(),
            "thp": envinfo.thp_mode(), "accel": os.environ.get("IPCBENCH_ACCEL", "native"),
            "clock": os.environ.get("IPCBENCH_CLOCK", "real"), "hostname": platform.node()}


def missing(tool):
    """Why a peer program cannot run here, or None."""
    if shutil.which(tool):
        return None
    pkg = PACKAGES.get(tool, tool)
    return (f"{tool} is not installed (Debian package {pkg}; scripts/install-deps.sh host"
            " installs it)")


def _iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


def run_cell(cell, env=None):
    """One sample of a peer cell, as engine.run_cell gives one of the engine's: skipped when
    the program is missing, failed when it fails or prints what its parser cannot read."""
    pair = pair_of(cell)
    argv = argv_for(cell)
    if pair is None or not argv:
        return engine.CellRun("failed", error=f"unknown peer {cell.workload!r}", rc=-1,
                              argv=argv)
    why = missing(argv[0]) or missing(pair.tool)
    if why:
        return engine.CellRun("skipped", error=why, rc=engine.EXIT_SKIP, argv=argv)
    limit = engine.cell_timeout(cell) + engine.WATCHDOG_GRACE_S
    with tempfile.TemporaryDirectory(prefix="ipclab-peer-") as tmp:
        jpath = Path(tmp, "out.json")
        argv = [a.replace("{json}", str(jpath)) for a in argv]
        t0 = time.time()
        try:
            done = proc.run(argv, limit, capture=True, env=env, cwd=tmp)
        except (OSError, Error) as e:
            return engine.CellRun("failed", error=f"cannot run {argv[0]}: {e}", rc=-1, argv=argv)
        t1 = time.time()
        files = {"json": jpath.read_text(errors="replace") if jpath.exists() else ""}
    if done.timed_out:
        return engine.CellRun("failed", error=f"timed out after {limit:g}s", rc=-9, argv=argv)
    text = done.out + "\n" + done.err
    if done.rc != 0:
        last = [l.strip() for l in text.splitlines() if l.strip()]
        return engine.CellRun("failed", error=f"exit {done.rc}: {last[-1] if last else 'no message'}",
                              rc=done.rc, argv=argv)
    try:
        metrics = pair.read(text, list(pair.args), files)
    except ParseError as e:
        return engine.CellRun("failed", error=f"cannot read {argv[0]}'s output: {e}",
                              rc=done.rc, argv=argv)
    sample = program_sample(SCHEMA, cell.workload, metrics, argv, t0, t1,
                            notes={"package": PACKAGES.get(argv[0], "")})
    return engine.CellRun("ok", samples=[sample], rc=0, argv=argv)


def program_sample(schema, workload, metrics, argv, t0, t1, notes):
    """One sample of the engine's shape from another program's run (a peer's, or an
    upstream benchmark's, ipclab/upstream.py) between times t0 and t1."""
    return {"schema": schema, "workload": workload, "warmup": False, "sample": 0,
            "params": {}, "metrics": metrics, "latency": {}, "counters": {},
            "notes": {"argv": " ".join(argv), **notes}, "env": dict(_env()),
            "start": _iso(t0), "end": _iso(t1), "elapsed_s": round(t1 - t0, 6)}
