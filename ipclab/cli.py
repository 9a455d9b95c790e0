# SPDX-License-Identifier: MIT
"""ipclab command line: run suites, show, compare and report results.

    ipclab run [SUITE|WORKLOAD] [--quick|--full] [--reps N] [-o FILE] [--resume FILE]
    ipclab suites | show FILE | compare BASE NEW | report FILE... [-o DIR] | env
    ipclab kernel build|list, vm run, ab BASE NEW, bisect --tree DIR GOOD BAD: the kernel lab

Bad input (missing or corrupt files, mismatched cells, unknown names, a
missing engine) prints one line and exits 2.
"""

import argparse
import json
import os
import sys
from pathlib import Path

from ipclab import EXIT_USAGE, Error, __version__, compare, engine, envinfo
from ipclab import fmt, peers, proc, profile, progress, report, results, runner, stats
from ipclab import signals, suites, views
from ipclab.lab import ab, bases, census, gittree, kernel, variants, vm
from ipclab.lab import bisect as lab_bisect
from ipclab.report import lab as labreport


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
    outcomes = None     # the comparison, computed once for the text and the report
    if len(sides) == 1:
        report.show(sides[0].res, out)
        loaded, report_id = [(sides[0].path, sides[0].res)], sides[0].res["id"]
    else:
        names = tuple(s.name for s in sides)
        loaded, report_id = [(s.path, s.res) for s in sides], sides[0].res["pair"]["id"]
        try:
            outcomes = [compare.compare_results(sides[0].res, sides[1].res, names=names)]
            report.render_compare(outcomes[0], out, names=names)
        except Error as e:     # e.g. a side whose every cell failed
            out.write(f"no comparison: {e}\n")
    if not args.no_report:
        try:
            md = report.write_report(loaded, _report_dir(report_id, args.report_dir),
                                     outcomes=outcomes)
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


def _resume(args):
    # The plan is the file's: an option that would change it could only be ignored.
    ignored = [opt for opt, given in (
        ("SUITE|WORKLOAD", args.target), ("--quick", args.quick), ("--full", args.full),
        ("--reps", args.reps is not None), ("--warmups", args.warmups is not None),
        ("--cell", args.cell), ("--side", args.side), ("--order-seed", args.order_seed is not None),
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
        sides = runner.resume_sides(res, args.resume)
    else:
        eng = engine.find_engine(args.engine) if not args.dry_run else \
            (args.engine or engine.default_engine_path())
        out = args.output
        if out and not (os.path.exists(out) and os.path.samefile(out, args.resume)):
            runner.check_new_outputs([out], args.force)
        sides = [runner.Side(res, runner.resumable(res, args.resume), eng,
                             args.output or args.resume)]
    runner.check_unfinished(sides, args.resume)
    if args.dry_run:
        _print_commands(sides)
        return 0
    if args.meta:
        for s in sides:
            results.tag(s.res, **_meta(args.meta))
    rc = runner.execute(sides, quiet=args.quiet)
    if rc:
        return rc
    _finish(sides, args)
    return _run_status(sides)


def cmd_run(args):
    if args.resume:
        return _resume(args)
    specs = runner.check_sides(args.side) if args.side else []
    if specs and args.engine:
        raise Error("--engine and --side: give each side's engine in its --side")
    if specs and args.profile:
        raise Error("--profile profiles one engine; run it without --side")
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
        default = engine.default_engine_path()
        _print_commands([runner.Side(None, runner.side_cells(cells, s), s.engine or default,
                                     "", s.name) for s in specs] or
                        [runner.Side(None, cells, args.engine or default, "")])
        return 0
    meta = _meta(args.meta)
    if specs:
        engines = [engine.find_engine(s.engine or None) for s in specs]
        sides = runner.start_sides(suite, mode, cells, reps, warmups, specs, engines,
                                   args.output, args.order_seed, meta)
    else:
        res = runner.start(suite, mode, cells, reps, warmups, args.order_seed, meta)
        sides = [runner.Side(res, cells, engine.find_engine(args.engine),
                             args.output or runner.default_path(res["id"]))]
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


def _export(rec, args):
    """A record as --json asks (all of it) or as --csv does (its rows)."""
    if args.json:
        json.dump(rec, sys.stdout, indent=1)
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
    base = results.load(args.base)
    new = results.load(args.new)
    for path, res in ((args.base, base), (args.new, new)):
        if not any(results.measured(c) for c in res["cells"]):
            raise Error(f"{path}: no measured samples to compare")
    names = (base["pair"]["side"], new["pair"]["side"]) \
        if results.sides_of_one_run(base, new) else ("baseline", "new")
    outcome = compare.compare_results(base, new, common=args.common,
                                      min_change=args.min_change / 100,
                                      paired_test=args.paired_test)
    if args.json or args.csv:
        return _export(compare.outcome_record(outcome), args)
    report.render_compare(outcome, sys.stdout, names=names)
    return 0


def cmd_report(args):
    loaded = [(p, results.load(p)) for p in args.files]
    if len(loaded) > 1:
        for _, r in loaded[1:]:
            compare.match_cells(loaded[0][1], r, common=False, hint_common=False)
    out_dir = _report_dir(loaded[0][1]["id"] if len(loaded) == 1 else
                          f"{loaded[0][1]['id']}-vs-{loaded[-1][1]['id']}", args.output)
    md = report.write_report(loaded, out_dir, peers=_peers_run(args.peers))
    print(md)
    return 0


def cmd_env(args):
    env = envinfo.collect()
    if not args.no_wakeup:
        env["wakeup"] = envinfo.wakeup_cost()
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


def add_exports(p, json_help, csv_help):
    g = p.add_mutually_exclusive_group()
    g.add_argument("--json", action="store_true", help=json_help)
    g.add_argument("--csv", action="store_true", help=csv_help)


def add_peers(p):
    p.add_argument("--peers", metavar="FILE", help="a peers run (`ipclab run peers`): its"
                   " peer programs' figures beside ours in the seed tables, with ours/peer")


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
                   " (default results/<id>.json; with --side, each side's FILE.NAME.json)")
    r.add_argument("--resume", metavar="FILE", help="continue an interrupted run")
    r.add_argument("--force", action="store_true", help="replace the results file -o names"
                   " even when it holds a run (a complete one, or one --resume would finish)")
    r.add_argument("--cell", action="append", default=[], metavar="KEY",
                   help="run only this cell of the suite (a key, or the start of keys;"
                        " repeatable)")
    r.add_argument("--meta", action="append", metavar="KEY=VALUE",
                   help="store KEY=VALUE in the results' meta (repeatable)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.add_argument("--engine", metavar="PATH", help="ipcbench binary (default bench/ipcbench;"
                   " env IPCBENCH overrides)")
    r.add_argument("--side", action="append", type=side_spec, metavar="NAME=[ENGINE] [ARGS]",
                   help="one side of a host A/B in one run (give two): an engine, and/or"
                   " engine arguments added to every cell, e.g. --side old=/tmp/ipcbench"
                   " --side new=bench/ipcbench, or --side 1copy='--copies 1' --side"
                   " 2copies='--copies 2'. Each cell runs on both sides back to back, the"
                   " first side alternating by round; each side gets its file"
                   " (-o STEM: STEM.NAME.json), and the comparison pairs them by round")
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
    add_exports(s, "the tables' numbers as JSON", "the tables' numbers as CSV, one row per"
                " table entry (and per cell and metric outside the tables)")
    add_peers(s)
    s.set_defaults(func=cmd_show)

    s = sub.add_parser("compare", help="baseline -> new with delta, CI and significance")
    s.add_argument("base", metavar="BASE")
    s.add_argument("new", metavar="NEW")
    s.add_argument("--common", action="store_true",
                   help="compare the cells both files have, ignore the rest")
    add_exports(s, "the comparison as JSON, one entry per row",
                "the comparison's rows as CSV, one per cell and metric: the fields of --json,"
                " n and ci split in two (ci bounds the ratio new/base)")
    add_min_change(s)
    s.add_argument("--paired-test", choices=stats.PAIRED_TESTS, default="auto",
                   help="the test of paired rounds or boots: t (paired t on the log ratios),"
                   " wilcoxon (signed-rank, Hodges-Lehmann estimate), or auto (default:"
                   " wilcoxon where the pairs can reach the family's level, else t;"
                   " docs/statistics.md)")
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("report", help="Markdown report with PNG plots")
    s.add_argument("files", nargs="+", metavar="FILE")
    s.add_argument("-o", "--output", metavar="DIR", help="report directory"
                   " (default reports/<id>)")
    add_peers(s)
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("env", help="machine and kernel facts, with advice")
    s.add_argument("--json", action="store_true")
    s.add_argument("--no-wakeup", action="store_true", help="do not measure the cross-CPU"
                   " wakeup cost (pinned pipe ping-pong on one CPU and on two, a few seconds)")
    s.set_defaults(func=cmd_env)

    add_lab_parsers(sub)
    return p


# ---- kernel lab: kernel, vm, ab -------------------------------------------------------
# The parsers and thin handlers of the lab's commands; what they do is ipclab/lab's.


def side_spec(s):
    try:
        return runner.parse_side(s)
    except Error as e:
        raise argparse.ArgumentTypeError(str(e)) from None


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


CONFIG_HELP = ("the kernel config: `tiny` (default: tinyconfig plus kernel/config/lab.config), "
               "`production` (the base's Debian config, its cloud flavour, with "
               "kernel/config/production.config on top: docs/lab.md), or a .config FILE "
               "(then olddefconfig)")


def _add_tree(p):
    p.add_argument("--tree", metavar="DIR",
                   help="a kernel's git tree instead of a base's Debian tarball: the names are "
                        "then its refs (each commit is built in the lab's own checkout; your "
                        "work tree and index are not touched)")


def _add_kernel_sources(p, patch_side="the kernel"):
    _add_tree(p)
    p.add_argument("--patch", action="append", default=[], metavar="FILE",
                   help=f"a patch or an mbox to apply on top of {patch_side} (repeatable, in "
                        "order; the same as NAME+FILE)")
    p.add_argument("--config", metavar="FLAVOUR|FILE", help=CONFIG_HELP)
    p.add_argument("--kernel", action="append", default=[], metavar="PATH",
                   help="a bzImage built elsewhere, instead of a name; its config is checked "
                        "for what the suites need. `debian[:BASE]`: Debian's own kernel of "
                        "the base's release (mainline's by default), the reference of "
                        "--config production")
    p.add_argument("--arch", choices=variants.ARCHES, default=variants.DEFAULT_ARCH,
                   help="the architecture to build for and boot (arm64: cross-built with "
                        "Debian's gcc-aarch64-linux-gnu, booted on QEMU's virt machine)")


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
    _add_cost(p)
    _add_reps(p)


def _add_cost(p):
    p.add_argument("--cost", action="store_true",
                   help="with --deterministic, also count each sample's loads and stores"
                        " and run the cost model's cache simulation (docs/lab.md): L1d and"
                        " last-level misses, and estimated cycles (a model, not a"
                        " measurement), beside the atomics, fences and irq-flag changes every"
                        " deterministic boot counts. Every memory access then calls QEMU's"
                        " plugin: boots take several times longer")


def _cost(args):
    """What the plugin counts of memory in a deterministic boot (vm.PLUGIN_MEMORY); Error
    for --cost without the deterministic mode."""
    deterministic_mode = getattr(args, "deterministic", False) or \
        (hasattr(args, "timed") and not args.timed)
    if args.cost and not deterministic_mode:
        raise Error("--cost counts under the deterministic mode: add --deterministic")
    return "cache" if args.cost else vm.DEFAULT_PLUGIN_MEMORY


def add_lab_parsers(sub):
    k = sub.add_parser("kernel", help="build kernel variants (lab)")
    ksub = k.add_subparsers(dest="kernel_cmd", metavar="{build,list,fetch}")
    ksub.required = True
    b = ksub.add_parser("build", help="build a variant (cached by source, config, patches)",
                        description="Build VARIANT (kernel/series), or REF of --tree's git "
                        "tree; NAME+FILE.patch adds patches on top.")
    b.add_argument("variant", metavar="VARIANT", nargs="?")
    _add_kernel_sources(b)
    b.add_argument("-j", "--jobs", type=positive_int, help="make -j (default: number of CPUs)")
    b.add_argument("--force", action="store_true", help="rebuild even when cached")
    _add_dry_run(b)
    b.set_defaults(func=cmd_kernel_build)
    ls = ksub.add_parser("list", help="the bases (kernel releases) and variants, their "
                         "patches, and whether each is built")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_kernel_list)
    f = ksub.add_parser("fetch", help="download a base's kernel source (make lab-deps does)",
                        description="Download each BASE's Debian source package (default: "
                        "every base) through a private apt configuration that reuses the "
                        "system's Debian mirror, and keep its tarball in the lab's cache. "
                        "A tarball already here (/usr/src, the cache) is not fetched again.")
    f.add_argument("bases", metavar="BASE", nargs="*", help=f"one of {', '.join(bases.names())}")
    f.add_argument("--print-path", action="store_true",
                   help="print only the tarball's path (for scripts)")
    f.set_defaults(func=cmd_kernel_fetch)

    v = sub.add_parser("vm", help="boot a variant and run things inside (lab)")
    vsub = v.add_subparsers(dest="vm_cmd", metavar="{run}", parser_class=_IntermixedParser)
    vsub.required = True
    r = vsub.add_parser("run", help="boot VARIANT; run SUITE, or the command after --",
                        usage="%(prog)s [options] VARIANT [SUITE | -- CMD ...]")
    r.add_argument("variant", nargs="?", metavar="VARIANT")
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
    r.add_argument("--fault-tasks", choices=vm.FAULT_TASKS, default="command",
                   help="who fails: the command and all it forks (default), or only the "
                        "workers the command marks itself (CT_MAKE_IT_FAIL=1: conformance/"
                        "run.sh's stress tests)")
    r.add_argument("--kmemleak", action="store_true",
                   help="scan kmemleak after the command; leaks fail the run (debug variant)")
    r.add_argument("--record", type=Path, help="write the lab's JSON record of the boot here")
    _add_kernel_sources(r)
    _add_dry_run(r)
    r.set_defaults(func=cmd_vm_run, engine_args=None)

    a = sub.add_parser("ab", help="kernel A/B: boot BASE and NEW alternately, compare",
                       description="BASE and NEW are variants (kernel/series), refs of --tree's"
                       " git tree, NAME+FILE.patch, or --kernel images (which fill the places"
                       " the names leave).")
    a.add_argument("base", metavar="BASE", nargs="?")
    a.add_argument("new", metavar="NEW", nargs="?")
    a.add_argument("--suite", default="seeds",
                   help="suite (or workload) to run in each boot (default: seeds)")
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
    _add_kernel_sources(a, patch_side="NEW")
    _add_dry_run(a)
    a.set_defaults(func=cmd_ab)

    add_bisect_parser(sub)
    add_census_parser(sub)


def add_census_parser(sub):
    c = sub.add_parser("census", help="where wakeups find sleepers: per wakeup site, under "
                       "the seeds' and real workloads (lab)",
                       description="Boots VARIANT+wakeup-counters once and runs every workload"
                       " of kernel/tests/wakeup-sites (the seeds' and kernel/tests/workloads);"
                       " prints, per workload and per wakeup site of fs/pipe.c and"
                       " ipc/mqueue.c, the calls that found a sleeper and the calls.")
    c.add_argument("variant", metavar="VARIANT")
    c.add_argument("--workload", action="append", default=[], metavar="NAME",
                   help="only this workload (repeatable; default: all)")
    c.add_argument("--deterministic", action="store_true",
                   help="single-threaded TCG with icount: the same counts on every boot")
    c.add_argument("--cpus", type=positive_int,
                   help=f"guest CPUs ({vm.DEFAULT_CPUS}; {vm.DETERMINISTIC_CPUS} with "
                        "--deterministic)")
    c.add_argument("--timeout", type=positive_float, default=census.DEFAULT_TIMEOUT_S,
                   help=f"watchdog for the whole boot, s ({census.DEFAULT_TIMEOUT_S})")
    c.add_argument("-o", "--output", type=Path, help="also write the JSON record here")
    c.add_argument("--json", action="store_true", help="print the JSON record, not the table")
    _add_tree(c)
    c.add_argument("--config", metavar="FILE",
                   help="build with this .config instead of tinyconfig plus lab.config")
    _add_dry_run(c)
    c.set_defaults(func=cmd_census, engine_args=None)


def add_bisect_parser(sub):
    b = sub.add_parser("bisect", help="the first commit of a range that moves a metric (lab)",
                       description="Bisect GOOD..BAD of --tree's git tree (first-parent "
                       "history): each step builds a commit in the lab's clone and boots it "
                       "with SUITE; a commit has moved when its METRIC is beyond the threshold "
                       "from GOOD's, in BAD's direction. A commit that does not build or boot "
                       "is skipped. The log in -o DIR resumes an interrupted bisect.")
    b.add_argument("good", metavar="GOOD", nargs="?")
    b.add_argument("bad", metavar="BAD", nargs="?")
    b.add_argument("--tree", metavar="DIR", help="the git tree GOOD and BAD are refs of")
    b.add_argument("--suite", help="suite (or workload) to run in each boot")
    b.add_argument("--metric", metavar="CELL[:PATH]",
                   help="the cell (a key, or a unique start of one) and its metric (default: "
                        "instructions per operation, deterministic; else its primary)")
    b.add_argument("--threshold", type=percent, metavar="PCT",
                   help="a commit has moved when its metric is more than PCT%% from GOOD's "
                        "(default: half of GOOD -> BAD)")
    _add_cost(b)
    mode = b.add_mutually_exclusive_group()
    mode.add_argument("--deterministic", action="store_true",
                      help="boots under QEMU icount, one per commit (the default)")
    mode.add_argument("--timed", action="store_true",
                      help="timed boots instead of the deterministic mode (refused when its "
                           "steps lack the power to see the threshold)")
    b.add_argument("--boots", type=positive_int,
                   help=f"boots per commit (1 deterministic; {ab.TIMED_PAIRS} timed)")
    b.add_argument("--cpus", type=positive_int, help="guest CPUs")
    b.add_argument("--config", metavar="FLAVOUR|FILE", help=CONFIG_HELP)
    _add_reps(b)
    b.add_argument("-j", "--jobs", type=positive_int, help="make -j (default: number of CPUs)")
    b.add_argument("--timeout", type=positive_float, default=1800, help="per boot, s (1800)")
    b.add_argument("-o", "--output-dir", type=Path, help="the log and every boot's results")
    b.add_argument("--resume", type=Path, metavar="DIR",
                   help="continue the bisect whose log is in DIR")
    _add_dry_run(b)
    b.set_defaults(func=cmd_bisect)


def cmd_bisect(args):
    _no_command(args, "bisect")
    with proc.dry_run(args.dry_run):
        if args.resume:
            given = [a for a in ("good", "bad", "tree", "suite", "metric") if getattr(args, a)]
            if given:
                raise Error(f"--resume takes what it needs from its log; drop {', '.join(given)}")
            return labreport.bisect(lab_bisect.run(None, args.resume, resume=True,
                                                   timeout=args.timeout, jobs=args.jobs))
        missing = [what for what, v in (("GOOD", args.good), ("BAD", args.bad),
                                        ("--tree", args.tree), ("--suite", args.suite),
                                        ("--metric", args.metric)) if not v]
        if missing:
            raise Error(f"bisect wants {', '.join(missing)}")
        tree = Path(args.tree).resolve()
        if not gittree.is_git_tree(tree):
            raise Error(f"--tree {args.tree}: not a git tree")
        deterministic_mode = not args.timed
        lab_bisect.check_metric(args.suite, args.metric, deterministic_mode)
        boots = args.boots or (1 if deterministic_mode else ab.TIMED_PAIRS)
        if not deterministic_mode:
            lab_bisect.check_timed_boots(boots)
        config = variants.config_arg(args.config)
        p = lab_bisect.Params(str(tree), gittree.resolve(tree, args.good),
                              gittree.resolve(tree, args.bad), args.suite, args.metric,
                              None if args.threshold is None else args.threshold / 100,
                              deterministic_mode, boots, args.reps, args.warmups, args.cpus,
                              config, _cost(args))
        outdir = Path(args.output_dir or Path("results") /
                      f"{proc.stamp()}-bisect-{p.good[:12]}-{p.bad[:12]}-{args.suite}")
        if (outdir / lab_bisect.LOG_NAME).exists():
            raise Error(f"{outdir} holds a bisect already: --resume {outdir}, or another -o")
        return labreport.bisect(lab_bisect.run(p, outdir, timeout=args.timeout, jobs=args.jobs))


def _no_command(args, what):
    if getattr(args, "engine_args", None) is not None:
        raise Error(f"{what} takes nothing after --")


def _clock(args):
    return vm.DETERMINISTIC if args.deterministic else vm.TIMED


def _kernels(args, names, count):
    """The kernels a lab command names, `count` of them: the names (variants, or refs with
    --tree; NAME+PATCH adds patches), then the --kernel images in the places left. --patch
    goes on the last one, --config on every one the lab builds. Bad input is an Error
    (exit 2) before anything is built."""
    names = [n for n in names if n]
    if len(names) + len(args.kernel) != count:
        want = "a VARIANT (or --kernel PATH)" if count == 1 else "BASE and NEW (names or --kernel)"
        raise Error(f"want {want}; got {len(names)} name(s) and {len(args.kernel)} --kernel")
    kerns = []
    for i, name in enumerate(names):
        last = i == count - 1
        kerns.append(variants.resolve(name, args.tree, patches=args.patch if last else (),
                                    config=args.config, arch=args.arch))
    for path in args.kernel:
        kerns.append(kernel.prebuilt(str(debian_kernel(path) or path)))
    if args.patch and isinstance(kerns[-1], dict):
        raise Error("--patch needs a kernel the lab builds, not a --kernel image")
    return kerns


def debian_kernel(given: str):
    """--kernel debian[:BASE]: Debian's own kernel of the base's release (default mainline),
    fetched like its source; None for a path."""
    name, sep, base = given.partition(":")
    if name != "debian":
        return None
    return bases.fetch_reference(bases.load(base if sep else bases.DEFAULT_BASE))


def cmd_kernel_build(args):
    _no_command(args, "kernel build")
    with proc.dry_run(args.dry_run):
        [kern] = _kernels(args, [args.variant], 1)
        meta = kernel.obtain(kern, jobs=args.jobs, force=args.force, quiet=False)
    if not args.dry_run:
        print(f"{meta['variant']}\t{meta['release']}\t{kernel.image_path(meta)}")
        print(f"kernel: {report.build_text(kernel.identity(meta))}")
    return 0


def cmd_kernel_fetch(args):
    _no_command(args, "kernel fetch")
    for name in args.bases or bases.names():
        base = bases.load(name)
        found = bases.fetch(base)
        config = bases.fetch_config(base) if base.distro_config else None
        if args.print_path:
            print(found.path)
        else:
            print(f"{name}\t{found.path}\tsha256 {found.sha256}")
            if config:
                print(f"{name}\t{config}\tsha256 {base.distro_config.sha256}")
    return 0


def cmd_kernel_list(args):
    _no_command(args, "kernel list")
    base_rows, rows = kernel.describe_bases(), kernel.describe()
    if args.json:
        json.dump({"bases": base_rows, "variants": rows}, sys.stdout, indent=2)
        print()
        return 0
    print("bases (kernel/bases):")
    for b in base_rows:
        if b["error"]:
            print(f"  {b['base']}  error: {b['error']}")
            continue
        where = (f"{b['tarball']}" + ("" if b["origin"] == "package" else f" ({b['origin']},"
                                      f" sha256 {b['tarball_sha256'][:12]})")
                 if b["tarball"] else "not fetched: make lab-deps")
        print(f"  {b['base']:<9} {b['release']:<9} {b['package']} {b['version']} ({b['suite']}),"
              f" sha256 {b['sha256'][:12]}; {where}")
        dc = b.get("distro_config")
        if dc:
            here = "" if b["distro_config_here"] else "; not fetched: make lab-deps"
            print(f"  {'':<9} {'':<9} --config production: {dc['package']} {dc['version']} "
                  f"{dc['file']}, sha256 {dc['sha256'][:12]}{here}")
    if not rows:
        print("no variants in kernel/series")
        return 0
    print("variants (kernel/series):")
    width = max(len(r["variant"]) for r in rows)
    for r in rows:
        state = "built" if r["built"] else "not built"
        if r["error"]:
            state = f"error: {r['error']}"
        extra = f" +{'+'.join(r['fragments'][1:])}" if len(r["fragments"]) > 1 else ""
        on = f"[{r['base']}] " if r["base"] else ""
        print(f"{r['variant']:<{width}}  {on}{state}{extra}")
        for p in r["patches"]:
            print(f"{'':<{width}}    {p}")
        if not r["patches"] and not r["error"]:
            print(f"{'':<{width}}    (no patches)")
    return 0


def cmd_vm_run(args):
    """`vm run VARIANT SUITE` or `vm run VARIANT -- CMD` (main cut CMD off as engine_args);
    with --kernel PATH, `vm run --kernel PATH SUITE`."""
    command = args.engine_args
    if args.kernel:
        if args.suite:
            raise Error("--kernel names the kernel: give only a SUITE (or -- CMD) besides it")
        args.suite, args.variant = args.variant, None
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
        opts = dict(thp=args.thp, timeout=args.timeout, clock=clock,
                    cpus=args.cpus, record=args.record, kmemleak=args.kmemleak,
                    faults=vm.fault_injection(args.fail_page_alloc, args.failslab,
                                              args.fault_tasks))
        [kern] = _kernels(args, [args.variant], 1)
        if command:
            if args.cost:
                raise Error("--cost counts the samples of a SUITE; a command after -- has none")
            return labreport.vm_command(ab.vm_command(kern, command, **opts))
        job = ab.suite_job(args.suite, clock, full=args.full, reps=args.reps,
                           warmups=args.warmups, profile=args.profile)
        return labreport.vm_suite(ab.vm_suite(kern, job, args.output, memory=_cost(args), **opts))


def cmd_ab(args):
    _no_command(args, "ab")
    clock = _clock(args)
    with proc.dry_run(args.dry_run):
        job = ab.suite_job(args.suite, clock, full=args.full, reps=args.reps,
                           warmups=args.warmups, profile=args.profile)
        base, new = _kernels(args, [args.base, args.new], 2)
        run = ab.run_ab(base, new, job, boots=args.boots, thp=args.thp, timeout=args.timeout,
                        clock=clock, cpus=args.cpus, outdir=args.output_dir,
                        min_change=args.min_change / 100, memory=_cost(args))
    return labreport.ab(run, as_json=args.json)


def cmd_census(args):
    _no_command(args, "census")
    with proc.dry_run(args.dry_run):
        kern = variants.resolve(census.counters_spec(args.variant), args.tree,
                                config=args.config)
        return census.run(kern, workloads=args.workload, clock=_clock(args), cpus=args.cpus,
                          timeout=args.timeout, out=args.output, as_json=args.json)


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
    except KeyboardInterrupt as e:      # Ctrl-C, or SIGTERM (signals.Terminated)
        proc.kill_all()
        sys.stderr.write(f"ipclab: {signals.word(e)}\n")
        return signals.status(e)
    except BrokenPipeError:
        return 0
    except OSError as e:
        # Files we were asked to write (-o, --report-dir) or read: the
        # user's environment, not a bug; one line like any bad input.
        where = f" {e.filename}:" if getattr(e, "filename", None) else ""
        sys.stderr.write(f"ipclab: error:{where} {e.strerror or e}\n")
        return EXIT_USAGE
