# SPDX-License-Identifier: MIT
"""Seed-shaped tables of one run, and the Markdown report with plots.

Each seed suite's views are printed in the seed's own shape (the pipe sweep
as writers x readers, the fast-pipes ladder as steps), ours as the median
with its CV, and the seed's published figures beside them.
"""

import math
import os
import sys

from ipclab import compare, deterministic, fmt, results, stats, suites


def ref_values(ref, view, row, col):
    """The published figure(s) for one entry of a view: a list, a number or None."""
    if not ref or not view.ref_key:
        return None
    figs = ref.get("figures", {}).get(view.ref_key, {})
    k = view.ref_cells.get((row, col))
    v = figs.get("cells", {}).get(k) if k and not k.startswith("local:") else None
    if isinstance(v, dict):
        v = v.get("value")
    return v


def _ref_text(ref, view, row, col):
    """The published figure(s) for one entry of a view, as text."""
    if not ref or not view.ref_key:
        return ""
    figs = ref.get("figures", {}).get(view.ref_key, {})
    k = view.ref_cells.get((row, col))
    v = figs.get("cells", {}).get(k) if k and not k.startswith("local:") else None
    if v is None:
        return ""
    if isinstance(v, dict):
        v = v.get("value")
    if isinstance(v, list):
        return " -> ".join(fmt.num(x) for x in v)
    return fmt.num(v)


def _local_text(ref, view, row, col):
    local = (ref or {}).get("local", {}).get("cells", {})
    k = view.ref_cells.get((row, col))
    v = local.get(k[len("local:"):] if k and k.startswith("local:") else k) if k else None
    if v is None:
        return ""
    return v if isinstance(v, str) else fmt.num(v)


def view_values(res, view):
    """{(row, col): (values list, cell)} for one view of one results file."""
    cells = {c["key"]: c for c in res["cells"]}
    out = {}
    for label, entries in view.rows:
        for col, (key, path) in zip(view.columns, entries):
            c = cells.get(key)
            if c is None:
                continue
            out[(label, col)] = ([v * view.scale for v in results.metric_values(c, path)], c)
    return out


def parts_of(res):
    """The seed suites present in a results file, in suite order."""
    present = {c.get("suite") for c in res["cells"]}
    parts = [s for s in suites.SEED_SUITES if s.name in present]
    return parts


def render_views(res, out=sys.stdout, markdown=False):
    """One table per seed view: ours (median, CV) beside the published figures."""
    mode = res.get("mode", "quick")
    cells = {c["key"]: c for c in res["cells"]}
    det = deterministic.is_deterministic(res)
    for part in parts_of(res):
        # Published figures are times and rates on real machines: beside instruction
        # counts they would mislead.
        ref = None if det else part.reference()
        shown = False
        for view in part.views:
            if mode not in view.modes:
                continue
            if det:
                view = deterministic.view_for(view, cells)
                if view is None:
                    continue
            vals = view_values(res, view)
            if not vals:
                continue
            has_ref = any(_ref_text(ref, view, r, c) for r, _ in view.rows for c in view.columns)
            has_local = any(_local_text(ref, view, r, c)
                            for r, _ in view.rows for c in view.columns)
            rows = []
            for label, entries in view.rows:
                line = [label]
                for col, (key, _) in zip(view.columns, entries):
                    xs, cell = vals.get((label, col), ([], None))
                    if cell is not None and cell.get("status") in ("failed", "skipped") \
                            and not xs:
                        txt = cell["status"]
                    elif xs and det:
                        txt = "%s ±%s" % (fmt.count(stats.median(xs)),
                                          fmt.pct(deterministic.spread(xs), False, 3))
                    elif xs:
                        s = stats.summarize(xs)
                        txt = "%s ±%s" % (fmt.num(s.median), fmt.pct(s.cv, False)
                                          if math.isfinite(s.cv) else "-")
                    else:
                        txt = "-"
                    r = _ref_text(ref, view, label, col)
                    if r:
                        txt += "  (%s)" % r
                    loc = _local_text(ref, view, label, col)
                    if loc:
                        txt += "  [%s]" % loc
                    line.append(txt)
                rows.append(line)
            if not shown:
                title = "%s: %s" % (part.name, ref.get("title", "") if ref else part.summary)
                out.write(("### %s\n\n" if markdown else "== %s ==\n") % title)
                shown = True
            legend = ("median ±how far it could be off (95% order-statistics interval)" if det
                      else "ours: median ±CV")
            if has_ref:
                legend += "; (seed: %s)" % " -> ".join(ref.get("columns", []))
            if has_local:
                legend += "; [peer on this machine, DESIGN.md]"
            unit = (" in " + view.unit) if view.unit and view.unit not in view.title else ""
            out.write("%s%s (%s)\n" % (view.title, unit, legend))
            if markdown:
                out.write("\n" + fmt.md_table([view.row_header or " "] + view.columns, rows)
                          + "\n\n")
            else:
                out.write(fmt.table([view.row_header] + view.columns, rows) + "\n\n")
        if shown and ref:
            src = "Seed figures: %s, %s." % (ref["source"], ref.get("machine", ""))
            out.write(src + "\n")
            if ref.get("local"):
                out.write("Peer figures: %s.\n" % ref["local"]["source"])
            out.write("\n")
        for key in sorted(cells):
            c = cells[key]
            if c.get("suite") == part.name and c.get("status") in ("failed", "skipped"):
                out.write("%s: %s: %s\n" % (key, c["status"], c.get("error", "")))
    # Cells outside any seed view (ad-hoc workload runs): a generic table.
    other = [c for c in res["cells"] if c.get("suite") not in {p.name for p in parts_of(res)}]
    if other:
        render_cells(other, out, markdown)


def render_cells(cells, out=sys.stdout, markdown=False):
    header = ["cell", "metric", "median", "IQR", "CV", "n"]
    rows = []
    for c in cells:
        paths = compare.metrics_for(c)
        if not paths:
            rows.append([c["key"], c.get("status", ""), "-", "-", "-", "0"])
        for p in paths:
            xs = results.metric_values(c, p)
            s = stats.summarize(xs)
            unit, _ = results.metric_info(c, p)
            rows.append([c["key"], ("%s %s" % (results.metric_label(c, p).split(".", 1)[-1],
                                               unit)).strip(),
                         fmt.num(s.median), fmt.num(s.iqr), fmt.pct(s.cv, False), str(s.n)])
    if markdown:
        out.write(fmt.md_table(header, rows) + "\n\n")
    else:
        out.write(fmt.table(header, rows, ["<", "<", ">", ">", ">", ">"]) + "\n\n")


def quality(res):
    """Per-suite precision (CV of each cell's primary metric) and warnings."""
    lines, warns = [], []
    reps = [len(results.measured(c)) for c in res["cells"] if results.measured(c)]
    det = deterministic.is_deterministic(res)
    # Under icount the samples of a cell agree to parts in 10^4: a few are enough.
    if reps and min(reps) < stats.MIN_REPS and not det:
        warns.append("only %d repetitions in some cells (fewer than %d): compare will have"
                     " little power; use --reps 10 or more" % (min(reps), stats.MIN_REPS))
    by_suite = {}
    for c in res["cells"]:
        paths = [p for p, _ in deterministic.cost_paths(c)] if det else compare.metrics_for(c)
        if not paths:
            continue
        xs = results.metric_values(c, paths[0])
        cvs = deterministic.spread(xs) if det else stats.cv(xs)
        if math.isfinite(cvs):
            by_suite.setdefault(c.get("suite", ""), []).append((cvs, c["key"]))
    noisy = 0
    for suite, cvs in by_suite.items():
        vals = sorted(v for v, _ in cvs)
        what = ("uncertainty of the median instructions per operation" if det
                else "CV of the primary metric")
        lines.append("%s: %s: median %s, max %s over %d cells"
                     % (suite, what, fmt.pct(stats.median(vals), False, 3 if det else 1),
                        fmt.pct(vals[-1], False, 3 if det else 1), len(vals)))
        noisy += sum(1 for v in vals if v > (deterministic.TOO_NOISY if det else stats.MAX_CV))
    if noisy and det:
        warns.append("spread over %g%% in %d cells: too noisy for the deterministic mode"
                     % (deterministic.TOO_NOISY * 100, noisy))
    elif noisy:
        warns.append("CV over %d%% in %d cells: results this noisy hide small changes; use an"
                     " idle machine, more --reps, or --full" % (stats.MAX_CV * 100, noisy))
    acc = res.get("meta", {}).get("accel") or res.get("env", {}).get("accel")
    if det:
        warns.append("deterministic clock (%s): times are guest instructions and rates are"
                     " per 10^9 guest instructions, not per second" % deterministic.clock_of(res))
    elif acc and acc != "native":
        warns.append("accel=%s: timings are emulated; only ratios of counts are meaningful"
                     % acc)
    host = res.get("host") or {}
    load, nproc = host.get("loadavg"), host.get("nproc")
    nproc = nproc if isinstance(nproc, int) and nproc > 0 else 1
    if isinstance(load, list) and load and isinstance(load[0], (int, float)) \
            and load[0] > 0.5 * nproc:
        warns.append("load average was %.2f on %d CPUs when the run started: other work"
                     " competed with it" % (load[0], nproc))
    return lines, warns


def show(res, out=sys.stdout):
    out.write("%s: suite %s, %s mode, created %s%s\n" % (
        res.get("id"), res.get("suite"), res.get("mode"), res.get("created"),
        "" if res.get("complete") else " (incomplete: continue with run --resume)"))
    env = res.get("env", {})
    if env:
        out.write("host: %s, %s, %s CPUs, kernel %s, accel %s\n" % (
            env.get("hostname", "?"), env.get("cpu", "?"), env.get("nproc", "?"),
            env.get("kernel", "?"), res.get("meta", {}).get("accel", env.get("accel", "?"))))
    if deterministic.is_deterministic(res):
        out.write("clock: %s (deterministic: guest instructions, not time)\n"
                  % deterministic.clock_of(res))
    out.write("\n")
    render_views(res, out)
    lines, warns = quality(res)
    for l in lines:
        out.write(l + "\n")
    for w in warns:
        out.write("warning: %s\n" % w)


def write_report(paths_and_results, out_dir):
    """report.md plus PNG plots in out_dir; returns the Markdown path.

    One results file: its tables and plots.  Several: each one's tables,
    then every later file compared against the first.
    """
    from ipclab import plot   # matplotlib is slow to import; only reports need it

    os.makedirs(out_dir, exist_ok=True)
    md = []
    w = md.append
    first = paths_and_results[0][1]
    w("# ipclab report: %s\n" % ", ".join(r.get("id", "?") for _, r in paths_and_results))
    for path, res in paths_and_results:
        env = res.get("env", {})
        w("## %s\n" % res.get("id"))
        w("- file: `%s`" % path)
        w("- suite: %s, %s mode, %s repetitions + %s warmup round(s), created %s"
          % (res.get("suite"), res.get("mode"), res.get("plan", {}).get("reps", "?"),
             res.get("plan", {}).get("warmups", "?"), res.get("created")))
        if env:
            w("- host: %s, %s CPUs, kernel %s, THP %s, accel %s"
              % (env.get("cpu", "?"), env.get("nproc", "?"), env.get("kernel", "?"),
                 env.get("thp", "?"), res.get("meta", {}).get("accel", env.get("accel", "?"))))
        acc = res.get("meta", {}).get("accel") or env.get("accel")
        if deterministic.is_deterministic(res):
            w("- **deterministic clock (%s)**: times are guest instructions, rates are per"
              " 10^9 guest instructions" % deterministic.clock_of(res))
        elif acc and acc != "native":
            w("- **timings are emulated (%s)**: absolute times are not native" % acc)
        host = res.get("host")
        if isinstance(host, dict) and host:
            from ipclab import envinfo
            try:
                for x in envinfo.warnings(host):
                    if not x.startswith("load average"):  # quality() says it below
                        w("- environment: " + x)
            except (TypeError, ValueError, AttributeError):
                pass  # a hand-edited host block must not stop the report
        meta = {k: v for k, v in res.get("meta", {}).items() if k != "accel"}
        if meta:
            w("- meta: " + ", ".join("%s=%s" % kv for kv in sorted(meta.items())))
        w("")
        import io
        buf = io.StringIO()
        render_views(res, buf, markdown=True)
        w(buf.getvalue())
        lines, warns = quality(res)
        for l in lines:
            w("- " + l)
        for x in warns:
            w("- warning: " + x)
        w("")
        for png, caption in plot.run_plots(res, out_dir):
            w("![%s](%s)\n" % (caption, os.path.basename(png)))
    for path, res in paths_and_results[1:]:
        import io
        buf = io.StringIO()
        outcome = compare.compare_results(first, res)
        compare.render(outcome, buf)
        w("## Compare: %s -> %s\n" % (first.get("id"), res.get("id")))
        w("```\n" + buf.getvalue().rstrip() + "\n```\n")
        png = plot.compare_plot(outcome, out_dir)
        if png:
            w("![%s](%s)\n" % ("baseline -> new, 95% CI", os.path.basename(png)))
    path = os.path.join(out_dir, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(md).rstrip() + "\n")
    return path
