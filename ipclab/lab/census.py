# SPDX-License-Identifier: MIT
"""Kernel lab, the census: how often each wakeup site of fs/pipe.c and ipc/mqueue.c finds a
sleeper, under the seeds' workloads and real ones (kernel/tests/workloads).

`ipclab census VARIANT` builds VARIANT+wakeup-counters (the overlay's per-site counters in
debugfs), boots once and runs kernel/tests/wakeup-sites's workloads there, which resets the
counters, runs each workload to a fixed number of operations and reads them back: one JSON
row per workload. The boot is the architecture's backend's (vm.CensusJob): on x86 the
workloads are built on the host and the driver runs in the guest; on arm64 the host does
the driver's part (arm64/census.py). This module turns the rows into the table and the JSON
record.
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

from ipclab import EXIT_FAILED, Error, envinfo, proc, safeio
from ipclab.progress import log

from . import ab, backends, kernel, slurm, variants, vm

OVERLAY = "wakeup-counters"
DRIVER = vm.CensusJob.DRIVER
# The sites as the counters patch names them, in the order the table shows them.
SITES = {"pipe": ("read-wr", "read-next-rd", "write-sleep-rd", "write-rd", "write-rd-poll",
                  "write-next-wr"),
         "mqueue": ("send-poll", "recv-poll")}
# Every workload of a census in one boot: the make build and the seeds' rings take most.
DEFAULT_TIMEOUT_S = 5400
SCHEMA = "ipclab-census/1"


def counters_spec(spec: str) -> str:
    """The name to build for a census of `spec`: with the counters overlay on top."""
    return spec if OVERLAY in spec.split("+") else f"{spec}+{OVERLAY}"


def workload_names() -> list[str]:
    """The workloads kernel/tests/wakeup-sites runs, in its order (it is their one list)."""
    done = proc.run([sys.executable, str(DRIVER), "--list"], 60, capture=True)
    if done.rc != 0:
        raise Error(f"{DRIVER.name} --list failed: {(done.err or done.out).strip()[-200:]}",
                    EXIT_FAILED)
    return json.loads(done.out)


def select(wanted: list[str]) -> list[str]:
    """The workloads to run: all, or the ones named; Error (exit 2) for a name not known."""
    known = workload_names()
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise Error(f"unknown workload {unknown[0]!r} (known: {', '.join(known)})")
    return list(dict.fromkeys(wanted)) or known


def cell(row: dict, kind: str, site: str) -> str:
    """sleepers/calls at a site, "-" where the workload never reached it, "?" where the
    kernel has no such site (a variant without that wakeup)."""
    counts = row.get(kind, {}).get(site)
    if counts is None:
        return "?"
    if not counts["calls"]:
        return "-"
    return f"{counts['sleepers']}/{counts['calls']}"


def table(rows: list[dict]) -> str:
    """One line per workload, one column per site: sleepers/calls."""
    cols = [(k, s) for k, sites in SITES.items() for s in sites]
    head = ["workload"] + [s for _, s in cols]
    body = []
    for r in rows:
        if r.get("skipped"):
            # Not run (a script on arm64): no counts, and no "?" that would say no site.
            body.append([f"{r['workload']} ({r['skipped']})"] + [""] * len(cols))
            continue
        name = r["workload"] + ("" if r.get("rc") == 0 else f" (rc {r.get('rc')})")
        body.append([name] + [cell(r, k, s) for k, s in cols])
    widths = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(x, widths))).rstrip()
             for x in [head] + body]
    return "\n".join(lines)


def rarely(rows: list[dict], below: float = 0.5) -> list[tuple[str, str, int, int]]:
    """(workload, site, sleepers, calls) where fewer than `below` of the calls found a
    sleeper: where skipping the wakeup without a sleeper pays."""
    out = []
    for r in rows:
        for kind, sites in SITES.items():
            for s in sites:
                c = r.get(kind, {}).get(s)
                if c and c["calls"] and c["sleepers"] < below * c["calls"]:
                    out.append((r["workload"], s, c["sleepers"], c["calls"]))
    return out


def failures(names: list[str], rows: list[dict]) -> tuple[list[str], list[str]]:
    """(failed, missing): the workloads that ran and failed, and those with no row (the
    guest stopped first, or left no counters). A row marked as not run (a script on arm64)
    is neither: the table says why."""
    missing = [n for n in names if n not in {r["workload"] for r in rows}]
    failed = [r["workload"] for r in rows if r.get("rc") != 0 and not r.get("skipped")]
    return failed, missing


def record(rows: list[dict], meta: dict, b: vm.Boot, clock: vm.Clock, cpus: int) -> dict:
    return {"schema": SCHEMA, "variant": meta["variant"], "build": kernel.identity(meta),
            "arch": meta.get("arch", variants.DEFAULT_ARCH),
            "clock": clock.record(b.accel, cpus), "machine": {"id": vm.machine_id(),
                                                              "cpu": envinfo.cpu_model()},
            "when": proc.now_iso(), "boot": b.record(), "sites": SITES, "workloads": rows}


@functools.lru_cache(maxsize=1)
def driver():
    """kernel/tests/wakeup-sites as a module, for what the host does in its stead where the
    guest has no Python (arm64): its workloads, counter files, watchdog and counter reader."""
    loader = importlib.machinery.SourceFileLoader("ipclab_wakeup_sites", str(DRIVER))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def run(kern: variants.Variant, *, workloads: list[str], clock: vm.Clock,
        cpus: int | None = None, timeout: float = DEFAULT_TIMEOUT_S,
        out: Path | None = None, as_json: bool = False, executor=None) -> int:
    """Build, boot once, run the workloads, print the table (or the JSON record); 1 when the
    boot or a workload failed. On arm64 a workload the guest cannot run is a marked row,
    and naming one is refused (exit 2) before anything is built. With a Slurm executor, the
    build and the census are jobs (census_as_job)."""
    names = select(workloads)
    cpus = cpus or vm.default_cpus(clock)
    if executor is not None and executor.name != "local":
        rec = census_as_job(kern, executor, workloads=workloads, clock=clock, cpus=cpus,
                            timeout=timeout, out=out)
        return 0 if rec is None else report(rec, names, as_json)
    backend = backends.for_arch(kern.arch)
    job = vm.CensusJob(tuple(names), named=bool(workloads), driver=driver())
    # What the guest needs built for it lasts the boot (arm64: its static workloads).
    with tempfile.TemporaryDirectory(prefix=f"ipclab-census-{kern.arch}-") as workdir:
        plan = backend.census_plan(job, Path(workdir))
        meta = kernel.obtain(kern)
        b, rows = backend.census(meta, kern, job, plan, clock=clock, cpus=cpus,
                                 timeout=timeout)
    if proc.is_dry_run():
        return 0
    ab.report_boot(b, None)
    rec = record(rows, meta, b, clock, cpus)
    if out:
        proc.write_json_atomic(out, rec)
        log(f"census: {out}")
    return report(rec, names, as_json)


def census_as_job(kern: variants.Variant, executor, *, workloads: list[str], clock: vm.Clock,
                  cpus: int, timeout: float, out: Path | None) -> dict | None:
    """The census as one job of `executor` (after its image's build job, if one is queued):
    this checkout's own `census` with the same options, writing its record where this side
    reads it back (`out`, else beside the job's log in the lab's cache); None in a dry run.
    A job that left no record is an Error (exit 1) with the log's last line."""
    meta = executor.images({"A": kern}, clock)["A"]
    argv = ["census", *kern.build_args, "--cpus", str(cpus), "--timeout", f"{timeout:g}"]
    for w in workloads:
        argv += ["--workload", w]
    if clock.deterministic:
        argv.append("--deterministic")
    state, log_path, rec_path = executor.run_command(f"census-{variants.slug(kern.name)}",
                                                     argv, meta["key"], clock, cpus, out)
    if proc.is_dry_run():
        return None
    safeio.check_readable(rec_path, "census record")
    try:
        rec = json.loads(rec_path.read_text())
    except (OSError, ValueError):
        tail = slurm.last_lines(log_path, 1)[:200]
        raise Error(f"census: the job ended {state.lower()} without a record"
                    + (f": {tail}" if tail else "") + f" (log {log_path})", EXIT_FAILED) from None
    log(f"census: {rec_path}")
    return rec


def report(rec: dict, names: list[str], as_json: bool) -> int:
    """Print a census record, as the table or as JSON; 1 when its boot or a workload
    failed."""
    b, rows = vm.Boot.from_record(rec["boot"]), rec["workloads"]
    if as_json:
        json.dump(rec, sys.stdout, indent=1)
        print()
    else:
        print(f"{rec['variant']} ({b.release}, {rec['arch']}), {rec['clock']['mode']},"
              f" {rec['clock']['cpus']} vCPU(s), accel={b.accel}: sleepers/calls per"
              " wakeup site")
        print(table(rows))
        for r in rows:
            if r.get("skipped"):
                print(f"{r['workload']}: {r['skipped']}: {r.get('reason')}")
        few = rarely(rows)
        if few:
            print("found a sleeper in fewer than half of its calls: " + "; ".join(
                f"{site} in {w} ({s}/{c})" for w, site, s, c in few))
    failed, missing = failures(names, rows)
    if missing or failed:
        log(f"census: failed: {', '.join(failed) or 'none'}; no counts: "
            f"{', '.join(missing) or 'none'}")
    return 0 if b.ok and not missing and not failed else EXIT_FAILED
