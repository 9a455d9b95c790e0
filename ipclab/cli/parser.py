# SPDX-License-Identifier: MIT
"""Every command's parser: `build_parser`, the argument types and the options commands
share. The handlers are host.py's and lab.py's; neither imports this module."""

import argparse
from pathlib import Path

from ipclab import Error, __version__, compare, runner, stats
from ipclab.cli.host import cmd_compare, cmd_env, cmd_report, cmd_run, cmd_show, cmd_suites
from ipclab.cli.lab import (cmd_ab, cmd_bisect, cmd_census, cmd_kernel_build, cmd_kernel_fetch,
                            cmd_kernel_list, cmd_vm_run)
from ipclab.lab import bases, census, variants, vm


def percent(s):
    try:
        v = float(s.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {s!r}") from None
    if not 0 <= v < 100:
        raise argparse.ArgumentTypeError(f"{s}: a percentage (2 means 2%), at least 0 and"
                                         " below 100")
    return v


class EngineWarmup(argparse.Action):
    """`--warmup`, which argparse would otherwise take as short for --warmups: the engine's
    --warmup N makes warmup samples within one invocation, ipclab's --warmups N warmup
    rounds, and `--warmup false` read as either is a surprise."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs="?", help=argparse.SUPPRESS)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error("--warmup is the engine's option (warmup samples within one invocation):"
                     " give it after `--`; --warmups N sets ipclab's warmup rounds (0 for none)")


BOOLEAN_WORDS = ("true", "false", "yes", "no", "on", "off")


def flag_value_problem(parser, argv):
    """Why argv gives a value to an option that takes none (`--quiet false`, which argparse
    would read as a positional argument), or None. Such an option is on when given."""
    flags = set()
    stack = [parser]
    while stack:
        p = stack.pop()
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                stack.extend(a.choices.values())
            elif a.nargs == 0:
                flags.update(a.option_strings)
    for opt, value in zip(argv, argv[1:]):
        if opt in flags and value.lower() in BOOLEAN_WORDS:
            return (f"{opt} takes no value ({value!r}): give {opt} to turn it on, leave it out"
                    " to keep it off")
    return None


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
    """`vm run`'s parser: options anywhere among VARIANT and SUITE (`vm run lts --full
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
    add_run_parser(sub)

    s = sub.add_parser("suites", help="list suites and their cells")
    s.add_argument("--full", action="store_true", help="list the full-mode cells")
    s.set_defaults(func=cmd_suites)

    s = sub.add_parser("show", help="print a results file as seed-shaped tables")
    s.add_argument("file", metavar="FILE")
    add_exports(s, "the tables' numbers as JSON", "the tables' numbers as CSV, one row per"
                " table entry (and per cell and metric outside the tables)")
    add_peers(s)
    s.set_defaults(func=cmd_show)

    s = sub.add_parser("compare", help="old -> new with delta, CI and significance")
    s.add_argument("old", metavar="OLD")
    s.add_argument("new", metavar="NEW")
    s.add_argument("--common", action="store_true",
                   help="compare the cells both files have, ignore the rest")
    add_exports(s, "the comparison as JSON, one entry per row",
                "the comparison's rows as CSV, one per cell and metric: the fields of --json,"
                " n and ci split in two (ci bounds the ratio new/old)")
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
    s.add_argument("--force", action="store_true", help="write into a folder that holds"
                   " files but no ipclab report (its files are kept; report.md is replaced)")
    add_peers(s)
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("env", help="machine and kernel facts, with advice")
    s.add_argument("--json", action="store_true")
    s.add_argument("--no-wakeup", action="store_true", help="do not measure the cross-CPU"
                   " wakeup latency (pinned pipe ping-pong on one CPU and on two, a few seconds)")
    s.set_defaults(func=cmd_env)

    add_lab_parsers(sub)
    return p


def add_run_parser(sub):
    r = sub.add_parser("run", help="run a suite or one workload",
                       description="Run a suite (default: seeds) or one workload; engine "
                       "arguments for a workload go after --.")
    r.add_argument("target", nargs="?", metavar="SUITE|WORKLOAD")
    m = r.add_mutually_exclusive_group()
    m.add_argument("--quick", action="store_true", help="quick sizes (default)")
    m.add_argument("--full", action="store_true", help="the seeds' full sizes")
    r.add_argument("--reps", type=int, help="measured repetitions per cell (default 10)")
    r.add_argument("--warmups", type=int, help="warmup rounds, recorded but excluded (default 1)")
    r.add_argument("--warmup", action=EngineWarmup)
    r.add_argument("-o", "--output", metavar="FILE", help="results file"
                   " (default results/<id>.json; with --side, each side's FILE.NAME.json)")
    r.add_argument("--resume", metavar="FILE", help="continue an interrupted run")
    r.add_argument("--force", action="store_true", help="replace the results file -o names"
                   " even when it holds a run (a complete one, or one --resume would finish)")
    r.add_argument("--cell", action="append", default=[], metavar="KEY",
                   help="run only this cell of the suite (its key, or a glob of keys such as"
                        " 'pipe-sweep/*'; repeatable)")
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
                   " (-o STEM: STEM.NAME.json), and the comparison pairs them by round."
                   " With --resume, --side NAME=ENGINE names a side's engine when it is not"
                   " the default one")
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


# ---- the kernel lab's commands: kernel, vm, ab, bisect, census ----------------------


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
    _add_arch(p)


def _add_arch(p):
    p.add_argument("--arch", choices=variants.ARCHES, default=variants.DEFAULT_ARCH,
                   help="the architecture to build for and boot (arm64: cross-built with "
                        "Debian's gcc-aarch64-linux-gnu, booted on QEMU's virt machine)")


def _add_executor(p):
    p.add_argument("--executor", metavar="local|slurm",
                   help="where the builds and boots run: here (local, the default), or "
                        "each a Slurm batch job (slurm; docs/lab.md, Slurm). Default: "
                        "$IPCLAB_EXECUTOR, else local")
    p.add_argument("--partition", help="the Slurm partition of the jobs (sbatch --partition)")
    p.add_argument("--account", help="the Slurm account of the jobs (sbatch --account)")
    p.add_argument("--time", dest="time_limit", metavar="LIMIT",
                   help="each job's Slurm time limit (sbatch --time, e.g. 30 or 1:00:00)")


def _add_dry_run(p):
    p.add_argument("--dry-run", action="store_true", help="show what would run, run nothing")


def _add_reps(p):
    # Passed through to `ipclab run` in the guest: emulated guests are slow, and a smoke run
    # or a first look may want fewer repetitions than the suite's default.
    p.add_argument("--reps", type=positive_int, help="measured repetitions per cell"
                   f" (suite default; {vm.DETERMINISTIC.reps} with --deterministic)")
    p.add_argument("--warmups", type=int, help="warmup rounds per cell (suite default)")
    p.add_argument("--warmup", action=EngineWarmup)


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
    p.add_argument("--cell", action="append", default=[], metavar="KEY",
                   help="run only this cell of the suite in each boot (its key, or a glob of"
                        " keys such as 'pipe-sweep/*'; repeatable)")


def _add_cost(p):
    p.add_argument("--cost", action="store_true",
                   help="with --deterministic, also count each sample's loads and stores"
                        " and run the cost model's cache simulation (docs/lab.md): L1d and"
                        " last-level misses, and estimated cycles (a model, not a"
                        " measurement), beside the atomics, fences and irq-flag changes every"
                        " deterministic boot counts. Every memory access then calls QEMU's"
                        " plugin: boots take several times longer")


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

    add_vm_parser(sub)

    a = sub.add_parser("ab", help="kernel A/B: boot OLD and NEW alternately, compare",
                       description="OLD and NEW are variants (kernel/series), refs of --tree's"
                       " git tree, NAME+FILE.patch, or --kernel images (which fill the places"
                       " the names leave).",
                       epilog="Exit status: 0 no change beyond the threshold, 3 better, 4"
                       " worse, 5 mixed (changes both ways), 6 inconclusive: the overall"
                       " verdict of the comparison record (compare.json); 1 when a boot"
                       " failed, whatever the verdict; 2 bad input, before anything is"
                       " built.")
    a.add_argument("old", metavar="OLD", nargs="?")
    a.add_argument("new", metavar="NEW", nargs="?")
    a.add_argument("--suite", default="seeds",
                   help="suite (or workload) to run in each boot (default: seeds)")
    a.add_argument("--boots", type=positive_int,
                   help=f"boots of each variant, run A B A B ... ({vm.TIMED.boots};"
                        f" {vm.DETERMINISTIC.boots} with --deterministic); the boot is the unit of the comparison, and fewer"
                        " than 3 pairs claim nothing")
    add_min_change(a)
    a.add_argument("--json", action="store_true",
                   help="print the comparison as JSON (as `compare --json`), not as tables")
    _add_clock_options(a)
    a.add_argument("--timeout", type=positive_float, default=1800, help="per boot, s (1800)")
    a.add_argument("-o", "--output-dir", type=Path,
                   help="where to keep per-boot and merged results")
    a.add_argument("--resume", action="store_true",
                   help="with -o DIR of an earlier ab of the same kernels, suite and options:"
                        " keep its boots that completed, boot only the missing and failed"
                        " ones (more --boots than before adds boots)")
    _add_kernel_sources(a, patch_side="NEW")
    _add_executor(a)
    _add_dry_run(a)
    a.set_defaults(func=cmd_ab)

    add_bisect_parser(sub)
    add_census_parser(sub)


def add_vm_parser(sub):
    v = sub.add_parser("vm", help="boot a variant and run things inside (lab)")
    vsub = v.add_subparsers(dest="vm_cmd", metavar="{run}", parser_class=_IntermixedParser)
    vsub.required = True
    r = vsub.add_parser("run", help="boot VARIANT; run SUITE, the command after --, or the "
                        "conformance tests",
                        usage="%(prog)s [options] VARIANT "
                              "[SUITE | -- CMD ... | --conformance [-- TEST ...]]")
    r.add_argument("variant", nargs="?", metavar="VARIANT")
    r.add_argument("suite", nargs="?", metavar="SUITE")
    r.add_argument("--timeout", type=positive_float, default=900,
                   help="watchdog for the whole boot, s (900)")
    r.add_argument("-o", "--output", type=Path, help="results file (suite mode)")
    r.add_argument("--conformance", action="store_true",
                   help="run the conformance tests (all, or the TESTs after --) and print "
                        "KTAP, as `-- conformance/run.sh [TEST...]` does on x86 (which it runs "
                        "there); on arm64, whose guest has no shell, the tests are "
                        "cross-built into its initramfs")
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
    r.add_argument("--built", metavar="KEY",
                   help="boot the lab cache's build KEY (images/KEY), named VARIANT, without "
                        "resolving or building anything: what `ab --executor slurm` submits")
    _add_kernel_sources(r)
    _add_executor(r)
    _add_dry_run(r)
    r.set_defaults(func=cmd_vm_run, engine_args=None)


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
    c.add_argument("--config", metavar="FLAVOUR|FILE", help=CONFIG_HELP)
    _add_arch(c)
    _add_executor(c)
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
                   help=f"boots per commit ({vm.DETERMINISTIC.boots} deterministic;"
                        f" {vm.TIMED.boots} timed)")
    b.add_argument("--cpus", type=positive_int, help="guest CPUs")
    b.add_argument("--config", metavar="FLAVOUR|FILE", help=CONFIG_HELP)
    _add_arch(b)
    _add_reps(b)
    b.add_argument("-j", "--jobs", type=positive_int, help="make -j (default: number of CPUs)")
    b.add_argument("--timeout", type=positive_float, default=1800, help="per boot, s (1800)")
    b.add_argument("-o", "--output-dir", type=Path, help="the log and every boot's results")
    b.add_argument("--resume", type=Path, metavar="DIR",
                   help="continue the bisect whose log is in DIR")
    _add_executor(b)
    _add_dry_run(b)
    b.set_defaults(func=cmd_bisect)
