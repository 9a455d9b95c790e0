# SPDX-License-Identifier: MIT
"""What the kernel lab's commands print, from the data the lab returns (ipclab/lab/ab.py's
VmRun and ABRun, ipclab/lab/bisect.py's BisectResult): `vm run`'s output, verdict and results,
`ab`'s comparison and profile diff, and the exit status each means. The lab computes, and
logs only the progress of its builds and boots; the CLI hands its data here."""

import json
import sys

from ipclab import EXIT_FAILED, results
from ipclab.compare import record as comparison
from ipclab.deterministic import cost
from ipclab.report.compare import render_compare
from ipclab.report.profile import render_profile_diff
from ipclab.report.show import build_text
from ipclab.progress import log


def vm_command(run, out=sys.stdout):
    """`vm run VARIANT -- CMD` (or --conformance): the command's output, then the boot's
    verdict; the exit status is the command's, or 1 when the boot failed otherwise. None (a
    dry run) is 0."""
    if run is None:
        return 0
    out.write(run.output)
    out.flush()
    for line in run.verdict:
        log(line)
    if not run.boot.ok:
        return run.command_rc or EXIT_FAILED
    # A command the host judged (the arm64 conformance tests) may fail in a healthy boot.
    return run.command_rc or 0


def vm_suite(run, out=sys.stdout):
    """`vm run VARIANT SUITE`: the boot's verdict, where the results are and what was
    measured, what its clock means; 1 when the boot or a cell failed."""
    if run is None:
        return 0
    for line in run.verdict:
        log(line)
    res, b = run.results, run.boot
    out.write(f"results: {run.out} (variant={results.variant(res)} kernel={b.release}"
              f" accel={run.accel})\n")
    out.write(f"kernel: {build_text(results.build(res))}\n")
    out.flush()
    caveat = run.clock.caveat(run.accel)
    if caveat:
        log(f"note: {caveat}")
    if run.clock.deterministic:
        arm64 = (results.build(res) or {}).get("arch") == "arm64"
        log(f"note: each sample's \"cost\" holds the cost model's counts; "
            f"{cost.caveat(results.cost_model(res), arm64)}")
    failed = run.failed_cells
    if failed:
        log(f"failed cells: {', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''}")
    return 0 if b.ok and not failed else EXIT_FAILED


def ab(run, out=sys.stdout, as_json=False):
    """`ab OLD NEW`: the comparison (as `compare` prints it, or its --json record) under a
    heading that says what was booted, then, with --profile, where the instructions went.
    Its exit status: 1 when a boot failed, else what the record's overall verdict means
    (compare.record.exit_status: 0 no change, 3 better, 4 worse, 5 mixed, 6 inconclusive)."""
    if run is None:
        return 0
    names = run.names
    # What the clock means for the numbers, render_compare says (Mode.caveat).
    heading = "\n".join(
        [f"ipclab ab {names['A']} -> {names['B']}: suite {run.suite}, {run.boots} boots each, "
         f"accel={run.accel}, {run.clock.mode} clock"] +
        [f"  {side}: {build_text(run.builds[side])}" for side in names])
    if as_json:
        json.dump(run.record, out, indent=1)
        out.write("\n")
    else:
        render_compare(run.outcome, out, heading=heading, record=run.record)
        if run.profiles:
            render_profile_diff(run.profiles[0], run.profiles[1], out,
                                       unit=run.clock.unit)
    out.flush()
    return EXIT_FAILED if run.failures else comparison.exit_status(run.record)


def bisect(finding):
    """`bisect`, whose steps and finding were written as it went: 0 when it named the first
    commit that moves the metric (or was a dry run); 1 when only skipped commits are left to
    tell which."""
    return 0 if finding is None or finding.found else EXIT_FAILED
