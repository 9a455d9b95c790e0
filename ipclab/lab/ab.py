# SPDX-License-Identifier: MIT
"""Kernel lab command line: `kernel build|list`, `vm run`, `ab`.

ipclab/cli.py calls register(subparsers); `python -m ipclab.lab ...` works on its own too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import kernel, profile, suites, vm
from .kernel import LabError, log, write_json_atomic

EXIT_USAGE = 2


def register(subparsers) -> None:
    k = subparsers.add_parser("kernel", help="build kernel variants (lab)")
    ksub = k.add_subparsers(dest="kernel_cmd", metavar="{build,list}")
    ksub.required = True
    b = ksub.add_parser("build", help="build a variant (cached by source, config, patches)")
    b.add_argument("variant")
    add_tree(b)
    b.add_argument("-j", "--jobs", type=int, help="make -j (default: number of CPUs)")
    b.add_argument("--force", action="store_true", help="rebuild even when cached")
    b.add_argument("--dry-run", action="store_true", help="show the commands only")
    b.set_defaults(func=guarded(cmd_kernel_build))
    ls = ksub.add_parser("list", help="variants, their patches, and whether each is built")
    add_tree(ls)
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=guarded(cmd_kernel_list))

    v = subparsers.add_parser("vm", help="boot a variant and run things inside (lab)")
    vsub = v.add_subparsers(dest="vm_cmd", metavar="{run}")
    vsub.required = True
    r = vsub.add_parser("run", help="boot VARIANT; run SUITE, or the command after --",
                        usage="%(prog)s [options] VARIANT [SUITE | -- CMD ...]")
    add_run_options(r)
    # One REMAINDER positional holding VARIANT too: a plain `variant` positional would
    # swallow the `--` and make `vm run base -- ls` look like `vm run base ls`.
    r.add_argument("rest", nargs=argparse.REMAINDER, metavar="VARIANT [SUITE | -- CMD ...]")
    r.set_defaults(func=guarded(cmd_vm_run))

    a = subparsers.add_parser("ab", help="kernel A/B: boot BASE and NEW alternately, compare")
    a.add_argument("base")
    a.add_argument("new")
    a.add_argument("--suite", required=True)
    a.add_argument("--boots", type=positive_int,
                   help="boots of each variant (2; 1 with --deterministic)")
    a.add_argument("--full", action="store_true", help="full suite instead of --quick")
    add_clock_options(a)
    a.add_argument("--thp", choices=("always", "madvise", "never"))
    add_reps(a)
    a.add_argument("--timeout", type=positive_float, default=1800, help="per boot, s (1800)")
    a.add_argument("-o", "--output-dir", type=Path, help="where to keep per-boot and merged results")
    add_tree(a)
    a.add_argument("--dry-run", action="store_true")
    a.set_defaults(func=guarded(cmd_ab))


def positive_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {s}")
    return v


def positive_float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0: {s}")
    return v


def add_reps(p) -> None:
    # Passed through to `ipclab run` in the guest: emulated guests are slow, and a smoke run
    # or a first look may want fewer repetitions than the suite's default.
    p.add_argument("--reps", type=positive_int, help="measured repetitions per cell (suite default)")
    p.add_argument("--warmups", type=int, help="warmup rounds per cell (suite default)")


def add_tree(p) -> None:
    p.add_argument("--tree", help="kernel tree to patch and build instead of Debian's 6.12.117")


def add_clock_options(p) -> None:
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


def add_run_options(p) -> None:
    p.add_argument("--thp", choices=("always", "madvise", "never"),
                   help="guest THP mode (default: what the suite asks, else madvise)")
    p.add_argument("--timeout", type=positive_float, default=900,
                   help="watchdog for the whole boot, s (900)")
    p.add_argument("-o", "--output", type=Path, help="results file (suite mode)")
    p.add_argument("--full", action="store_true", help="full suite instead of --quick")
    add_reps(p)
    add_clock_options(p)
    p.add_argument("--fail-page-alloc", metavar="P[,INTERVAL[,TIMES[,SPACE]]]",
                   help="inject page allocation failures into the command only "
                        "(debug variant): probability %%, interval, times, bytes first")
    p.add_argument("--kmemleak", action="store_true",
                   help="scan kmemleak after the command; leaks fail the run (debug variant)")
    p.add_argument("--record", type=Path, help="write the lab's JSON record of the boot here")
    add_tree(p)
    p.add_argument("--dry-run", action="store_true", help="show the commands only")


class QuietParser(argparse.ArgumentParser):
    """Re-parses what followed VARIANT: errors become one line, not usage plus exit."""

    def error(self, message):
        raise LabError(f"vm run: {message}", EXIT_USAGE)


def split_run_rest(args) -> None:
    """`vm run VARIANT [SUITE | -- CMD]` with options anywhere before `--`."""
    rest = list(args.rest)
    # ipclab/cli.py splits argv at `--` itself and hands the tail over as engine_args.
    cmd = list(args.engine_args) if getattr(args, "engine_args", None) else None
    if "--" in rest:
        i = rest.index("--")
        rest, cmd = rest[:i], rest[i + 1:]
        if not cmd:
            raise LabError("nothing after --", EXIT_USAGE)
    sub = QuietParser(prog="ipclab vm run", add_help=False)
    add_run_options(sub)
    sub.add_argument("variant")
    sub.add_argument("suite", nargs="?")
    extra, unknown = sub.parse_known_args(rest, namespace=argparse.Namespace())
    if not getattr(extra, "variant", None) or extra.variant.startswith("-"):
        raise LabError("vm run: which VARIANT?", EXIT_USAGE)
    if unknown:
        raise LabError(f"unexpected argument {unknown[0]!r} (a command goes after --)", EXIT_USAGE)
    for k, val in vars(extra).items():
        # Options given after VARIANT win; defaults must not undo options given before it.
        if val != sub.get_default(k) or not hasattr(args, k):
            setattr(args, k, val)
    args.command = cmd
    if cmd and args.suite:
        raise LabError("give a SUITE or -- CMD, not both", EXIT_USAGE)
    if not cmd and not args.suite:
        raise LabError("nothing to run: give a SUITE or -- CMD", EXIT_USAGE)


def parse_faults(spec: str | None) -> dict | None:
    """P[,INTERVAL[,TIMES[,SPACE]]]: the fail_page_alloc knobs of the same names."""
    if not spec:
        return None
    parts = spec.split(",")
    if len(parts) > 4:
        raise LabError(f"--fail-page-alloc {spec}: want P[,INTERVAL[,TIMES[,SPACE]]]", EXIT_USAGE)
    try:
        prob = int(parts[0])
        interval = int(parts[1]) if len(parts) > 1 else 1
        times = int(parts[2]) if len(parts) > 2 else -1
        space = parse_size(parts[3]) if len(parts) > 3 else 0
    except ValueError:
        raise LabError(f"--fail-page-alloc {spec}: want integers (SPACE may end in K, M or G)",
                       EXIT_USAGE) from None
    if not 0 <= prob <= 100 or interval < 1 or space < 0:
        raise LabError(f"--fail-page-alloc {spec}: probability 0-100, interval >= 1", EXIT_USAGE)
    return {"probability": prob, "interval": interval, "times": times, "space": space}


def parse_size(s: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    return int(s[:-1] if mult > 1 else s) * mult


# --------------------------------------------------------------------------- handlers


def cmd_kernel_build(args) -> int:
    meta = kernel.build(args.variant, tree=args.tree, jobs=args.jobs, force=args.force,
                        dry_run=args.dry_run)
    if not args.dry_run:
        print(f"{meta['variant']}\t{meta['release']}\t{kernel.image_dir(meta['key'])}/bzImage")
    return 0


def cmd_kernel_list(args) -> int:
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


def ensure_built(variant: str, tree: str | None, dry_run: bool) -> dict:
    meta = kernel.build(variant, tree=tree, dry_run=dry_run, quiet=True)
    if dry_run and "release" not in meta:
        meta.update(release="?", patches=[{"name": p} for p in kernel.load_variant(variant).patches])
    return meta


def check_suite(name: str) -> None:
    """On the host, before any build or boot: a typo must not cost a kernel build."""
    if name not in suites.SUITES and name not in suites.WORKLOADS:
        raise LabError(f"unknown suite or workload {name!r} (suites: {', '.join(suites.SUITES)};"
                       f" workloads: {', '.join(suites.WORKLOADS)})", EXIT_USAGE)


def clock_for(args) -> vm.Clock:
    return vm.DETERMINISTIC if args.deterministic else vm.TIMED


def accel_of(image: Path, clock: vm.Clock, dry_run: bool) -> str:
    # The deterministic mode is TCG by definition: no KVM probe, no TCG warning.
    return "tcg" if clock.deterministic else vm.accel_for(image, dry_run)


def cmd_vm_run(args) -> int:
    split_run_rest(args)
    if args.suite:
        check_suite(args.suite)
    elif args.profile:
        raise LabError("--profile profiles the cells of a SUITE; a command after -- has none",
                       EXIT_USAGE)
    faults = parse_faults(args.fail_page_alloc)
    clock = clock_for(args)
    meta = ensure_built(args.variant, args.tree, args.dry_run)
    image = kernel.image_dir(meta["key"]) / "bzImage"
    accel = accel_of(image, clock, args.dry_run)
    if args.command:
        b = vm.boot(meta, accel, args.command, thp=args.thp or "madvise", timeout=args.timeout,
                    faults=faults, kmemleak=args.kmemleak, dry_run=args.dry_run,
                    clock=clock, cpus=args.cpus)
        if args.dry_run:
            return 0
        # A guest killed before its job started (a slow boot on a busy host) has no output;
        # the record and the verdict must still be written.
        with contextlib.suppress(FileNotFoundError), \
                open(b.shared / "job.out", errors="replace") as f:
            sys.stdout.write(f.read())
        report_boot(b, args.record)
        if not b.ok:
            return b.rc if (b.reason or "").startswith("job exited") and b.rc else 1
        return 0
    out = args.output or Path("results") / f"{time.strftime('%Y%m%dT%H%M%S')}-vm-{args.variant}-{args.suite}.json"
    res, b = run_suite_boot(meta, accel, args.suite, out, quick=not args.full, thp=args.thp,
                            timeout=args.timeout, dry_run=args.dry_run, faults=faults,
                            kmemleak=args.kmemleak, reps=args.reps, warmups=args.warmups,
                            clock=clock, cpus=args.cpus, with_profile=args.profile)
    if args.dry_run:
        return 0
    report_boot(b, args.record)
    if res is not None:
        what = ("deterministic: times are guest instructions" if clock.deterministic else
                "emulated timings" if accel == "tcg" else "")
        print(f"results: {out} (variant={meta['variant']} kernel={b.release} accel={accel}"
              f"{', ' + what if what else ''})")
    failed = [c["key"] for c in (res or {}).get("cells", []) if c.get("status") == "failed"]
    if failed:
        log(f"failed cells: {', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''}")
    return 0 if b.ok and res is not None and not failed else 1


def run_suite_boot(meta, accel, suite, out: Path, *, quick=True, thp=None, timeout=900,
                   dry_run=False, faults=None, kmemleak=False, reps=None, warmups=None,
                   clock=vm.TIMED, cpus=None, with_profile=False):
    out = out.resolve()
    guest_out = Path("result.json")
    mode = thp or vm.suite_thp(suite) or "madvise"
    shared = kernel.cache_root() / "runs" / f"{time.strftime('%Y%m%dT%H%M%S')}-{meta['variant']}-{suite}-{time.monotonic_ns() % 100000}"
    guest_profile = shared / "profile.json" if with_profile else None
    # Under icount, QEMU counts every instruction exactly from outside the guest; the guest
    # only marks where each cell starts and ends. Timed guests sample with perf inside.
    insn_counts = shared / "insncount.txt" if with_profile and clock.deterministic else None
    argv = vm.suite_argv(suite, shared / guest_out, meta, accel, quick=quick,
                         profile=guest_profile,
                         profile_by="marker" if insn_counts else "perf")
    if clock.deterministic and not reps:
        reps = vm.DETERMINISTIC_REPS
    if reps:
        argv += ["--reps", str(reps)]
    if warmups is not None:
        argv += ["--warmups", str(warmups)]
    # `ipclab run` exits 1 when a cell failed; the cells say which, so only the kernel and
    # the guest (dead, hung, splat, no results) can fail the whole boot.
    b = vm.boot(meta, accel, argv, thp=mode, timeout=timeout, dry_run=dry_run, shared=shared,
                faults=faults, kmemleak=kmemleak, watch=str(guest_out), job_rc_fails=False,
                clock=clock, cpus=cpus, insn_counts=insn_counts)
    if dry_run:
        return None, b
    res = vm.tag_results(shared / guest_out, b, meta)
    if res is None:
        # No results at all (the guest died first or the CLI failed): still leave a file
        # that says so, with the console tail, so the failure is on record.
        res = {"schema": "ipclab-results/1", "id": shared.name, "suite": suite,
               "mode": "quick" if quick else "full",
               "meta": {"variant": meta["variant"], "kernel": b.release, "accel": accel,
                        "clock": b.clock,
                        "patches": ",".join(p["name"] for p in meta["patches"]) or "none",
                        "emulated": accel == "tcg", "lab": b.record()},
               "cells": [{"key": f"lab:boot:{meta['variant']}", "suite": suite, "workload": "boot",
                          "args": [], "samples": [], "status": "failed",
                          "error": f"{b.reason}\n{b.console_tail}"}],
               "complete": False}
        write_json_atomic(shared / guest_out, res)
        b.ok = False
        if not b.reason:
            b.reason = "the suite wrote no results"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out, res)
    if guest_profile is not None and guest_profile.exists():
        prof = profile.load(guest_profile)
        if insn_counts is not None and prof is not None and insn_counts.exists():
            profile.attach_counts(prof, insn_counts,
                                  kernel.image_dir(meta["key"]) / "System.map")
        if prof is not None:
            write_json_atomic(profile_path(out), prof)
    return res, b


def profile_path(results_path: Path) -> Path:
    return results_path.with_suffix(".profile.json")


def report_boot(b: vm.Boot, record: Path | None) -> None:
    if record:
        write_json_atomic(record, b.record())
    t = b.timings
    tm = ", ".join(f"{k}={v}" for k, v in t.items())
    if b.ok:
        log(f"{b.variant} ({b.release}, accel={b.accel}): ok [{tm}]")
        for n in b.status.get("notes", []):
            log(f"guest note: {n}")
        return
    log(f"{b.variant} ({b.release}, accel={b.accel}): FAILED: {b.reason} [{tm}]")
    for line in b.bad_lines[:10]:
        log(f"  kernel: {line}")
    for n in b.status.get("notes", []):
        log(f"guest note: {n}")
    if b.console_tail and (b.rc is None or not b.status):
        log("console tail:\n" + b.console_tail)
    log(f"evidence: {b.shared}")


# --------------------------------------------------------------------------- ab


def merge(results: list[dict], label: str) -> dict:
    """One results object per side: each cell's samples concatenated across boots."""
    cells: dict[str, dict] = {}
    order: list[str] = []
    for boot_no, res in enumerate(results, 1):
        for cell in res.get("cells", []):
            key = cell["key"]
            if key not in cells:
                cells[key] = {**cell, "samples": [], "status": "failed", "error": "",
                              "boots_ok": 0, "boot_errors": []}
                order.append(key)
            m = cells[key]
            if cell.get("status") == "ok":
                # Which boot a sample came from, for analyses that model boot-to-boot
                # variance instead of pooling (see the A/A notes in docs/lab.md).
                m["samples"].extend({**smp, "lab_boot": boot_no} for smp in cell.get("samples", []))
                m["boots_ok"] += 1
                m["status"] = "ok"
                m["error"] = ""
            else:
                m["boot_errors"].append(cell.get("error") or "")
                if m["status"] != "ok":
                    m["error"] = cell.get("error") or "failed"
    first = results[0] if results else {}
    meta = dict(first.get("meta", {}))
    meta["lab"] = [r.get("meta", {}).get("lab") for r in results]
    meta["boots"] = len(results)
    meta["side"] = label
    return {"schema": first.get("schema", "ipclab-results/1"), "id": f"ab-{label}",
            "suite": first.get("suite"), "mode": first.get("mode"), "meta": meta,
            "cells": [cells[k] for k in order],
            "complete": all(r.get("complete") for r in results) and bool(results)}


def cmd_ab(args) -> int:
    t0 = time.monotonic()
    check_suite(args.suite)
    clock = clock_for(args)
    # Under icount a boot repeats to the instruction, so one boot per side is the method;
    # timed boots vary by tens of percent, so they need several.
    boots = args.boots or (1 if clock.deterministic else 2)
    metas = {}
    for side, name in (("A", args.base), ("B", args.new)):
        metas[side] = ensure_built(name, args.tree, args.dry_run)
    accel = accel_of(kernel.image_dir(metas["A"]["key"]) / "bzImage", clock, args.dry_run)
    if args.profile and clock.deterministic and not args.dry_run:
        # Before any boot: the plugin built once, and each image able to name its addresses.
        for meta in metas.values():
            vm.insn_plugin_opts(meta, Path(os.devnull))
    outdir = args.output_dir or Path("results") / f"{time.strftime('%Y%m%dT%H%M%S')}-ab-{args.base}-{args.new}-{args.suite}"
    per_side: dict[str, list[dict]] = {"A": [], "B": []}
    failures = []

    def one_boot(i: int, side: str):
        meta = metas[side]
        out = outdir / f"{side}-{meta['variant']}-boot{i + 1}.json"
        log(f"ab: boot {i + 1}/{boots} of {side} ({meta['variant']}, {clock.mode})")
        res, b = run_suite_boot(meta, accel, args.suite, out, quick=not args.full,
                                thp=args.thp, timeout=args.timeout, dry_run=args.dry_run,
                                reps=args.reps, warmups=args.warmups, clock=clock,
                                cpus=args.cpus, with_profile=args.profile)
        if not args.dry_run:
            report_boot(b, None)
        return res, b, out

    # A B A B ...: drift in the host (other jobs, thermal, caches) hits both sides alike.
    order = [(i, side) for i in range(boots) for side in ("A", "B")]
    if clock.deterministic and not args.dry_run:
        # Guest instructions do not depend on what the host does, so A and B boot side by
        # side, one single-threaded QEMU per host CPU.
        workers = max(1, min(2, os.cpu_count() or 1))
        try:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                done = list(pool.map(lambda job: one_boot(*job), order))
        except KeyboardInterrupt:
            vm.kill_all()
            raise
    else:
        done = [one_boot(i, side) for i, side in order]
    if args.dry_run:
        return 0
    outs = {}
    for (i, side), (res, b, out) in zip(order, done):
        if not b.ok:
            failures.append(f"{side} boot {i + 1}: {b.reason}")
        per_side[side].append(res)
        outs.setdefault(side, out)
    paths = {}
    for side, name in (("A", args.base), ("B", args.new)):
        paths[side] = outdir / f"{side}-{name}-merged.json"
        write_json_atomic(paths[side], merge(per_side[side], f"{side}:{name}"))
    heading = (f"ipclab ab {args.base} -> {args.new}: suite {args.suite}, {boots} boots each, "
               f"accel={accel}")
    if clock.deterministic:
        heading += (f" DETERMINISTIC (icount shift={clock.shift}): times are guest "
                    "instructions, rates are per 10^9 guest instructions")
    elif accel == "tcg":
        heading += " (EMULATED timings: TCG; trust counts and ratios, not absolute times)"
    try:
        from .compare import compare_files
    except ImportError:
        log(f"ipclab.compare is not available yet; merged results are in {outdir}")
        return 1
    sys.stdout.flush()
    rc = compare_files(str(paths["A"]), str(paths["B"]), out=sys.stdout, heading=heading,
                       record=outdir / "compare.json")
    profiles = [profile.load(profile_path(outs[side])) for side in ("A", "B")]
    if args.profile and all(profiles):
        profile.render_diff(profiles[0], profiles[1], sys.stdout,
                            unit="insn" if clock.deterministic else "ns")
    elapsed = time.monotonic() - t0
    log(f"ab: {2 * boots} boots in {elapsed:.0f} s; results in {outdir}")
    if failures:
        for f in failures:
            log(f"ab: failed {f}")
        return 1
    return rc


# --------------------------------------------------------------------------- entry


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ipclab", description="ipclab kernel lab")
    sub = p.add_subparsers(dest="cmd", metavar="{kernel,vm,ab}")
    sub.required = True
    register(sub)
    args = p.parse_args(argv)
    return dispatch(args)


def dispatch(args) -> int:
    return args.func(args)


def guarded(fn):
    """The handler cli.py calls: lab failures become one line and an exit code."""
    def handler(args) -> int:
        try:
            return fn(args)
        except LabError as e:
            print(f"ipclab: error: {e}", file=sys.stderr)
            return e.code
        except OSError as e:
            # An unwritable -o, a full disk: say which file, no traceback.
            print(f"ipclab: error: {e.filename or ''}: {e.strerror}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("ipclab: interrupted", file=sys.stderr)
            return 130
    handler.__name__ = fn.__name__
    return handler


if __name__ == "__main__":
    sys.exit(main())
