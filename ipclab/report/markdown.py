# SPDX-License-Identifier: MIT
"""The Markdown report: each results file's tables and plots, then every later file
compared against the first, with the comparisons the caller computed (or computed here,
once, when it has none)."""

import contextlib
import io
import os
import stat
from pathlib import Path

from ipclab import Error, compare, deterministic, envinfo, proc, results, safeio
from ipclab.report.compare import render_compare
from ipclab.report.show import build_text, quality, render_views


MANIFEST = ".ipclab-report"


def write_report(paths_and_results, out_dir, peers=None, outcomes=None, force=False):
    """report.md plus PNG plots in out_dir; returns the Markdown path.

    One results file: its tables and plots.  Several: each one's tables,
    then every later file compared against the first (`outcomes`: those comparisons, when
    the caller has computed them already; they are not computed again).  peers: a peers run
    whose peer figures stand beside ours in the seed tables.  force: write into a folder
    that holds files but no report of ours (its files are kept).
    """
    from ipclab.report import plot   # matplotlib is slow to import; only reports need it

    out_dir = Path(out_dir)
    earlier = _own_plots(out_dir, force)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    md = []
    w = md.append
    first = paths_and_results[0][1]
    w(f"# ipclab report: {', '.join((r.get('id', '?') for _, r in paths_and_results))}\n")
    for path, res in paths_and_results:
        env = res.get("env", {})
        w(f"## {res.get('id')}\n")
        w(f"- file: `{path}`")
        plan = res.get("plan", {})
        w(f"- suite: {res.get('suite')}, {res.get('mode')} mode, {plan.get('reps', '?')}"
          f" repetitions + {plan.get('warmups', '?')} warmup round(s), created"
          f" {res.get('created')}")
        if env:
            accel = results.accel(res, "?")
            w(f"- host: {env.get('cpu', '?')}, {env.get('nproc', '?')} CPUs, kernel"
              f" {env.get('kernel', '?')}, THP {env.get('thp', '?')}, accel {accel}")
        caveat = deterministic.caveat_of(res)
        if caveat:
            w(f"- **{caveat}**")
        host = res.get("host")
        if isinstance(host, dict) and host:
            try:
                for x in envinfo.warnings(host):
                    if not x.startswith("load average"):  # quality() says it below
                        w("- environment: " + x)
            except (TypeError, ValueError, AttributeError):
                pass  # a hand-edited host block must not stop the report
        if results.build(res) is not None:
            w(f"- kernel: {build_text(results.build(res))}")
        meta = results.other_meta(res)
        if meta:
            w("- meta: " + ", ".join(f"{k}={v}" for k, v in sorted(meta.items())))
        w("")
        buf = io.StringIO()
        render_views(res, buf, markdown=True, peers=peers)
        w(buf.getvalue())
        lines, warns = quality(res)
        for l in lines:
            w("- " + l)
        for x in warns:
            w("- warning: " + x)
        w("")
        for png, caption in plot.run_plots(res, out_dir):
            written.append(png.name)
            w(f"![{caption}]({png.name})\n")
    for i, (path, res) in enumerate(paths_and_results[1:]):
        buf = io.StringIO()
        outcome = outcomes[i] if outcomes else compare.compare_results(first, res)
        render_compare(outcome, buf)
        w(f"## Compare: {first.get('id')} -> {res.get('id')}\n")
        w("```\n" + buf.getvalue().rstrip() + "\n```\n")
        png = plot.compare_plot(outcome, out_dir)
        if png:
            written.append(png.name)
            w(f"![baseline -> new: each delta with its interval]({png.name})\n")
    path = out_dir / "report.md"
    # The manifest first: a report.md beside it is ours even if this write is cut short.
    proc.write_text_atomic(out_dir / MANIFEST, "".join(n + "\n" for n in sorted(written)))
    proc.write_text_atomic(path, "\n".join(md).rstrip() + "\n")
    # An earlier report's plots that this one does not show would pass for its own; only
    # the plots ipclab recorded as written are removed, never a file of the user's.
    for name in earlier - set(written):
        target = out_dir / name
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(target).st_mode):
                os.unlink(target)
    return path


def _own_plots(out_dir, force):
    """The plots an earlier report of ours recorded in out_dir. Error when out_dir holds
    files but no report of ours, unless `force`: it is a folder of the user's."""
    manifest = out_dir / MANIFEST
    safeio.check_replaceable(out_dir / "report.md")
    safeio.check_replaceable(manifest)
    try:
        names = manifest.read_text(errors="replace").split("\n")
    except FileNotFoundError:
        try:
            used = any(out_dir.iterdir())
        except FileNotFoundError:
            used = False
        except NotADirectoryError:
            raise Error(f"{out_dir}: is not a directory; give a folder for the report") \
                from None
        if used and not force:
            raise Error(f"{out_dir}: holds files but no ipclab report; give another folder,"
                        " or --force to write the report beside them")
        return set()
    return {n for n in names if safeio.plain_name(n) and n.endswith(".png")}
