# SPDX-License-Identifier: MIT
"""The Markdown report: each results file's tables and plots, then every later file
compared against the first, with the comparisons the caller computed (or computed here,
once, when it has none)."""

import contextlib
import io
import json
import os
from pathlib import Path

from ipclab import Error, compare, envinfo, proc, results, safeio
from ipclab.mode import caveat_of
from ipclab.report.compare import render_compare
from ipclab.report.show import build_text, quality, render_views


MANIFEST = ".ipclab-report.json"     # what ipclab wrote in a report folder: its own files
MANIFEST_SCHEMA = "ipclab-report/1"


def _compare_section(w, written, plot, first, res, outcome, rec, out_dir):
    """One comparison's section: its text and its plot, both printing the verdicts of one
    record (`rec`, or built here once)."""
    rec = rec if rec is not None else compare.outcome_record(outcome)
    buf = io.StringIO()
    render_compare(outcome, buf, record=rec)
    w(f"## Compare: {first.get('id')} -> {res.get('id')}\n")
    w("```\n" + buf.getvalue().rstrip() + "\n```\n")
    png = plot.compare_plot(outcome, out_dir, record=rec)
    if png:
        written.append(png.name)
        w(f"![old -> new: each delta with its interval]({png.name})\n")


def write_report(paths_and_results, out_dir, peers=None, outcomes=None, force=False,
                 records=None):
    """report.md plus PNG plots in out_dir; returns the Markdown path.

    One results file: its tables and plots.  Several: each one's tables,
    then every later file compared against the first (`outcomes`: those comparisons, when
    the caller has computed them already; they are not computed again; `records`: their
    comparison records, whose verdicts the text and the plots print).  peers: a peers run
    whose peer figures stand beside ours in the seed tables.  A folder that holds files
    but no report of ipclab's is refused unless force; either way only the plots ipclab
    recorded as its own (MANIFEST) are ever removed.
    """
    from ipclab.report import plot   # matplotlib is slow to import; only reports need it

    out_dir = Path(out_dir)
    earlier = _own_files(out_dir, force)
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
        caveat = caveat_of(res)
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
        outcome = outcomes[i] if outcomes else compare.compare_results(first, res)
        _compare_section(w, written, plot, first, res, outcome,
                         records[i] if records else None, out_dir)
    path = out_dir / "report.md"
    proc.write_text_atomic(path, "\n".join(md).rstrip() + "\n")
    proc.write_json_atomic(out_dir / MANIFEST, {"schema": MANIFEST_SCHEMA,
                                                "files": ["report.md"] + written})
    # An earlier report's plots that this one does not show would pass for its own.
    for name in earlier - set(written) - {"report.md"}:
        with contextlib.suppress(OSError):
            os.unlink(out_dir / name)
    return path


def _own_files(out_dir, force):
    """The files an earlier ipclab report in out_dir recorded as its own; Error when the
    folder holds files but no such record (someone else's), unless force."""
    safeio.check_replaceable(out_dir / "report.md")
    try:
        with open(out_dir / MANIFEST) as f:
            rec = json.load(f)
        files = rec.get("files") if isinstance(rec, dict) and \
            rec.get("schema") == MANIFEST_SCHEMA else None
        if isinstance(files, list):
            return {n for n in files if safeio.plain_name(n) and n.endswith(".png")}
    except (OSError, ValueError):
        pass        # no record, or one unreadable: the folder is judged by what it holds
    try:
        held = any(True for _ in out_dir.iterdir())
    except FileNotFoundError:
        return set()
    except OSError as e:
        raise Error(f"{out_dir}: cannot read: {e.strerror}") from None
    if held and not force:
        raise Error(f"{out_dir}: holds files but no report of ipclab's: give another -o, or"
                    " --force to write the report into it (no file of its own is removed)")
    return set()
