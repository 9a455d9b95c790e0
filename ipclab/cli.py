# SPDX-License-Identifier: MIT
"""ipclab command line: run suites, show, compare and report results.

    ipclab run [SUITE|WORKLOAD] [--quick|--full] [--reps N] [-o FILE] [--resume FILE]
    ipclab suites | show FILE | compare BASE NEW | report FILE... [-o DIR] | env

Bad input (missing or corrupt files, mismatched cells, unknown names, a
missing engine) prints one line and exits 2.
"""

import argparse
import json
import os
import sys
from pathlib import Path

from ipclab import EXIT_INTERRUPTED, EXIT_USAGE, Error, __version__, compare, engine, envinfo
from ipclab import proc, profile, progress, report, results, runner, suites
from ipclab.lab import ab, kernel, vm


def _meta(items):
    meta = {}
    for item in items or []:
        if "=" not in item:
            raise Error(f"--meta wants key=value, got {item!r}")
        k, v = item.split("=", 1)
        meta[k.strip()] = v
    return meta


def _report_dir(res_id, given=None):
    return given or Path("reports", res_id)


def _finish(res, path, args):
    """After a run: seed-shaped tables on stdout, report written, paths printed."""
    out = sys.stdout
    out.write("\n")
    report.show(res, out)
    if not args.no_report:
        try:
            md = report.write_report([(path, res)], _report_dir(res["id"], args.report_dir))
            out.write(f"\nreport:  {md}\n")
        except Exception as e:  # a plot failing must not lose the run's summary
            out.write(f"\nwarning: report not written: {e}\n")
    out.write(f"results: {path}\n")


def _run_status(res):
    """Exit status of a finished run: 0, or 1 (2 for usage errors) when a cell failed.

    The results and the report are written either way; the status tells a
    script that some cells have no numbers.
    """
    failed = [c for c in res["cells"] if c["status"] == "failed"]
    if not failed:
        return 0
    first = failed[0]
    sys.stderr.write(f"ipclab: {len(failed)} of {len(res['cells'])} cells failed; first:"
                     f" {first['key']}: {first['error']}\n")
    usage = all(c["error"].startswith("usage error") for c in failed)
    return 2 if usage else 1


def cmd_run(args):
    extra = args.engine_args or []
    if args.resume:
        res = results.load(args.resume)
        path = args.output or args.resume
        cells = runner.resumable(res, args.resume)
        if args.dry_run:
            eng = args.engine or engine.default_engine_path()
            for c in cells:
                print(" ".join(engine.argv_for(eng, c)))
            return 0
        eng = engine.find_engine(args.engine)
        if args.meta:
            results.tag(res, **_meta(args.meta))
        rc = runner.execute(res, cells, eng, path, quiet=args.quiet)
        if rc:
            return rc
        _finish(res, path, args)
        return _run_status(res)

    if args.engine:
        # The cells come from what this engine says it offers (engine.catalog).
        os.environ["IPCBENCH"] = args.engine
    suite, mode, cells, reps, warmups = runner.plan(args.target or "seeds", extra, args.full,
                                                    args.reps, args.warmups)
    if args.dry_run:
        eng = args.engine or engine.default_engine_path()
        est = sum(c.est_s for c in cells) * (reps + warmups)
        runs = len(cells) * (reps + warmups)
        print(f"# {suite.name}, {mode} mode: {len(cells)} cells x ({warmups} warmup + {reps} reps)"
              f" = {runs} invocations, about {int(est)}s")
        for c in cells:
            print(" ".join(engine.argv_for(eng, c)))
        return 0
    eng = engine.find_engine(args.engine)
    res = runner.start(suite, mode, cells, reps, warmups, args.order_seed, _meta(args.meta))
    path = args.output or runner.default_path(res["id"])
    results.save(res, path)
    if not args.quiet:
        for w in envinfo.warnings(res["host"]):
            sys.stderr.write(f"warning: {w}\n")
        sys.stderr.write(f"ipclab: {suite.name} ({mode}): {len(cells)} cells x {reps} reps"
                         f" (+{warmups} warmup), results in {path}\n")
    rc = runner.execute(res, cells, eng, path, quiet=args.quiet)
    if rc:
        return rc
    if args.profile:
        profile.profile_cells(eng, cells, args.profile, by=args.profile_by,
                              stream=None if args.quiet else sys.stderr)
    _finish(res, path, args)
    return _run_status(res)


def cmd_suites(args):
    mode = suites.FULL if args.full else suites.QUICK
    for name, s in suites.SUITES.items():
        cells = s.cells(mode)
        print(f"{name}: {s.summary}")
        est = sum(c.est_s for c in cells) * (s.reps[mode] + s.warmups)
        print(f"  {mode} mode: {len(cells)} cells, {s.reps[mode]} reps + {s.warmups} warmup,"
              f" planned about {progress.fmt_duration(est)} of measurement")
        if name != "seeds":
            for c in cells:
                print(f"    {c.key:32} {c.workload} {' '.join(c.args)}")
        print()
    print("workloads (run WORKLOAD [-- engine args]):")
    for w, d in suites.workloads().items():
        print(f"  {w:16} {d}")
    return 0


def cmd_show(args):
    res = results.load(args.file)
    report.show(res, sys.stdout)
    return 0


def cmd_compare(args):
    base = results.load(args.base)
    new = results.load(args.new)
    outcome = compare.compare_results(base, new, common=args.common,
                                      min_change=args.min_change / 100)
    if args.json:
        json.dump(compare.outcome_record(outcome), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    report.render_compare(outcome, sys.stdout)
    return 0


def cmd_report(args):
    loaded = [(p, results.load(p)) for p in args.files]
    if len(loaded) > 1:
        for _, r in loaded[1:]:
            compare.match_cells(loaded[0][1], r, common=False)
    out_dir = _report_dir(loaded[0][1]["id"] if len(loaded) == 1 else
                          f"{loaded[0][1]['id']}-vs-{loaded[-1][1]['id']}", args.output)
    md = report.write_report(loaded, out_dir)
    print(md)
    return 0


def cmd_env(args):
    env = envinfo.collect()
    if args.json:
        json.dump({"env": env, "warnings": envinfo.warnings(env)}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        envinfo.render(env, sys.stdout)
    return 0


def percent(s):
    try:
        v = float(s.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {s!r}") from None
    if not 0 <= v < 100:
        raise argparse.ArgumentTypeError(f"must be 0 to 100: {s}")
    return v


def add_min_change(p):
    p.add_argument("--min-change", type=percent, default=compare.MIN_CHANGE * 100,
                   metavar="PCT", help="smallest change worth a verdict, in percent"
                   f" (default {compare.MIN_CHANGE * 100:g}); smaller differences read"
                   " 'within ±PCT%%'")


def build_parser():
    p = argparse.ArgumentParser(prog="ipclab", description="Linux IPC performance lab")
    p.add_argument("--version", action="version", version="ipclab " + __version__)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    r = sub.add_parser("run", help="run a suite or one workload",
                       description="Run a suite (default: seeds) or one workload; engine "
                       "arguments for a workload go after --.")
    r.add_argument("target", nargs="?", metavar="SUITE|WORKLOAD")
    m = r.add_mutually_exclusive_group()
    m.add_argument("--quick", action="store_true", help="quick sizes (default)")
    m.add_argument("--full", action="store_true", help="the seeds' full sizes")
    r.add_argument("--reps", type=int, help="measured repetitions per cell (default 10)")
    r.add_argument("--warmups", type=int, help="warmup rounds, recorded but excluded (default 1)")
    r.add_argument("-o", "--output", metavar="FILE", help="results file"
                   " (default results/<id>.json)")
    r.add_argument("--resume", metavar="FILE", help="continue an interrupted run")
    r.add_argument("--meta", action="append", metavar="KEY=VALUE",
                   help="store KEY=VALUE in the results' meta (repeatable)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.add_argument("--engine", metavar="PATH", help="ipcbench binary (default bench/ipcbench;"
                   " env IPCBENCH overrides)")
    r.add_argument("--dry-run", action="store_true", help="print the engine commands only")
    r.add_argument("--order-seed", type=int, help="seed of the randomized order")
    r.add_argument("--report-dir", metavar="DIR", help="report directory"
                   " (default reports/<id>)")
    r.add_argument("--no-report", action="store_true", help="do not write the report")
    r.add_argument("--profile", metavar="FILE", help="after the run, profile each cell once"
                   " with perf cpu-clock samples and write the functions' shares to FILE")
    r.add_argument("--profile-by", choices=("perf", "marker"), default="perf",
                   help="perf: sample here (default); marker: only mark each cell's window"
                   " for the kernel lab's instruction counter (deterministic guests)")
    r.set_defaults(func=cmd_run, engine_args=None)

    s = sub.add_parser("suites", help="list suites and their cells")
    s.add_argument("--full", action="store_true", help="list the full-mode cells")
    s.set_defaults(func=cmd_suites)

    s = sub.add_parser("show", help="print a results file as seed-shaped tables")
    s.add_argument("file", metavar="FILE")
    s.set_defaults(func=cmd_show)

    s = sub.add_parser("compare", help="baseline -> new with delta, CI and significance")
    s.add_argument("base", metavar="BASE")
    s.add_argument("new", metavar="NEW")
    s.add_argument("--common", action="store_true",
                   help="compare the cells both files have, ignore the rest")
    s.add_argument("--json", action="store_true", help="the comparison as JSON, one entry per row")
    add_min_change(s)
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("report", help="Markdown report with PNG plots")
    s.add_argument("files", nargs="+", metavar="FILE")
    s.add_argument("-o", "--output", metavar="DIR", help="report directory"
                   " (default reports/<id>)")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("env", help="machine and kernel facts, with advice")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_env)

    add_lab_parsers(sub)
    return p


# ---- kernel lab: kernel, vm, ab -------------------------------------------------------
# The parsers and thin handlers of the lab's commands; what they do is ipclab/lab's.


def positive_int(s):
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {s}")
    return v


def positive_float(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0: {s}")
    return v


class _IntermixedParser(argparse.ArgumentParser):
    """`vm run`'s parser: options anywhere among VARIANT and SUITE (`vm run base --full
    seeds`), which plain argparse refuses once an option splits the positionals."""

    _mixing = False

    def parse_known_args(self, args=None, namespace=None):
        if self._mixing:        # parse_known_intermixed_args calls back in here
            return super().parse_known_args(args, namespace)
        self._mixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._mixing = False


def _add_tree(p):
    p.add_argument("--tree", help="kernel tree to patch and build instead of Debian's 6.12.117")


def _add_dry_run(p):
    p.add_argument("--dry-run", action="store_true", help="show what would run, run nothing")


def _add_reps(p):
    # Passed through to `ipclab run` in the guest: emulated guests are slow, and a smoke run
    # or a first look may want fewer repetitions than the suite's default.
    p.add_argument("--reps", type=positive_int, help="measured repetitions per cell"
                   " (suite default; 9 with --deterministic)")
    p.add_argument("--warmups", type=int, help="warmup rounds per cell (suite default)")


def _add_clock_options(p):
    p.add_argument("--full", action="store_true", help="full suite instead of --quick")
    p.add_argument("--deterministic", action="store_true",
                   help="single-threaded TCG with QEMU icount: guest time counts guest "
                        "instructions, so results repeat across boots and hosts; for machines "
                        "without a usable KVM, or changes too small for timing noise")
    p.add_argument("--cpus", type=positive_int,
                   help=f"guest CPUs ({vm.DEFAULT_CPUS}; {vm.DETERMINISTIC_CPUS} with "
                        "--deterministic)")
    p.add_argument("--profile", action="store_true",
                   help="also run each cell once more to see where its instructions (or time) "
                        "go, by kernel function; ab prints the functions that moved most. "
                        "With --deterministic QEMU counts every instruction exactly; else "
                        "perf samples cpu-clock in the guest")
    p.add_argument("--thp", choices=("always", "madvise", "never"),
                   help="guest THP mode (default: what the suite asks, else madvise)")
    _add_reps(p)


def add_lab_parsers(sub):
    k = sub.add_parser("kernel", help="build kernel variants (lab)")
    ksub = k.add_subparsers(dest="kernel_cmd", metavar="{build,list}")
    ksub.required = True
    b = ksub.add_parser("build", help="build a variant (cached by source, config, patches)")
    b.add_argument("variant", metavar="VARIANT")
    _add_tree(b)
    b.add_argument("-j", "--jobs", type=positive_int, help="make -j (default: number of CPUs)")
    b.add_argument("--force", action="store_true", help="rebuild even when cached")
    _add_dry_run(b)
    b.set_defaults(func=cmd_kernel_build)
    ls = ksub.add_parser("list", help="variants, their patches, and whether each is built")
    _add_tree(ls)
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_kernel_list)

    v = sub.add_parser("vm", help="boot a variant and run things inside (lab)")
    vsub = v.add_subparsers(dest="vm_cmd", metavar="{run}", parser_class=_IntermixedParser)
    vsub.required = True
    r = vsub.add_parser("run", help="boot VARIANT; run SUITE, or the command after --",
                        usage="%(prog)s [options] VARIANT [SUITE | -- CMD ...]")
    r.add_argument("variant", metavar="VARIANT")
    r.add_argument("suite", nargs="?", metavar="SUITE")
    r.add_argument("--timeout", type=positive_float, default=900,
                   help="watchdog for the whole boot, s (900)")
    r.add_argument("-o", "--output", type=Path, help="results file (suite mode)")
    _add_clock_options(r)
    r.add_argument("--fail-page-alloc", metavar="P[,INTERVAL[,TIMES[,SPACE]]]",
                   help="inject page allocation failures into the command only "
                        "(debug variant): probability %%, interval, times, bytes first")
    r.add_argument("--failslab", metavar="P[,INTERVAL[,TIMES[,SPACE]]]",
                   help="the same for slab allocations (failslab)")
    r.add_argument("--kmemleak", action="store_true",
                   help="scan kmemleak after the command; leaks fail the run (debug variant)")
    r.add_argument("--record", type=Path, help="write the lab's JSON record of the boot here")
    _add_tree(r)
    _add_dry_run(r)
    r.set_defaults(func=cmd_vm_run, engine_args=None)

    a = sub.add_parser("ab", help="kernel A/B: boot BASE and NEW alternately, compare")
    a.add_argument("base", metavar="BASE")
    a.add_argument("new", metavar="NEW")
    a.add_argument("--suite", required=True)
    a.add_argument("--boots", type=positive_int,
                   help=f"boots of each variant, run A B A B ... ({ab.TIMED_PAIRS}; 1 with"
                        " --deterministic); the boot is the unit of the comparison, and fewer"
                        " than 3 pairs claim nothing")
    add_min_change(a)
    a.add_argument("--json", action="store_true",
                   help="print the comparison as JSON (as `compare --json`), not as tables")
    _add_clock_options(a)
    a.add_argument("--timeout", type=positive_float, default=1800, help="per boot, s (1800)")
    a.add_argument("-o", "--output-dir", type=Path,
                   help="where to keep per-boot and merged results")
    _add_tree(a)
    _add_dry_run(a)
    a.set_defaults(func=cmd_ab)


def _no_command(args, what):
    if getattr(args, "engine_args", None) is not None:
        raise Error(f"{what} takes nothing after --")


def _clock(args):
    return vm.DETERMINISTIC if args.deterministic else vm.TIMED


def cmd_kernel_build(args):
    _no_command(args, "kernel build")
    with proc.dry_run(args.dry_run):
        meta = kernel.build(args.variant, tree=args.tree, jobs=args.jobs, force=args.force)
    if not args.dry_run:
        print(f"{meta['variant']}\t{meta['release']}\t{kernel.image_path(meta)}")
    return 0


def cmd_kernel_list(args):
    _no_command(args, "kernel list")
    rows = kernel.describe(args.tree)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    if not rows:
        print("no variants in kernel/series")
        return 0
    width = max(len(r["variant"]) for r in rows)
    for r in rows:
        state = "built" if r["built"] else "not built"
        if r["error"]:
            state = f"error: {r['error']}"
        extra = f" +{'+'.join(r['fragments'][1:])}" if len(r["fragments"]) > 1 else ""
        print(f"{r['variant']:<{width}}  {state}{extra}")
        for p in r["patches"]:
            print(f"{'':<{width}}    {p}")
        if not r["patches"] and not r["error"]:
            print(f"{'':<{width}}    (no patches)")
    return 0


def cmd_vm_run(args):
    """`vm run VARIANT SUITE` or `vm run VARIANT -- CMD` (main cut CMD off as engine_args)."""
    command = args.engine_args
    if command is not None:
        if not command:
            raise Error("nothing after --")
        if args.suite:
            raise Error("give a SUITE or -- CMD, not both")
        if "--dry-run" in command:
            # Everything after -- is the guest's; a dry run that boots would be a surprise.
            raise Error("--dry-run after -- would go to the command and the guest would boot;"
                        " put it before --")
        if args.profile:
            raise Error("--profile profiles the cells of a SUITE; a command after -- has none")
    elif not args.suite:
        raise Error("nothing to run: give a SUITE or -- CMD")
    clock = _clock(args)
    with proc.dry_run(args.dry_run):
        opts = dict(tree=args.tree, thp=args.thp, timeout=args.timeout, clock=clock,
                    cpus=args.cpus, record=args.record, kmemleak=args.kmemleak,
                    faults=vm.fault_injection(args.fail_page_alloc, args.failslab))
        if command:
            return ab.vm_command(args.variant, command, **opts)
        job = ab.suite_job(args.suite, clock, full=args.full, reps=args.reps,
                           warmups=args.warmups, profile=args.profile)
        return ab.vm_suite(args.variant, job, args.output, **opts)


def cmd_ab(args):
    _no_command(args, "ab")
    clock = _clock(args)
    with proc.dry_run(args.dry_run):
        job = ab.suite_job(args.suite, clock, full=args.full, reps=args.reps,
                           warmups=args.warmups, profile=args.profile)
        return ab.run_ab(args.base, args.new, job, boots=args.boots, tree=args.tree,
                         thp=args.thp, timeout=args.timeout, clock=clock, cpus=args.cpus,
                         outdir=args.output_dir, min_change=args.min_change / 100,
                         as_json=args.json)


# ---- entry ---------------------------------------------------------------------------


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    engine_args = None
    if "--" in argv:
        i = argv.index("--")
        argv, engine_args = argv[:i], argv[i + 1:]
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    if engine_args is not None:
        args.engine_args = engine_args
    return run_command(args)


def run_command(args):
    """The one error handler: every failure the user can act on is one line and an exit
    status, never a traceback."""
    try:
        return args.func(args)
    except Error as e:
        sys.stderr.write(f"ipclab: error: {e}\n")
        return e.code
    except KeyboardInterrupt:
        proc.kill_all()
        sys.stderr.write("ipclab: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except OSError as e:
        # Files we were asked to write (-o, --report-dir) or read: the
        # user's environment, not a bug; one line like any bad input.
        where = f" {e.filename}:" if getattr(e, "filename", None) else ""
        sys.stderr.write(f"ipclab: error:{where} {e.strerror or e}\n")
        return EXIT_USAGE
