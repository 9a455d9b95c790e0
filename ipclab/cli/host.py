# SPDX-License-Identifier: MIT
"""The host's commands: run (and --resume), suites, show, compare, report, env. Each takes
the parsed arguments and returns an exit status; what they compute and print is the rest of
ipclab's."""

import json
import os
import sys
from pathlib import Path

from ipclab import Error, compare, engine, envinfo, fmt, peers, proc, profile, progress, report
from ipclab import results, runner, suites, views


def _meta(items):
    meta = {}
    for item in items or []:
        if "=" not in item:
            raise Error(f"--meta wants key=value, got {item!r}")
        k, v = item.split("=", 1)
        if not k.strip():
            raise Error(f"--meta {item!r}: the key is empty")
        if k.strip() in results.TOOL_META:
            raise Error(f"--meta {k.strip()}: ipclab records {k.strip()} itself (its own keys:"
                        f" {', '.join(results.TOOL_META)})")
        meta[k.strip()] = v
    return meta


def _report_dir(res_id, given=None):
    return given or Path("reports", res_id)


def _finish(sides, args):
    """After a run: seed-shaped tables (one side) or the comparison of the two sides on
    stdout, the report written, paths printed."""
    out = sys.stdout
    out.write("\n")
    outcomes = records = None   # the comparison and its record, once for text and report
    if len(sides) == 1:
        report.show(sides[0].res, out)
        loaded, report_id = [(sides[0].path, sides[0].res)], sides[0].res["id"]
    else:
        names = tuple(s.name for s in sides)
        loaded, report_id = [(s.path, s.res) for s in sides], sides[0].res["pair"]["id"]
        try:
            outcomes = [compare.compare_results(sides[0].res, sides[1].res, names=names)]
            records = [compare.outcome_record(outcomes[0])]
            report.render_compare(outcomes[0], out, names=names, record=records[0])
        except Error as e:     # e.g. a side whose every cell failed
            out.write(f"no comparison: {e}\n")
    if not args.no_report:
        try:
            md = report.write_report(loaded, _report_dir(report_id, args.report_dir),
                                     outcomes=outcomes, records=records)
            out.write(f"\nreport:  {md}\n")
        except Exception as e:  # a plot failing must not lose the run's summary
            out.write(f"\nwarning: report not written: {e}\n")
    for s in sides:
        out.write(f"results: {s.path}\n")


def _run_status(sides):
    """Exit status of a finished run: 0, or 1 (2 for usage errors) when a cell failed.

    The results and the report are written either way; the status tells a
    script that some cells have no numbers.
    """
    failed = [(s, c) for s in sides for c in s.res["cells"] if c["status"] == "failed"]
    if not failed:
        return 0
    side, first = failed[0]
    where = f"{side.name}: " if len(sides) > 1 else ""
    total = sum(len(s.res["cells"]) for s in sides)
    sys.stderr.write(f"ipclab: {len(failed)} of {total} cells failed; first:"
                     f" {where}{first['key']}: {first['error']}\n")
    usage = all(c["error"].startswith("usage error") for _, c in failed)
    return 2 if usage else 1


def _print_commands(sides):
    for s in sides:
        for c in s.cells:
            prefix = f"{s.name}: " if len(sides) > 1 else ""
            print(prefix + " ".join(runner.argv_for(s.engine, c)))


def _resumed_engines(given, res):
    """{side: engine} of `--side NAME=ENGINE` on a resume: the engine only, for a side of
    the file."""
    names = [s.get("name") for s in res["pair"]["sides"]]
    out = {}
    for spec in given or []:
        if spec.name not in names or not spec.engine or spec.args:
            raise Error(f"--side {spec}: a resume names a side's engine only, NAME=ENGINE, NAME"
                        f" one of {', '.join(map(str, names))}")
        out[spec.name] = spec.engine
    return out


def _resume(args):
    # The plan is the file's: an option that would change it could only be ignored.
    ignored = [opt for opt, given in (
        ("SUITE|WORKLOAD", args.target), ("--quick", args.quick), ("--full", args.full),
        ("--reps", args.reps is not None), ("--warmups", args.warmups is not None),
        ("--cell", args.cell), ("--order-seed", args.order_seed is not None),
        ("--profile", args.profile), ("--force without -o", args.force and not args.output),
        ("engine arguments after --", args.engine_args is not None)) if given]
    if ignored:
        raise Error(f"--resume carries on with the plan in {args.resume}; drop"
                    f" {', '.join(ignored)}")
    res = results.load(args.resume)
    if res.get("pair"):
        for opt, given in (("--output", args.output), ("--engine", args.engine)):
            if given:
                raise Error(f"{opt} does not apply to resuming a run with two sides: each"
                            " side keeps its file and engine")
        sides = runner.resume_sides(res, args.resume, _resumed_engines(args.side, res))
    else:
        if args.side:
            raise Error(f"{args.resume} is a run with one engine: drop --side (--engine"
                        " names its engine)")
        eng = engine.find_engine(args.engine) if not args.dry_run else \
            (args.engine or engine.default_engine_path())
        out = args.output
        if out and not (os.path.exists(out) and os.path.samefile(out, args.resume)):
            runner.check_new_outputs([out], args.force)
        if not args.dry_run:
            runner.check_engine(res, args.resume, eng)
        sides = [runner.Side(res, runner.resumable(res, args.resume), eng,
                             args.output or args.resume)]
    runner.check_unfinished(sides, args.resume)
    if args.dry_run:
        _print_commands(sides)
        return 0
    runner.lock(sorted({s.path for s in sides} | {args.resume}))
    if args.meta:
        for s in sides:
            results.tag(s.res, **_meta(args.meta))
    rc = runner.execute(sides, quiet=args.quiet)
    if rc:
        return rc
    _finish(sides, args)
    return _run_status(sides)


def cmd_run(args):
    if args.output in ("", "-"):
        # '' would fall back to the default silently, '-' reads as stdout but is a file
        raise Error(f"-o {args.output!r}: give a results file's path (results are a file,"
                    " not stdout; `ipclab show FILE --json` prints one)")
    try:
        return _resume(args) if args.resume else _run(args)
    finally:
        runner.unlock()


def _run(args):
    specs = runner.check_sides(args.side) if args.side else []
    if specs and args.engine:
        raise Error("--engine and --side: give each side's engine in its --side")
    if specs and args.profile:
        raise Error("--profile profiles one engine; run it without --side")
    # An empty side is the default engine whatever the order: taken before IPCBENCH is set
    # to the first side's engine below.
    default = engine.default_engine_path()
    if args.profile:
        profile.check_output(args.profile)
    first_engine = specs[0].engine if specs else args.engine
    if first_engine:
        # The cells come from what this engine says it offers (engine.catalog).
        os.environ["IPCBENCH"] = first_engine
    suite, mode, cells, reps, warmups = runner.plan(args.target or "seeds",
                                                    args.engine_args or [], args.full,
                                                    args.reps, args.warmups)
    if args.cell:
        cells = suites.select(cells, args.cell)
    runner.check_size(cells, reps, warmups, max(1, len(specs)))
    if args.dry_run:
        est = sum(c.est_s for c in cells) * (reps + warmups) * max(1, len(specs))
        runs = len(cells) * (reps + warmups) * max(1, len(specs))
        sides = f" on each of {len(specs)} sides" if specs else ""
        print(f"# {suite.name}, {mode} mode: {len(cells)} cells x ({warmups} warmup + {reps} reps)"
              f"{sides} = {runs} invocations, about {int(est)}s")
        _print_commands([runner.Side(None, runner.side_cells(cells, s), s.engine or default,
                                     "", s.name) for s in specs] or
                        [runner.Side(None, cells, args.engine or default, "")])
        return 0
    meta = _meta(args.meta)
    if specs:
        engines = [engine.find_engine(s.engine or default) for s in specs]
        sides = runner.start_sides(suite, mode, cells, reps, warmups, specs, engines,
                                   args.output, args.order_seed, meta)
    else:
        eng = engine.find_engine(args.engine)
        res = runner.start(suite, mode, cells, reps, warmups, args.order_seed, meta,
                           engine_sha256=proc.sha256_file(eng))
        sides = [runner.Side(res, cells, eng,
                             args.output or runner.default_path(res["id"]))]
    runner.lock([s.path for s in sides])
    runner.check_new_outputs([s.path for s in sides], args.force)
    for s in sides:
        results.save(s.res, s.path)
    # --quiet drops the bar and this banner, never a warning.
    for w in envinfo.warnings(sides[0].res["host"]):
        sys.stderr.write(f"warning: {w}\n")
    if not args.quiet:
        where = " and ".join(s.path for s in sides)
        how = (f" on each side ({', '.join(str(s) for s in specs)}), A and B alternating"
               if specs else "")
        sys.stderr.write(f"ipclab: {suite.name} ({mode}): {len(cells)} cells x {reps} reps"
                         f" (+{warmups} warmup){how}, results in {where}\n")
    rc = runner.execute(sides, quiet=args.quiet)
    if rc:
        return rc
    if args.profile:
        profile.profile_cells(sides[0].engine, cells, args.profile, by=args.profile_by,
                              stream=None if args.quiet else sys.stderr)
    _finish(sides, args)
    return _run_status(sides)


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


def _export(rec, args, strict=False):
    """A record as --json asks (all of it) or as --csv does (its rows).  A `strict` record
    (the comparison's) with NaN or infinity in it is a bug to raise, not to write."""
    if args.json:
        json.dump(rec, sys.stdout, indent=1, allow_nan=not strict)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(fmt.csv_table(rec["rows"]))
    return 0


def _peers_run(path):
    """The peers run given with --peers, checked; None without one."""
    if not path:
        return None
    res = results.load(path)
    if not any(peers.is_peer(c) for c in res["cells"]):
        raise Error(f"{path}: not a peers run (no peer cells; `ipclab run peers` makes one)")
    return res


def cmd_show(args):
    res = results.load(args.file)
    peers_run = _peers_run(args.peers)
    if args.json or args.csv:
        return _export(views.record(res, peers_run), args)
    report.show(res, sys.stdout, peers=peers_run)
    return 0


def cmd_compare(args):
    old = results.load(args.old)
    new = results.load(args.new)
    for path, res in ((args.old, old), (args.new, new)):
        if not any(results.measured(c) for c in res["cells"]):
            raise Error(f"{path}: no measured samples to compare")
    names = (old["pair"]["side"], new["pair"]["side"]) \
        if results.sides_of_one_run(old, new) else ("old", "new")
    outcome = compare.compare_results(old, new, common=args.common,
                                      min_change=args.min_change / 100,
                                      paired_test=args.paired_test)
    if args.json or args.csv:
        return _export(compare.outcome_record(outcome), args, strict=True)
    report.render_compare(outcome, sys.stdout, names=names)
    return 0


def cmd_report(args):
    loaded = [(p, results.load(p)) for p in args.files]
    if len(loaded) > 1:
        for _, r in loaded[1:]:
            compare.match_cells(loaded[0][1], r, common=False, hint_common=False)
    out_dir = _report_dir(loaded[0][1]["id"] if len(loaded) == 1 else
                          f"{loaded[0][1]['id']}-vs-{loaded[-1][1]['id']}", args.output)
    md = report.write_report(loaded, out_dir, peers=_peers_run(args.peers), force=args.force)
    print(md)
    return 0


def cmd_env(args):
    env = envinfo.collect()
    if not args.no_wakeup:
        env["wakeup"] = envinfo.wakeup_latency()
    if args.json:
        json.dump({"env": env, "warnings": envinfo.warnings(env)}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        envinfo.render(env, sys.stdout)
    return 0
