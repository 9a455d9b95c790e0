# SPDX-License-Identifier: MIT
"""The kernel lab's commands: kernel build/fetch/list, vm run, ab, bisect, census. Thin
handlers: what they do is ipclab/lab's, and report/lab.py prints what it returns."""

import json
import sys
from pathlib import Path

from ipclab import Error, proc, report
from ipclab.lab import ab, bases, census, gittree, kernel, variants, vm
from ipclab.lab import bisect as lab_bisect
from ipclab.lab import executor as executors
from ipclab.report import lab as labreport


def _mode(args) -> vm.Clock:
    """The mode, timed or deterministic, decided here once and passed down as this object:
    --deterministic for ab, vm run and census; bisect's default unless --timed."""
    if hasattr(args, "timed"):
        return vm.Clock.chosen(not args.timed)
    return vm.Clock.chosen(args.deterministic)


def _cost(args, mode: vm.Clock):
    """What the plugin counts of memory in a deterministic boot (vm.PLUGIN_MEMORY); Error
    for --cost without the deterministic mode."""
    if args.cost and not mode.deterministic:
        raise Error("--cost counts under the deterministic mode: add --deterministic")
    return "cache" if args.cost else vm.DEFAULT_PLUGIN_MEMORY


def cmd_bisect(args):
    _no_command(args, "bisect")
    executor = _executor(args, "bisect")
    with proc.dry_run(args.dry_run):
        if args.resume:
            given = [a for a in ("good", "bad", "tree", "suite", "metric") if getattr(args, a)]
            if given:
                raise Error(f"--resume takes what it needs from its log; drop {', '.join(given)}")
            return labreport.bisect(lab_bisect.run(None, args.resume, resume=True,
                                                   timeout=args.timeout, jobs=args.jobs,
                                                   executor=executor))
        missing = [what for what, v in (("GOOD", args.good), ("BAD", args.bad),
                                        ("--tree", args.tree), ("--suite", args.suite),
                                        ("--metric", args.metric)) if not v]
        if missing:
            raise Error(f"bisect wants {', '.join(missing)}")
        tree = Path(args.tree).resolve()
        if not gittree.is_git_tree(tree):
            raise Error(f"--tree {args.tree}: not a git tree")
        mode = _mode(args)
        lab_bisect.check_metric(args.suite, args.metric, mode)
        boots = args.boots or mode.boots
        if not mode.deterministic:
            lab_bisect.check_timed_boots(boots)
        config = variants.config_arg(args.config)
        p = lab_bisect.Params(str(tree), gittree.resolve(tree, args.good),
                              gittree.resolve(tree, args.bad), args.suite, args.metric,
                              None if args.threshold is None else args.threshold / 100,
                              mode, boots, args.reps, args.warmups, args.cpus,
                              config, _cost(args, mode), args.arch)
        outdir = Path(args.output_dir or Path("results") /
                      f"{proc.stamp()}-bisect-{p.good[:12]}-{p.bad[:12]}-{args.suite}")
        if (outdir / lab_bisect.LOG_NAME).exists():
            raise Error(f"{outdir} holds a bisect already: --resume {outdir}, or another -o")
        return labreport.bisect(lab_bisect.run(p, outdir, timeout=args.timeout, jobs=args.jobs,
                                               executor=executor))


def _executor(args, who: str):
    """The executor of a lab command's builds and boots: --executor and Slurm's options."""
    return executors.choose(args.executor, partition=args.partition, account=args.account,
                            time_limit=args.time_limit, who=who)


def _no_command(args, what):
    if getattr(args, "engine_args", None) is not None:
        raise Error(f"{what} takes nothing after --")


def _kernels(args, names, count):
    """The kernels a lab command names, `count` of them: the names (variants, or refs with
    --tree; NAME+PATCH adds patches), then the --kernel images in the places left. --patch
    goes on the last one (with one name given for two, on a second copy of it), --config on
    every one the lab builds. Bad input is an Error (exit 2) before anything is built."""
    names = [n for n in names if n]
    arch = args.arch or variants.DEFAULT_ARCH
    if (getattr(args, "cpus", None) or 0) > vm.MAX_CPUS[arch]:
        # Said here, before a build, not by QEMU once the kernels are built.
        raise Error(f"--cpus {args.cpus}: QEMU boots at most {vm.MAX_CPUS[arch]} vCPUs on"
                    f" {arch}")
    if count == 2 and len(names) == 1 and not args.kernel and args.patch:
        names *= 2          # `ab OLD --patch X`: OLD against OLD with X on top
    if len(names) + len(args.kernel) != count:
        want = "a VARIANT (or --kernel PATH)" if count == 1 else "OLD and NEW (names or --kernel)"
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
        configs = [(bases.fetch_config(base, c.arch), c) for c in base.distro_configs]
        if args.print_path:
            print(found.path)
        else:
            print(f"{name}\t{found.path}\tsha256 {found.sha256}")
            for path, c in configs:
                print(f"{name}\t{path}\tsha256 {c.sha256}")
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
        for dc in b.get("distro_configs", []):
            here = "" if dc["here"] else "; not fetched: make lab-deps"
            print(f"  {'':<9} {'':<9} --config production ({dc['arch']}): {dc['package']} "
                  f"{dc['version']} {dc['file']}, sha256 {dc['sha256'][:12]}{here}")
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
    """`vm run VARIANT SUITE`, `vm run VARIANT -- CMD` (main cut CMD off as engine_args) or
    `vm run VARIANT --conformance [-- TEST...]`; with --kernel PATH, `vm run --kernel PATH
    SUITE`."""
    command = args.engine_args
    if args.kernel:
        if args.suite:
            raise Error("--kernel names the kernel: give only a SUITE (or -- CMD) besides it")
        args.suite, args.variant = args.variant, None
    tests = None
    if args.conformance:
        # After --, run.sh's TEST... arguments: only these tests.
        tests, command = _conformance_tests(args, command), None
    elif command is not None:
        if not command:
            raise Error("nothing after --")
        if args.suite:
            raise Error("give a SUITE or -- CMD, not both")
        if "--dry-run" in command:
            # Everything after -- is the guest's; a dry run that boots would be a surprise.
            raise Error("--dry-run after -- would go to the command and the guest would boot;"
                        " put it before --")
        if args.profile or args.cell:
            raise Error("--profile and --cell take the cells of a SUITE; a command after --"
                        " has none")
    elif not args.suite:
        raise Error("nothing to run: give a SUITE, -- CMD or --conformance")
    clock = _mode(args)
    executor = _executor(args, "vm run")
    faults = vm.fault_injection(args.fail_page_alloc, args.failslab, args.fault_tasks)
    if executor.name != "local" and (tests is not None or command or faults or args.kmemleak):
        here = "--conformance, -- CMD, --kmemleak and fault injection boot here"
        executor = executors.here_instead(
            executor, f"--executor {executor.name} boots a SUITE as a job; {here}"
                      " (--executor local)", f"vm run: {here}")
    with proc.dry_run(args.dry_run):
        opts = dict(thp=args.thp, timeout=args.timeout, clock=clock,
                    cpus=args.cpus, record=args.record, kmemleak=args.kmemleak,
                    faults=faults)
        if args.built:
            if args.kernel or args.tree or args.patch or args.config:
                raise Error("--built names a build of the lab's cache: no --kernel, --tree,"
                            " --patch or --config besides it")
            if not args.variant:
                raise Error("--built KEY wants the VARIANT name the build is known by")
            kern = kernel.cached(args.built, args.variant)
        else:
            [kern] = _kernels(args, [args.variant], 1)
        if tests is not None:
            return labreport.vm_command(ab.vm_conformance(kern, tests, **opts))
        if command:
            if args.cost:
                raise Error("--cost counts the samples of a SUITE; a command after -- has none")
            return labreport.vm_command(ab.vm_command(kern, command, **opts))
        job = ab.suite_job(args.suite, clock, full=args.full, reps=args.reps,
                           warmups=args.warmups, profile=args.profile, cells=tuple(args.cell),
                           arch=args.arch)
        return labreport.vm_suite(ab.vm_suite(kern, job, args.output, memory=_cost(args, clock),
                                              executor=executor, **opts))


def _conformance_tests(args, command: list[str] | None) -> list[str]:
    """`vm run --conformance [-- TEST...]`: the tests to run (all when none is named),
    checked before anything is built."""
    if args.suite:
        raise Error("--conformance runs the conformance tests: give no SUITE besides it")
    if args.profile or args.cost or args.cell:
        raise Error("--profile, --cost and --cell follow the cells of a SUITE; the conformance"
                    " tests have none")
    tests = list(command or [])
    vm.ConformanceJob.check(tests)
    return tests


def cmd_ab(args):
    _no_command(args, "ab")
    clock = _mode(args)
    if args.resume and not (args.output_dir and args.output_dir.is_dir()):
        raise Error("--resume goes on with an ab's folder: give it as -o DIR" +
                    (f" ({args.output_dir} is no folder)" if args.output_dir else ""))
    executor = _executor(args, "ab")
    with proc.dry_run(args.dry_run):
        job = ab.suite_job(args.suite, clock, full=args.full, reps=args.reps,
                           warmups=args.warmups, profile=args.profile, cells=tuple(args.cell),
                           arch=args.arch)
        old, new = _kernels(args, [args.old, args.new], 2)
        run = ab.run_ab(old, new, job, boots=args.boots or clock.boots, thp=args.thp,
                        timeout=args.timeout, clock=clock, cpus=args.cpus,
                        outdir=args.output_dir, min_change=args.min_change / 100,
                        memory=_cost(args, clock), executor=executor, resume=args.resume)
    return labreport.ab(run, as_json=args.json)


def cmd_census(args):
    _no_command(args, "census")
    executor = _executor(args, "census")
    with proc.dry_run(args.dry_run):
        kern = variants.resolve(census.counters_spec(args.variant), args.tree,
                                config=args.config, arch=args.arch)
        return census.run(kern, workloads=args.workload, clock=_mode(args), cpus=args.cpus,
                          timeout=args.timeout, out=args.output, as_json=args.json,
                          executor=executor)
