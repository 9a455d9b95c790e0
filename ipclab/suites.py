# SPDX-License-Identifier: MIT
"""Suites: named lists of cells, each cell one engine invocation shape.  This module is the
only place a suite is named (SUITES, register) or resolved (resolve, members).

A cell is a workload plus its engine arguments.  Suites enumerate their cells
explicitly (the pipe sweep as 9 cells, the fast-pipes ladder as 5) so that the
scheduler can interleave repetitions of every cell.  Each seed suite also has
views: the tables the seed itself printed (writers x readers, the ladder, ...)
with the seed's published figures, which live in ipclab/reference/*.json.

What the engine offers (its workloads, the ladder's rungs, the sweep's grid) is the
engine's to say: cells and views are built from `ipcbench list --json` when first asked
for, so a suite's name and summary need no engine but its cells do. A results file keeps
the part its views need (engine.analysis_catalog, results.catalog), and views_for(catalog)
builds a stored file's tables from it, engine or not.
"""

import fnmatch
import functools
import json
import os
from dataclasses import dataclass, field, replace

from ipclab import ROOT, Error, engine, peers, upstream

REFERENCE_DIR = ROOT / "ipclab" / "reference"

QUICK, FULL = "quick", "full"


def workloads():
    """{name: summary}: what `run WORKLOAD` accepts, as the engine lists it."""
    return engine.workloads()


@dataclass
class Cell:
    key: str
    workload: str
    args: list
    suite: str = ""
    est_s: float = 1.0      # expected seconds per sample, for the ETA and the timeout
    timeout_s: float = 0.0  # engine --timeout; 0 = derived from est_s

    @property
    def timeout(self):
        return self.timeout_s or max(30.0, self.est_s * 10 + 20)


@dataclass
class View:
    """One seed-shaped table.

    rows: [(row label, [(cell key, metric path) per column])].  ref_key names
    the figure set in the suite's reference file; ref_cells maps each
    (row, column) to the key of its published figure in that set.
    """
    id: str
    title: str
    row_header: str
    columns: list
    rows: list
    unit: str = ""
    ref_key: str = ""
    ref_cells: dict = field(default_factory=dict)
    kind: str = "table"     # table | grid | ladder (decides the plot)
    scale: float = 1.0      # multiply engine values for display (e.g. s -> us)
    modes: tuple = (QUICK, FULL)


@dataclass
class Suite:
    """make_cells(mode) and make_views(catalog) are called when first needed: they may ask the
    engine what it offers."""
    name: str
    summary: str
    make_cells: object = None       # mode -> [Cell]
    make_views: object = None       # analysis catalog or None (ask the engine) -> [View]
    seed: str = ""                  # reference file stem, "" for none
    reps: dict = field(default_factory=lambda: {QUICK: 10, FULL: 10})
    warmups: int = 1
    thp: str = ""                   # THP mode a kernel-lab guest sets for it ("" = lab default)
    members: list = field(default_factory=list)     # a composite suite's suites

    def cells(self, mode):
        if self.members:
            return [c for s in self.members for c in s.cells(mode)]
        cells = [replace(c, suite=self.name) for c in self.make_cells(mode)]
        return cells

    @property
    def views(self):
        """The views as this checkout's engine builds them."""
        return self.views_for(None)

    def views_for(self, catalog):
        """The views built from an analysis catalog (engine.analysis_catalog, as a results
        file keeps it); None asks the engine."""
        return self.make_views(catalog) if self.make_views else []

    def reference(self):
        return load_reference(self.seed) if self.seed else None


@functools.lru_cache(maxsize=None)
def load_reference(stem):
    with open(REFERENCE_DIR / (stem + ".json")) as f:
        return json.load(f)


def ncpu():
    return os.cpu_count() or 1


# ---- seed-pipe-prealloc -------------------------------------------------

def _catalog(catalog):
    return catalog if catalog is not None else engine.analysis_catalog()


def sweep_grid(catalog=None):
    """(writers, readers): the seed's sweep, as the engine's --sweep runs it (or ran it, for
    a results file's catalog)."""
    grid = _catalog(catalog).get("sweep") or {}
    return tuple(grid.get("writers", ())), tuple(grid.get("readers", ()))


def _sweep_cells(duration, pressure=False):
    cells = []
    writers, readers = sweep_grid()
    for w in writers:
        for r in readers:
            key = f"pipe-sweep/{'pressure/' if pressure else ''}w={int(w)},r={int(r)}"
            args = ["--writers", str(w), "--readers", str(r), "--write-size", "64K",
                    "--pipe-size", "1M", "--duration", str(duration)]
            if pressure:
                # The seed's stress-ng --vm 2 --vm-bytes 50% --vm-keep.
                args += ["--memory-pressure", "--vm", "2", "--vm-bytes", "50%"]
            cells.append(Cell(key, "pipe-sweep", args, est_s=duration + 0.1 + 0.01 * (w + r)))
    return cells


def _sweep_view(catalog, vid, title, path, unit, ref_key, pressure=False, modes=(QUICK, FULL)):
    prefix = f"pipe-sweep/{'pressure/' if pressure else ''}"
    rows, ref = [], {}
    writers, readers = sweep_grid(catalog)
    for w in writers:
        cols = []
        for r in readers:
            cols.append((prefix + f"w={int(w)},r={int(r)}", path))
            ref[(str(w), f"readers={int(r)}")] = f"w={int(w)},r={int(r)}"
        rows.append((str(w), cols))
    return View(vid, title, "writers", [f"readers={int(r)}" for r in readers], rows, unit,
                ref_key, ref, kind="grid", modes=modes)


PIPE_PREALLOC = Suite(
    "seed-pipe-prealloc",
    "pipe sweep: writers {1,2,5} x readers {1,5,10}, 64 KiB writes, 1 MiB pipe"
    " (full adds the memory-pressure sweep)",
    seed="pipe-prealloc",
    # The seed's own sizes: 10 s per config, 6 s under memory pressure.
    make_cells=lambda mode: _sweep_cells(0.25) if mode == QUICK else
    _sweep_cells(10.0) + _sweep_cells(6.0, pressure=True),
    make_views=lambda cat: [
        _sweep_view(cat, "throughput", "Throughput in MB/s", "metrics.throughput", "MB/s",
                    "throughput"),
        _sweep_view(cat, "latency", "Avg write latency in ns", "latency.write.mean", "ns",
                    "latency"),
        _sweep_view(cat, "pressure-throughput", "Under memory pressure: throughput in MB/s",
                    "metrics.throughput", "MB/s", "pressure-throughput", True, (FULL,)),
        _sweep_view(cat, "pressure-latency", "Under memory pressure: avg write latency in ns",
                    "latency.write.mean", "ns", "pressure-latency", True, (FULL,)),
    ],
)

# ---- seed-exclusive-waits -----------------------------------------------


def _token_cells(transfers):
    return [Cell("token-ring/procs=64", "token-ring",
                 ["--procs", "64", "--transfers", str(transfers)],
                 est_s=0.3 + transfers * 3e-6)]


_TOKEN_KEY = "token-ring/procs=64"
EXCLUSIVE_WAITS = Suite(
    "seed-exclusive-waits",
    "64 processes pass one token (plus a decoy) through one pipe: context switches,"
    " migrations and time per transfer",
    seed="exclusive-waits",
    make_cells=lambda mode: _token_cells(50000 if mode == QUICK else 1000000),
    make_views=lambda cat: [
        View("token", "Token passing, 64 processes, per transfer", "", ["per transfer"], [
            ("context switches", [(_TOKEN_KEY, "metrics.cs_per_transfer")]),
            ("cpu migrations", [(_TOKEN_KEY, "counters.cpu_migrations / params.transfers")]),
            ("elapsed (us)", [(_TOKEN_KEY, "metrics.elapsed_s / params.transfers * 1e6")]),
            ("task clock (us)", [(_TOKEN_KEY,
                                  "counters.task_clock_ns / params.transfers * 1e-3")]),
        ], ref_key="token", ref_cells={
            ("context switches", "per transfer"): "cs_per_transfer",
            ("cpu migrations", "per transfer"): "migrations_per_transfer",
            ("elapsed (us)", "per transfer"): "elapsed_us_per_transfer",
            ("task clock (us)", "per transfer"): "task_clock_us_per_transfer",
        }),
    ],
)

# ---- seed-skip-wakeups --------------------------------------------------


def _unixbench_cells(duration):
    cells = []
    # On one CPU "one copy per CPU" is the one-copy cell again: not worth running twice
    # (a deterministic guest has one vCPU, and every sample takes ten times its length).
    copies = (("1", 1), ("ncpu", ncpu())) if ncpu() > 1 else (("1", 1),)
    for wl in ("pipe-throughput", "pipe-context"):
        for label, n in copies:
            cells.append(Cell(f"{wl}/copies={label}", wl,
                              ["--copies", str(n), "--duration", str(duration)],
                              est_s=duration + 0.2))
    return cells


SKIP_WAKEUPS = Suite(
    "seed-skip-wakeups",
    "UnixBench pipe throughput and pipe context switching, one copy and one per CPU",
    seed="skip-wakeups",
    make_cells=lambda mode: _unixbench_cells(0.5 if mode == QUICK else 2.0),
    make_views=lambda cat: [
        View("unixbench", "UnixBench-style pipe tests (copies=ncpu: one per CPU)", "test",
             ["copies=1", "copies=ncpu"], [
                 ("pipe throughput (loops/s)", [("pipe-throughput/copies=1", "primary"),
                                                ("pipe-throughput/copies=ncpu", "primary")]),
                 # UnixBench's index is result / base * 10, base 12440 lps for
                 # "pipe" and 4000 for "context1" (pgms/index.base): the unit
                 # the seed published in.
                 ("pipe throughput (index)", [
                     ("pipe-throughput/copies=1", f"primary * {10 / 12440:.12g}"),
                     ("pipe-throughput/copies=ncpu", f"primary * {10 / 12440:.12g}")]),
                 ("pipe context (round trips/s)", [("pipe-context/copies=1", "primary"),
                                                   ("pipe-context/copies=ncpu", "primary")]),
                 ("pipe context (index)", [
                     ("pipe-context/copies=1", f"primary * {10 / 4000:.12g}"),
                     ("pipe-context/copies=ncpu", f"primary * {10 / 4000:.12g}")]),
             ], ref_key="index", ref_cells={
                 ("pipe throughput (index)", "copies=1"): "pipe-throughput/copies=1",
                 ("pipe throughput (index)", "copies=ncpu"): "pipe-throughput/copies=ncpu",
             }),
    ],
)

# ---- seed-fast-pipes ----------------------------------------------------

# How each of the engine's ladder rungs reads in a table (the rungs themselves, and the
# options that make them, are the engine's: `ipcbench list --json`).
RUNG_LABELS = {
    "write-read": "write/read",
    "vmsplice-read": "vmsplice -> read",
    "vmsplice-splice": "vmsplice -> splice",
    "huge-pages": "+ huge pages",
    "busy-loop": "+ busy loop",
}
# Not a rung of the post's ladder but its aside: vmsplice'd pages nobody touches.
DONT_TOUCH = ("dont-touch", "vmsplice -> splice, pages untouched",
              ["--write", "vmsplice", "--read", "splice", "--dont-touch"])


def ladder(catalog=None):
    """[(step, label, engine args)]: the engine's rungs in its order (or a results file's
    catalog's), then the aside."""
    steps = []
    for rung in _catalog(catalog).get("ladder") or []:
        name = rung["rung"]
        if name not in RUNG_LABELS:
            raise Error(f"the engine's ladder has a rung {name!r} that suites.RUNG_LABELS"
                        " does not name")
        steps.append((name, RUNG_LABELS[name], list(rung["args"])))
    return steps + [DONT_TOUCH]


def _ladder_cells(duration):
    # A duration, not --bytes: the rungs differ 50x in speed, and a fixed
    # time keeps every rung's sample long enough without making the slow
    # rungs dominate the run.
    cells = []
    for step, _, args in ladder():
        cells.append(Cell("fastpipe/" + step, "fastpipe",
                          args + ["--buf-size", "256K", "--duration", str(duration),
                                  "--cpus", "0,1"],
                          est_s=duration + 0.15))
    return cells


def _ladder_views(catalog):
    steps = ladder(catalog)
    return [View("ladder", "Pipe throughput ladder in GiB/s", "step", ["GiB/s"],
                 [(label, [("fastpipe/" + step, "metrics.throughput")])
                  for step, label, _ in steps],
                 unit="GiB/s", ref_key="ladder",
                 ref_cells={(label, "GiB/s"): step for step, label, _ in steps},
                 kind="ladder")]


FAST_PIPES = Suite(
    "seed-fast-pipes",
    "256 KiB buffers through a pipe: write/read, vmsplice, splice, huge pages, busy loop,"
    " and the untouched-pages effect",
    seed="fast-pipes",
    make_cells=lambda mode: _ladder_cells(0.3 if mode == QUICK else 2.0),
    # The huge-pages rung asks for huge pages with madvise(); "never" would refuse them.
    thp="madvise",
    make_views=_ladder_views,
)

# ---- seed-mqueue-cache --------------------------------------------------

PRIORITIES = ("constant", "increasing", "decreasing", "random")


def _mq_cells(duration):
    return [Cell("mq-latency/prio=" + p, "mq-latency",
                 ["--priorities", p, "--duration", str(duration)], est_s=duration + 0.1)
            for p in PRIORITIES]


MQUEUE_CACHE = Suite(
    "seed-mqueue-cache",
    "POSIX mqueue send/recv ns per message, queue empty and queue full, by priority pattern",
    seed="mqueue-cache",
    make_cells=lambda mode: _mq_cells(0.2 if mode == QUICK else 2.0),
    make_views=lambda cat: [
        View("empty", "Queue empty: ns per message", "op", ["ns"], [
            ("send", [("mq-latency/prio=constant", "metrics.empty_send_ns")]),
            ("recv", [("mq-latency/prio=constant", "metrics.empty_recv_ns")]),
        ], unit="ns", ref_key="empty",
            ref_cells={("send", "ns"): "send", ("recv", "ns"): "recv"}),
        View("full", "Queue full: ns per message, by priority pattern", "priorities",
             ["send", "recv"],
             [(p, [("mq-latency/prio=" + p, "metrics.full_send_ns"),
                   ("mq-latency/prio=" + p, "metrics.full_recv_ns")]) for p in PRIORITIES],
             unit="ns"),
    ],
)

SEED_SUITES = [PIPE_PREALLOC, EXCLUSIVE_WAITS, SKIP_WAKEUPS, FAST_PIPES, MQUEUE_CACHE]

# ---- engine-checks --------------------------------------------------------


def _engine_check_cells(duration):
    # The engine's own acceptance figures (bench/README.md, "Checks"):
    # run-to-run precision of pinned ping-pong and write/read, and the
    # ladder against the peer programs' figures.
    return [
        Cell("pipe-context/pinned", "pipe-context",
             ["--copies", "1", "--cpus", "0,1", "--duration", str(duration)],
             est_s=duration + 0.2),
    ] + _ladder_cells(duration)


ENGINE_CHECKS = Suite(
    "engine-checks",
    "engine acceptance: pinned precision, ladder vs peer programs",
    seed="fast-pipes",
    make_cells=lambda mode: _engine_check_cells(2.0),
    make_views=_ladder_views,
)


def _timing_overhead_cells(duration):
    # The same pinned 1x1 sweep cell with and without a clock read around
    # every write.  Two cells only, so that each round is one adjacent pair
    # and a drift of the machine cancels in the pair's ratio; many short
    # pairs, because a single 1 s run of this cell varies by about 5% here.
    sweep = ["--writers", "1", "--readers", "1", "--write-size", "64K", "--pipe-size", "1M",
             "--cpus", "0,1", "--duration", str(duration)]
    return [
        Cell("pipe-sweep/1x1/timed", "pipe-sweep", sweep, est_s=duration + 0.1),
        Cell("pipe-sweep/1x1/untimed", "pipe-sweep", sweep + ["--no-latency"],
             est_s=duration + 0.1),
    ]


TIMING_OVERHEAD = Suite(
    "timing-overhead",
    "engine acceptance: how much timing every write slows pipe-sweep 1x1, in adjacent pairs",
    make_cells=lambda mode: _timing_overhead_cells(1.0),
    reps={QUICK: 60, FULL: 60},
)


def _quick_seed_cells(picks):
    # The same cells, arguments and keys as the quick seed suites, so that their A/A floors
    # apply.
    return [c for s in SEED_SUITES for c in s.make_cells(QUICK) if c.key in picks]


def _icount_check_cells():
    # one per workload the deterministic mode measures on one vCPU
    return _quick_seed_cells({"pipe-throughput/copies=1", "pipe-context/copies=1",
                              "mq-latency/prio=constant", "pipe-sweep/w=1,r=1"})


ACCEPTANCE = Suite(
    "acceptance",
    "the deterministic acceptance table's cells (docs/lab.md), from the quick seed suites:"
    " pipe loop, ping-pong, sweep 1x1 2x1 5x1 5x10, token ring, mqueue by priority pattern",
    make_cells=lambda mode: _quick_seed_cells({
        "pipe-throughput/copies=1", "pipe-context/copies=1", "pipe-sweep/w=1,r=1",
        "pipe-sweep/w=2,r=1", "pipe-sweep/w=5,r=1", "pipe-sweep/w=5,r=10",
        "token-ring/procs=64", "mq-latency/prio=constant", "mq-latency/prio=increasing",
        "mq-latency/prio=decreasing", "mq-latency/prio=random"}),
    reps={QUICK: 9, FULL: 9},
)



def _smp_cells():
    # The acceptance table's ping-pong and sweep cells with the two sides pinned to CPUs 0 and
    # 1 (writers to 0, readers to 1), for guests of 2 or more vCPUs. Keys of their own, so
    # that their A/A floors are not mixed with the unpinned cells'.
    out = []
    for c in _quick_seed_cells({"pipe-context/copies=1", "pipe-sweep/w=1,r=1",
                                "pipe-sweep/w=5,r=1"}):
        out.append(Cell(c.key + ",cpus=0+1", c.workload, c.args + ["--cpus", "0,1"],
                        est_s=c.est_s))
    return out


ACCEPTANCE_SMP = Suite(
    "acceptance-smp",
    "the acceptance table's ping-pong and 64 KiB sweep cells (1x1, 5x1) with writers pinned to"
    " CPU 0 and readers to CPU 1: for guests of 2 or more vCPUs (vm run/ab --cpus N)",
    make_cells=lambda mode: _smp_cells(),
    reps={QUICK: 9, FULL: 9},
)


ICOUNT_CHECK = Suite(
    "icount-check",
    "the deterministic mode's own check (kernel lab, --deterministic): pipe write+read loop,"
    " ping-pong, mqueue send/recv and pipe-sweep 1x1, one cell each",
    make_cells=lambda mode: _icount_check_cells(),
    reps={QUICK: 9, FULL: 9},
)

SEEDS = Suite("seeds", "all five seed suites", members=SEED_SUITES)

# ---- peers --------------------------------------------------------------------------------

PEERS = Suite(
    "peers",
    "live peers: perf bench, stress-ng and pmqtest beside the ipcbench cells that do the same"
    " work, interleaved round by round (ipclab/peers.py)",
    make_cells=lambda mode: [Cell(k, w, a, est_s=e) for k, w, a, e in peers.cell_specs()],
)

# ---- upstream's own benchmarks ------------------------------------------------------------


def _grid_view(vid, title, prefix, suffix, path, unit, writers, readers):
    """A writers x readers table of cells keyed PREFIXw=W,r=RSUFFIX."""
    rows = [(str(w), [(f"{prefix}w={w},r={r}{suffix}", path) for r in readers])
            for w in writers]
    return View(vid, title, "writers", [f"readers={r}" for r in readers], rows, unit,
                kind="grid")


def _pipe_bench_views(pressure):
    w, r = (1, 2, 5), (1, 5, 10)
    views = [_grid_view("pipe_bench-throughput", "pipe_bench: throughput in MB/s",
                        "pipe_bench/", "", "metrics.throughput", "MB/s", w, r),
             _grid_view("pipe_bench-latency", "pipe_bench: avg write latency in ns",
                        "pipe_bench/", "", "metrics.write_lat_avg_ns", "ns", w, r)]
    if pressure:
        views += [_grid_view("pipe_bench-pressure-throughput",
                             "pipe_bench under --memory-pressure: throughput in MB/s",
                             "pipe_bench/", ",pressure", "metrics.throughput", "MB/s", w, r)]
    return views


def _cell(key, workload, args, est_s):
    return Cell(key, workload, args, est_s=est_s)


UPSTREAM_PIPE = Suite(
    "upstream-pipe",
    "upstream's pipe benchmark, tools/testing/selftests/pipe/pipe_bench.c built from the kernel"
    " source: its sweep, writers {1,2,5} x readers {1,5,10} (full adds it under its"
    " --memory-pressure) (ipclab/upstream.py)",
    # pipe_bench takes whole seconds; the seed ran 10 s per configuration. Its pressure is
    # stress-ng --vm 4 --vm-bytes 80% of the machine's memory: not for a quick look.
    make_cells=lambda mode: [c for c in upstream.pipe_bench_cells(1 if mode == QUICK else 10,
                                                                   _cell)
                             if mode == FULL or not c.key.endswith(",pressure")],
    make_views=lambda cat: _pipe_bench_views(pressure=True),
)

# The two engines on the same sweep, interleaved: what each says of the same configurations.
PIPE_BENCH_BESIDE = Suite(
    "pipe-bench-beside",
    "pipe_bench and ipcbench's pipe-sweep on the same sweep, 1 s per configuration, no memory"
    " pressure, interleaved round by round",
    make_cells=lambda mode: _sweep_cells(1.0) + [
        c for c in upstream.pipe_bench_cells(1, _cell) if not c.key.endswith(",pressure")],
    make_views=lambda cat: _pipe_bench_views(pressure=False) + [
        _sweep_view(cat, "throughput", "ipcbench pipe-sweep: throughput in MB/s",
                    "metrics.throughput", "MB/s", ""),
        _sweep_view(cat, "latency", "ipcbench pipe-sweep: avg write latency in ns",
                    "latency.write.mean", "ns", "")],
)

UPSTREAM_MQUEUE = Suite(
    "upstream-mqueue", "upstream's tools/testing/selftests/mqueue/mq_perf_tests.c built from the"
    " kernel source (quick: a tenth of its loops; full: its real size)",
    make_cells=lambda mode: [upstream.mq_perf_cell(mode == FULL, _cell)],
    reps={QUICK: 3, FULL: 5}, warmups=0)

UPSTREAM = Suite(
    "upstream", "pipe_bench's sweep, mq_perf_tests, and perf bench sched pipe (a peers cell)",
    make_cells=lambda mode: UPSTREAM_PIPE.cells(mode) + UPSTREAM_MQUEUE.cells(mode) + [
        Cell(p.key, p.workload, p.argv, est_s=p.est_s) for p in [peers.BY_NAME["perf-sched-pipe"]]])

SUITES = {}


def register(suite):
    """Make a suite known by its name to run, show, compare, report and the lab."""
    if suite.name in SUITES:
        raise ValueError(f"suite {suite.name!r} is defined twice")
    SUITES[suite.name] = suite
    return suite


for _s in SEED_SUITES + [SEEDS, PEERS, ENGINE_CHECKS, TIMING_OVERHEAD, ICOUNT_CHECK, ACCEPTANCE,
           ACCEPTANCE_SMP, UPSTREAM_PIPE, PIPE_BENCH_BESIDE, UPSTREAM_MQUEUE, UPSTREAM]:
    register(_s)


def workload_suite(workload, extra_args=(), duration=None):
    """An ad-hoc suite of one cell: `ipclab run WORKLOAD [-- engine args]`."""
    args = list(extra_args)
    if duration is not None and "--duration" not in args:
        args += ["--duration", str(duration)]
    key = workload + ("/" + " ".join(extra_args) if extra_args else "")
    cell = Cell(key, workload, args, est_s=(duration or 1.0) + 0.1)
    return Suite(workload, workloads().get(workload, ""), make_cells=lambda mode: [cell])


def unknown(name):
    return Error(f"unknown suite or workload {name!r} (suites: {', '.join(SUITES)};"
                 f" workloads: {', '.join(workloads())})")


def check(name):
    """Error (exit 2) unless `name` is a suite or a workload of the engine."""
    if name not in SUITES and name not in workloads():
        raise unknown(name)


def resolve(name, extra_args=()):
    """The suite `run NAME [-- engine args]` runs: a suite, or one workload as a suite."""
    if name in SUITES:
        if extra_args:
            raise Error(f"engine arguments after -- apply to a workload, not suite {name}")
        return SUITES[name]
    if name in workloads():
        return workload_suite(name, extra_args)
    raise unknown(name)


def _names(key, wanted):
    # A key names one cell: `pipe-sweep/w=1,r=1` is not also `w=1,r=10`. Several cells
    # take a pattern that says it is one (`pipe-sweep/*`).
    return key == wanted or (any(ch in wanted for ch in "*?[") and
                             fnmatch.fnmatchcase(key, wanted))


def select(cells, wanted):
    """The cells named in `wanted`, in the suite's order: each a cell's key, or a glob of
    keys (`pipe-sweep/w=1,*`). Error (exit 2) for an empty name or one no cell has."""
    for w in wanted:
        if not w:
            raise Error("--cell '': give a cell's key, or a glob of keys such as"
                        " 'pipe-sweep/*'")
        if not any(_names(c.key, w) for c in cells):
            raise Error(f"--cell {w}: no cell has that key, nor matches it as a glob (cells:"
                        f" {', '.join(c.key for c in cells)})")
    return [c for c in cells if any(_names(c.key, w) for w in wanted)]


def members(name):
    """The suites whose views a results file of suite `name` is shown in: its own, or a
    composite's members; none for an ad-hoc workload run."""
    s = SUITES.get(name)
    if s is None:
        return []
    return list(s.members or [s])
