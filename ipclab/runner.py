# SPDX-License-Identifier: MIT
"""Run a suite: the run plan (which cells, how often, in what order), the engine called for
each sample, and the results file saved after every sample.

A run can have two sides (`run --side A=... --side B=...`): two engines, two builds of one,
or two sets of engine arguments.  Both run in one schedule, each slot on A and B back to
back, and each side keeps its own results file; the two files name each other, and their
samples carry the round that pairs them (compare.py)."""

import dataclasses
import fcntl
import hashlib
import os
import random
import re
import shlex
import sys
from pathlib import Path

from ipclab import Error, engine, envinfo, peers, progress, proc, results, safeio, schedule
from ipclab import signals, suites, upstream


@dataclasses.dataclass
class Side:
    """What one side of a run needs: its results, its cells (res["cells"][i] belongs to
    cells[i]), its engine and its file.  A run without sides has one, named ""."""
    res: dict
    cells: list
    engine: str
    path: str
    name: str = ""


@dataclasses.dataclass(frozen=True)
class SideSpec:
    name: str
    engine: str         # "" for the default engine
    args: tuple         # engine arguments after every cell's own

    def __str__(self):
        return f"{self.name}={shlex.join(([self.engine] if self.engine else []) + list(self.args))}"


_SIDE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+-]*\Z")


def parse_side(text):
    """`NAME=[ENGINE] [ARGS...]`: the engine's path unless the first word is an option, then
    the engine arguments this side adds to every cell (the last of a repeated option wins
    in the engine)."""
    name, eq, spec = text.partition("=")
    if not eq or not _SIDE_NAME.match(name):
        raise Error(f"--side wants NAME=[ENGINE] [ENGINE ARGS], NAME of letters, digits, _ + -;"
                    f" got {text!r}")
    try:
        words = shlex.split(spec)
    except ValueError as e:
        raise Error(f"--side {name}: {e}") from None
    eng = words.pop(0) if words and not words[0].startswith("-") else ""
    return SideSpec(name, eng, tuple(words))


def check_sides(specs):
    if len(specs) != 2:
        raise Error(f"a run has two sides, A and B; got {len(specs)} --side")
    if specs[0].name == specs[1].name:
        raise Error(f"both sides are named {specs[0].name!r}")
    if specs[0].engine == specs[1].engine and specs[0].args == specs[1].args:
        sys.stderr.write(f"note: sides {specs[0].name} and {specs[1].name} run the same thing:"
                         " an A/A, which measures the noise\n")
    return specs


def side_cells(cells, spec):
    """A side's cells: its engine arguments after each engine cell's own.  A peer program's
    cell is the same on both sides (its arguments are not the engine's)."""
    return [c if external(c) else dataclasses.replace(c, args=list(c.args) + list(spec.args))
            for c in cells]


def side_paths(out, run_id, specs):
    """Each side's results file: STEM.NAME.json, from -o STEM[.json] or the run's id."""
    stem = Path(out) if out else Path("results") / run_id
    if stem.suffix == ".json":
        stem = stem.with_suffix("")
    return [str(stem.parent / f"{stem.name}.{s.name}.json") for s in specs]


def planned_cells(name, full=False, reps=None, warmups=None, cells=()):
    """(cells, reps, warmups) that `run NAME --cell C...` plans, checked: what a lab boot's
    guest will run."""
    _, _, planned, reps, warmups = plan(name, (), full, reps, warmups)
    return (suites.select(planned, cells) if cells else planned), reps, warmups


def plan(name, extra_args=(), full=False, reps=None, warmups=None):
    """(suite, mode, cells, reps, warmups) for `run NAME`, checked."""
    suite = suites.resolve(name, extra_args)
    mode = suites.FULL if full else suites.QUICK
    reps = suite.reps[mode] if reps is None else reps
    warmups = suite.warmups if warmups is None else warmups
    if reps < 1:
        raise Error("--reps must be at least 1")
    if warmups < 0:
        raise Error("--warmups must be 0 or more")
    return suite, mode, suite.cells(mode), reps, warmups


# What a plan may hold. Every sample stays in memory and the whole file is rewritten after
# each one, so the time grows with the square of the samples: a quick seeds run with the
# real engine (24 samples, 2-vCPU VM) held 42 KB per sample as Python objects (tracemalloc)
# and wrote 5.6 KB per sample to its file. 20000 engine runs is 40 times a full seeds run
# at 15 reps, and about 0.8 GiB of samples.
MAX_INVOCATIONS = 20000
BYTES_PER_SAMPLE = 42_000


def check_size(cells, reps, warmups, sides=1):
    """Error for a plan too large to hold, with its estimated time and memory."""
    runs = len(cells) * (reps + warmups) * sides
    if runs <= MAX_INVOCATIONS:
        return
    est_s = sum(c.est_s for c in cells) * (reps + warmups) * sides
    gib = runs * BYTES_PER_SAMPLE / 2 ** 30
    raise Error(f"a plan of {runs} engine runs ({len(cells)} cells x {reps + warmups} rounds"
                f"{f' x {sides} sides' if sides > 1 else ''}) would take about"
                f" {progress.fmt_duration(est_s)} and hold about {gib:,.1f} GiB of samples;"
                f" at most {MAX_INVOCATIONS} per run: fewer --reps or cells")


def start(suite, mode, cells, reps, warmups, order_seed=None, meta=None, engine_sha256=None):
    """A new results object for the plan, with the host it runs on."""
    order_seed = random.randrange(2 ** 31) if order_seed is None else order_seed
    return results.new(default_id(suite.name, mode), suite.name, mode, cells, reps, warmups,
                       order_seed, meta, host=envinfo.collect(),
                       catalog=engine.analysis_catalog(), engine_sha256=engine_sha256)


def start_sides(suite, mode, cells, reps, warmups, specs, engines, out=None, order_seed=None,
                meta=None):
    """The Sides of a new run with two sides, in one plan; engines: each side's checked
    engine path."""
    order_seed = random.randrange(2 ** 31) if order_seed is None else order_seed
    run_id = default_id(suite.name, mode)
    paths = side_paths(out, run_id, specs)
    if paths[0] == paths[1]:
        raise Error(f"both sides would write {paths[0]}")
    pair = {"id": run_id,
            "sides": [{"name": s.name, "engine": str(Path(e).resolve()),
                       "engine_sha256": proc.sha256_file(e),
                       "args": list(s.args)} for s, e in zip(specs, engines)],
            "files": [Path(p).name for p in paths]}
    host = envinfo.collect()
    sides = []
    for spec, eng, path in zip(specs, engines, paths):
        sc = side_cells(cells, spec)
        res = results.new(f"{run_id}.{spec.name}", suite.name, mode, sc, reps, warmups,
                          order_seed, meta, host=host, pair=dict(pair, side=spec.name),
                          catalog=engine.analysis_catalog(eng))
        sides.append(Side(res, sc, eng, path, spec.name))
    return sides


_LOCKS = []     # held until the command ends (unlock); the kernel lets them go on a kill


def lock(paths):
    """Take each results file's lock (.NAME.lock beside it) for this process; Error when
    another run or resume writes it: each rewrites the whole file from its own copy, so two
    writers lose one's samples."""
    for p in paths:
        p = Path(p)
        name = f".{p.name}.lock"
        if len(name.encode()) > 255:        # a name as long as a folder takes
            name = f".{hashlib.sha256(p.name.encode()).hexdigest()[:16]}.lock"
        p.parent.mkdir(parents=True, exist_ok=True)
        f = proc.open_append(p.parent / name)
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            raise Error(f"{p}: in use by another ipclab run or resume (it holds"
                        f" {p.parent / name}); wait for it to end") from None
        _LOCKS.append(f)


def unlock():
    """Let go of the locks this process took (at the end of a command)."""
    while _LOCKS:
        _LOCKS.pop().close()


def check_new_outputs(paths, force=False):
    """Error when a new run would replace a file at one of `paths`: a finished run, or an
    interrupted one whose samples `--resume` would keep. force replaces a regular file,
    never anything else (safeio)."""
    for p in paths:
        safeio.check_replaceable(p)
        if force or not os.path.lexists(p):
            continue
        try:
            old = results.load(p)
        except Error:
            raise Error(f"{p}: exists and is not a results file: give another -o, or --force"
                        " to replace it") from None
        n = sum(len(c["samples"]) for c in old["cells"])
        if old.get("complete"):
            raise Error(f"{p} holds a complete run ({n} samples): give another -o, or --force"
                        " to replace it")
        raise Error(f"{p} holds an interrupted run ({n} samples): continue it with"
                    f" `ipclab run --resume {p}`, or --force to replace it")


def resume_sides(res, path, named=None):
    """The Sides to resume from one side's file, its partner found beside it; Error when
    the partner is missing, is another run's, or an engine changed since. A side runs this
    checkout's engine, or the one the command line names for it (`named`: {side: path}):
    an engine path is never taken from the file."""
    pair = res["pair"]
    files = pair.get("files")
    if not (isinstance(files, list) and len(files) == 2 and isinstance(pair.get("sides"), list)
            and len(pair["sides"]) == 2):
        raise Error(f"{path}: cannot resume: its \"pair\" does not name two sides")
    sides = []
    for name, info in zip(files, pair["sides"]):
        p = Path(path).parent / name
        r = res if p.resolve() == Path(path).resolve() else results.load(str(p))
        if r.get("pair", {}).get("id") != pair.get("id"):
            raise Error(f"{p}: is not the other side of {path} (another run)")
        eng = engine.find_engine(_side_engine(info, path, named or {}))
        if proc.sha256_file(eng) != info.get("engine_sha256"):
            raise Error(f"{eng} is not the engine side {info.get('name')} started with (it was"
                        " rebuilt or replaced): resuming would mix two builds; start a new run")
        sides.append(Side(r, resumable(r, str(p), info.get("args") or ()), eng, str(p), info.get("name", "")))
    return sides


def _side_engine(info, path, named):
    """The engine a resumed side runs: the command line's for it, else this checkout's when
    the side ran that; Error for a path that only the file names."""
    name, was = info.get("name", ""), info.get("engine")
    if name in named:
        return named[name]
    default = engine.default_engine_path()
    if isinstance(was, str) and os.path.exists(was) and os.path.exists(default) \
            and os.path.samefile(was, default):
        return default
    raise Error(f"{path}: side {name} ran {was!r}, not this checkout's engine; resume runs"
                f" only engines the command line names: add --side {name}=ENGINE")


def check_unfinished(sides, path):
    """Error when resuming `path` would do nothing: every side's run is complete, with no
    failed cell to try again."""
    if all(s.res.get("complete") and not any(c["status"] == "failed" for c in s.res["cells"])
           for s in sides):
        raise Error(f"{path}: already complete, nothing to resume (`ipclab show {path}`"
                    " prints it)")


def resumable(res, path, side_args=()):
    """The cells a results file still needs, rebuilt from it; Error if it cannot resume."""
    plan = res.get("plan", {})
    if not all(isinstance(plan.get(k), int) and not isinstance(plan.get(k), bool)
               for k in ("reps", "warmups", "order_seed")) or plan["reps"] < 1 \
            or plan["warmups"] < 0:
        raise Error(f"{path}: cannot resume: the file has no usable plan (reps, warmups,"
                    " order_seed)")
    known = set(suites.workloads()) | peers.workloads() | upstream.workloads()
    bad = [c.get("workload") for c in res["cells"] if c.get("workload") not in known]
    if bad:
        raise Error(f"{path}: cannot resume: unknown workload {bad[0]!r}")
    check_planned(res, path, side_args)
    cells = cells_from_results(res)
    # The cap of a new run: a hand-edited plan must not grow memory without bound.
    check_size(cells, plan["reps"], plan["warmups"], 2 if res.get("pair") else 1)
    return cells


def check_engine(res, path, eng):
    """Error when the engine is not the build a one-engine run started with (a file older
    than the check has no checksum and is taken as it is)."""
    want = res.get("plan", {}).get("engine_sha256")
    if want is not None and proc.sha256_file(eng) != want:
        raise Error(f"{eng} is not the engine {path} started with (it was rebuilt or replaced):"
                    " resuming would mix two builds; start a new run")


def check_planned(res, path, side_args=()):
    """Error unless every cell of the file is one this checkout's suite defines, with the
    side's engine arguments after an engine cell's own: a results file is data, and what
    it asks to run (a peer's argv above all) is rebuilt here, never taken from it."""
    name, mode = res.get("suite"), res.get("mode")
    if mode not in (suites.QUICK, suites.FULL):
        raise Error(f"{path}: cannot resume: mode {mode!r} is neither quick nor full")
    if name in suites.SUITES:
        defined = suites.SUITES[name].cells(mode)
    elif name in suites.workloads():
        defined = None      # `run WORKLOAD -- ARGS`: the engine's workload, any arguments
    else:
        raise Error(f"{path}: cannot resume: suite {name!r} is not one of this checkout's")
    allowed = set()
    for c in defined or []:
        args = list(c.args) if external(c) else list(c.args) + list(side_args)
        allowed.add((c.key, c.workload, tuple(args)))
    for c in res["cells"]:
        args = tuple(c.get("args", []))
        if defined is None:
            own = args[:len(args) - len(side_args)] if side_args else args
            ok = c["workload"] == name and tuple(args[len(own):]) == tuple(side_args) and \
                c["key"] == name + ("/" + " ".join(own) if own else "")
        else:
            ok = (c["key"], c["workload"], args) in allowed
        if not ok:
            raise Error(f"{path}: cannot resume: cell {c['key']!r} ({c['workload']}"
                        f" {shlex.join(args)}) is not a cell of suite {name!r} ({mode})"
                        " in this checkout")


def cells_from_results(res):
    """Cell objects rebuilt from a results file (what --resume runs)."""
    est = {}
    s = suites.SUITES.get(res.get("suite"))
    if s is not None:
        for mode in (suites.QUICK, suites.FULL):
            for c in s.cells(mode):
                est[(c.key, tuple(c.args))] = c.est_s
    return [suites.Cell(c["key"], c["workload"], list(c.get("args", [])), c.get("suite", ""),
                        est.get((c["key"], tuple(c.get("args", []))), 1.0))
            for c in res["cells"]]


def execute(sides, quiet=False, stream=None, run=None):
    """Run what the plan still needs on every side; returns 0, or 130 when interrupted (143
    on SIGTERM).

    The sides share one plan (reps, warmups, order_seed).  Each file is saved after every
    sample, so Ctrl-C loses at most the sample in flight.  run(engine, cell) -> CellRun
    takes one sample instead of run_cell (a guest's samples read back, in the plan's order).
    """
    stream = stream or sys.stderr
    plan = sides[0].res["plan"]
    slots = schedule.build(len(sides[0].cells), plan["reps"], plan["warmups"],
                           plan["order_seed"])
    todo_of = []
    for side in sides:
        rcells = side.res["cells"]
        done_w = [sum(1 for s in c["samples"] if s.get("warmup")) for c in rcells]
        done_r = [len(results.invocations(c)) for c in rcells]
        todo_of.append({s for s in schedule.remaining(slots, done_w, done_r)
                        if rcells[s.cell]["status"] != "skipped"})
        results.retry_failed(side.res)
    todo = [(slot, sides[k]) for slot in slots
            for k in schedule.side_order(slot.round, len(sides)) if slot in todo_of[k]]
    rounds = len(sides) > 1
    bar = progress.Progress(len(todo), sum(side.cells[s.cell].est_s for s, side in todo),
                            stream, enabled=not quiet)
    try:
        for slot, side in todo:
            cell, rc = side.cells[slot.cell], side.res["cells"][slot.cell]
            what = f"{side.name}: {cell.key}" if rounds else cell.key
            if rc["status"] in ("failed", "skipped"):
                bar.step(f"{what} ({rc['status']})", cell.est_s)
                continue
            out = (run or run_cell)(side.engine, cell)
            if out.status == "ok":
                results.add_samples(side.res, slot.cell, out.samples, slot.warmup,
                                    slot.round if rounds else None)
            else:
                results.cell_failed(side.res, slot.cell, out.status, out.error)
                if not quiet:
                    stream.write(f"\n{what}: {out.status}: {out.error}\n")
            results.save(side.res, side.path)
            bar.step(what, cell.est_s)
    except KeyboardInterrupt as e:      # Ctrl-C, or SIGTERM (signals.Terminated)
        bar.close()
        for side in sides:
            results.save(side.res, side.path)
        n = sum(len(c["samples"]) for side in sides for c in side.res["cells"])
        files = " and ".join(side.path for side in sides)
        stream.write(f"{signals.word(e)}: {n} samples saved in {files}; continue with"
                     f" `ipclab run --resume {sides[0].path}`\n")
        return signals.status(e)
    bar.close()
    for side in sides:
        results.finish(side.res)
        results.save(side.res, side.path)
    return 0


def external(cell):
    """A cell another program runs: a peer's, or an upstream benchmark's. The engine's
    arguments of a side are not its."""
    return peers.is_peer(cell) or upstream.is_upstream(cell)


def run_cell(engine_path, cell):
    """One sample of a cell: a peer program's, an upstream benchmark's, or the engine's."""
    if peers.is_peer(cell):
        return peers.run_cell(cell)
    if upstream.is_upstream(cell):
        return upstream.run_cell(cell)
    return engine.run_cell(engine_path, cell)


def argv_for(engine_path, cell):
    """The command line one sample of a cell runs (for --dry-run)."""
    if peers.is_peer(cell):
        return peers.argv_for(cell)
    if upstream.is_upstream(cell):
        return upstream.argv_for(cell)
    return engine.argv_for(engine_path, cell)


def default_id(suite, mode):
    return f"{proc.stamp()}-{suite}-{mode}"


def default_path(run_id):
    return str(Path("results") / (run_id + ".json"))
