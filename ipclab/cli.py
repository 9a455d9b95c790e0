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

from ipclab import EXIT_INTERRUPTED, EXIT_USAGE, Error, __version__, compare, engine, envinfo
from ipclab import proc, profile, progress, report, results, runner, suites


def _meta(items):
    meta = {}
    for item in items or []:
        if "=" not in item:
            raise Error("--meta wants key=value, got %r" % item)
        k, v = item.split("=", 1)
        meta[k.strip()] = v
    return meta


def _report_dir(res_id, given=None):
    return given or os.path.join("reports", res_id)


def _finish(res, path, args):
    """After a run: seed-shaped tables on stdout, report written, paths printed."""
    out = sys.stdout
    out.write("\n")
    report.show(res, out)
    if not args.no_report:
        try:
            md = report.write_report([(path, res)], _report_dir(res["id"], args.report_dir))
            out.write("\nreport:  %s\n" % md)
        except Exception as e:  # a plot failing must not lose the run's summary
            out.write("\nwarning: report not written: %s\n" % e)
    out.write("results: %s\n" % path)


def _run_status(res):
    """Exit status of a finished run: 0, or 1 (2 for usage errors) when a cell failed.

    The results and the report are written either way; the status tells a
    script that some cells have no numbers.
    """
    failed = [c for c in res["cells"] if c["status"] == "failed"]
    if not failed:
        return 0
    sys.stderr.write("ipclab: %d of %d cells failed; first: %s: %s\n"
                     % (len(failed), len(res["cells"]), failed[0]["key"], failed[0]["error"]))
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
        print("# %s, %s mode: %d cells x (%d warmup + %d reps) = %d invocations, about %ds"
              % (suite.name, mode, len(cells), warmups, reps, len(cells) * (reps + warmups),
                 est))
        for c in cells:
            print(" ".join(engine.argv_for(eng, c)))
        return 0
    eng = engine.find_engine(args.engine)
    res = runner.start(suite, mode, cells, reps, warmups, args.order_seed, _meta(args.meta))
    path = args.output or runner.default_path(res["id"])
    results.save(res, path)
    if not args.quiet:
        for w in envinfo.warnings(res["host"]):
            sys.stderr.write("warning: %s\n" % w)
        sys.stderr.write("ipclab: %s (%s): %d cells x %d reps (+%d warmup), results in %s\n"
                         % (suite.name, mode, len(cells), reps, warmups, path))
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
        print("%s: %s" % (name, s.summary))
        est = sum(c.est_s for c in cells) * (s.reps[mode] + s.warmups)
        print("  %s mode: %d cells, %d reps + %d warmup, planned about %s of measurement"
              % (mode, len(cells), s.reps[mode], s.warmups, progress.fmt_duration(est)))
        if name != "seeds":
            for c in cells:
                print("    %-32s %s %s" % (c.key, c.workload, " ".join(c.args)))
        print()
    print("workloads (run WORKLOAD [-- engine args]):")
    for w, d in suites.workloads().items():
        print("  %-16s %s" % (w, d))
    return 0


def cmd_show(args):
    res = results.load(args.file)
    report.show(res, sys.stdout)
    return 0


def cmd_compare(args):
    base = results.load(args.base)
    new = results.load(args.new)
    outcome = compare.compare_results(base, new, common=args.common)
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
                          "%s-vs-%s" % (loaded[0][1]["id"], loaded[-1][1]["id"]), args.output)
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


def add_lab_parsers(sub):
    pass


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
        sys.stderr.write("ipclab: error: %s\n" % e)
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
        where = " %s:" % e.filename if getattr(e, "filename", None) else ""
        sys.stderr.write("ipclab: error:%s %s\n" % (where, e.strerror or e))
        return EXIT_USAGE
