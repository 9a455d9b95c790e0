# SPDX-License-Identifier: MIT
"""Presentation: seed-shaped tables of one run, a comparison, a profile diff, and the
Markdown report with plots.  Computes nothing it does not print; the numbers come from
views, compare, stats and profile.

Each seed suite's views are printed in the seed's own shape (the pipe sweep
as writers x readers, the fast-pipes ladder as steps), ours as the median
with its CV, and the seed's published figures beside them.
"""

import contextlib
import io
import math
import os
import re
import sys
from pathlib import Path

from ipclab import compare, costreport, deterministic, envinfo, fmt, metrics, modes, peers
from ipclab import proc, profile, results, safeio, stats, views


def _ref_text(ref, view, row, col):
    v = views.published(ref, view, row, col)
    if v is None:
        return ""
    if isinstance(v, list):
        return " -> ".join(fmt.num(x) for x in v)
    return fmt.num(v)


def _median_cv(xs):
    s = stats.summarize(xs)
    cv = fmt.pct(s.cv, False) if math.isfinite(s.cv) else "-"
    return f"{fmt.num(s.median)} ±{cv}"


def _peer_text(row):
    """A live peer beside a seed table entry: ours and the peer as the peers run measured
    them side by side (median ±CV each), and their ratio."""
    return f"[ours {_median_cv(row.ours)} / peer {_median_cv(row.peer)} = {fmt.num(row.ratio)}]"


def _interval(ci):
    lo, hi = ci
    return f"[{fmt.num(lo)}, {fmt.num(hi)}]" if math.isfinite(lo) and math.isfinite(hi) else "-"


def render_peers(res, out=sys.stdout, markdown=False):
    """A peers run's pairs: the ipcbench cell and the peer program, median ±CV each, and
    their ratio. Returns the keys of the cells shown."""
    rows = views.peer_rows(res)
    if not any(peers.is_peer(c) for c in res["cells"]):
        return set()
    table = []
    for r in rows:
        n = f"{len(r.ours)}/{len(r.peer)}"
        table.append([r.pair.name, r.measure.label,
                      f"{r.ours_cell['key']}: {_median_cv(r.ours)}" if r.ours else
                      f"{r.ours_cell['key']}: {r.ours_cell.get('status', '-')}",
                      _median_cv(r.peer) if r.peer else r.peer_cell.get("status", "-"),
                      fmt.num(r.ratio), _interval(r.ratio_ci), n])
    head = ["peer", "figure", "ipcbench (median ±CV)", "peer (median ±CV)", "ours/peer",
            "95% CI", "n"]
    title = ("Live peers: each peer program beside the ipcbench cell that does the same work,"
             " interleaved round by round")
    out.write(f"### {title}\n\n" if markdown else f"== {title} ==\n")
    if markdown:
        out.write(fmt.md_table(head, table) + "\n\n")
    else:
        out.write(fmt.table(head, table, ["<", "<", "<", ">", ">", ">", ">"]) + "\n\n")
    for p in dict.fromkeys(r.pair for r in rows):
        out.write(f"{'- ' if markdown else ''}{p.name} ({p.command} ...): {p.differs}\n")
    out.write("\n")
    # Every cell of a pair, whether or not its partner got numbers.
    keys = {k for p in peers.PAIRS for k in (p.key, p.ours[0])}
    for c in res["cells"]:
        if c["key"] in keys and c.get("status") in ("failed", "skipped"):
            out.write(f"{c['key']}: {c['status']}: {c.get('error', '')}\n")
    return keys


def render_views(res, out=sys.stdout, markdown=False, peers=None):
    """One table per seed view: ours (median, CV) beside the published figures, and beside
    the live peers of `peers` (a peers run) where one does the same work."""
    cells = {c["key"]: c for c in res["cells"]}
    det = deterministic.is_deterministic(res)
    shown = views.shown(res)
    # Peer programs measure time: nothing to set beside guest instruction counts.
    prows = views.peer_rows(peers) if peers and not det else []
    for i, sv in enumerate(shown):
        part, view, ref = sv.part, sv.view, sv.ref
        first = i == 0 or shown[i - 1].part is not part
        last = i == len(shown) - 1 or shown[i + 1].part is not part
        vals = views.values(res, view)
        rows = []
        used = []
        for label, entries in view.rows:
            line = [label]
            for col, (key, _) in zip(view.columns, entries):
                xs, cell = vals.get((label, col), ([], None))
                if cell is not None and cell.get("status") in ("failed", "skipped") \
                        and not xs:
                    txt = cell["status"]
                elif xs and det and len(xs) < deterministic.MIN_SAMPLES:
                    txt = f"{fmt.count(stats.median(xs))} ±? (n={len(xs)})"
                elif xs and det:
                    spread = fmt.pct(deterministic.spread(xs), False, 3)
                    txt = f"{fmt.count(stats.median(xs))} ±{spread}"
                elif xs:
                    s = stats.summarize(xs)
                    cv = fmt.pct(s.cv, False) if math.isfinite(s.cv) else "-"
                    txt = f"{fmt.num(s.median)} ±{cv}"
                else:
                    txt = "-"
                r = _ref_text(ref, view, label, col)
                if r:
                    txt += f"  ({r})"
                live = views.live_peer(prows, part, view, label, col)
                if live:
                    txt += "  " + _peer_text(live)
                    used.append(live)
                line.append(txt)
            rows.append(line)
        if first:
            title = f"{part.name}: {ref.get('title', '') if ref else part.summary}"
            out.write(f"### {title}\n\n" if markdown else f"== {title} ==\n")
        has_ref = any(_ref_text(ref, view, r, c) for r, _ in view.rows for c in view.columns)
        legend = ("median ±how far it could be off (95% order-statistics interval; ±? where"
                  f" fewer than {deterministic.MIN_SAMPLES} samples cannot give one)" if det
                  else "ours: median ±CV")
        if has_ref:
            legend += f"; (seed: {' -> '.join(ref.get('columns', []))})"
        if used:
            legend += (f"; [live peer, from the peers run {peers.get('id')}: ours / peer,"
                       " each median ±CV, measured side by side = ratio]")
        unit = (" in " + view.unit) if view.unit and view.unit not in view.title else ""
        out.write(f"{view.title}{unit} ({legend})\n")
        if markdown:
            out.write("\n" + fmt.md_table([view.row_header or " "] + view.columns, rows)
                      + "\n\n")
        else:
            out.write(fmt.table([view.row_header] + view.columns, rows) + "\n\n")
        for p in dict.fromkeys(u.pair for u in used):
            out.write(f"Live peer {p.name} ({p.command} ...): {p.differs}.\n")
        if used:
            out.write("\n")
        if last and ref:
            out.write(f"Seed figures: {views.citation(ref)}. Machine: {ref.get('machine', '')}"
                      ".\n\n")
        if last:
            for key in sorted(cells):
                c = cells[key]
                if c.get("suite") == part.name and c.get("status") in ("failed", "skipped"):
                    out.write(f"{key}: {c['status']}: {c.get('error', '')}\n")
    # A peers run's pairs, then cells outside any seed view (ad-hoc workload runs): a
    # generic table.
    paired = render_peers(res, out, markdown)
    covered = {sv.part.name for sv in shown}
    other = [c for c in res["cells"] if c.get("suite") not in covered and c["key"] not in paired]
    if other:
        render_cells(other, out, markdown)


def render_cells(cells, out=sys.stdout, markdown=False):
    header = ["cell", "metric", "median", "IQR", "CV", "n"]
    rows = []
    for c in cells:
        paths = metrics.metrics_for(c)
        if not paths:
            rows.append([c["key"], c.get("status", ""), "-", "-", "-", "0"])
        for p in paths:
            xs = metrics.metric_values(c, p)
            s = stats.summarize(xs)
            unit, _ = metrics.metric_info(c, p)
            label = metrics.metric_label(c, p).split(".", 1)[-1]
            rows.append([c["key"], f"{label} {unit}".strip(),
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
        warns.append(f"only {min(reps)} repetitions in some cells (fewer than {stats.MIN_REPS}):"
                     " compare will have little power; use --reps 10 or more")
    by_suite, few = {}, 0
    for c in res["cells"]:
        paths = [p for p, _ in deterministic.cost_paths(c)] if det else metrics.metrics_for(c)
        if not paths:
            continue
        xs = metrics.metric_values(c, paths[0])
        if det and xs and len(xs) < deterministic.MIN_SAMPLES:
            few += 1
        cvs = deterministic.spread(xs) if det else stats.cv(xs)
        if math.isfinite(cvs):
            by_suite.setdefault(c.get("suite", ""), []).append((cvs, c["key"]))
    noisy = 0
    for suite, cvs in by_suite.items():
        vals = sorted(v for v, _ in cvs)
        what = ("uncertainty of the median instructions per operation" if det
                else "CV of the primary metric")
        decimals = 3 if det else 1
        med, top = fmt.pct(stats.median(vals), False, decimals), fmt.pct(vals[-1], False, decimals)
        lines.append(f"{suite}: {what}: median {med}, max {top} over {len(vals)} cells")
        noisy += sum(1 for v in vals if v > (deterministic.TOO_NOISY if det else stats.MAX_CV))
    if few:
        warns.append(f"fewer than {deterministic.MIN_SAMPLES} samples in {few} cells: too few for"
                     " a 95% interval of the median, so compare gives them no verdict; use"
                     f" --reps {deterministic.MIN_SAMPLES + 3} or more")
    if noisy and det:
        warns.append(f"spread over {deterministic.TOO_NOISY * 100:g}% in {noisy} cells: too noisy"
                     " for the deterministic mode")
    elif noisy:
        ncells = sum(len(v) for v in by_suite.values())
        warns.append(stats.noise_warning(noisy, f"{ncells} cells"))
    if not det:
        warns += [mode_text(f) for f in modes.findings(res)]
    caveat = deterministic.caveat_of(res)
    if caveat:
        warns.append(caveat)
    host = res.get("host") or {}
    load, nproc = host.get("loadavg"), host.get("nproc")
    nproc = nproc if isinstance(nproc, int) and nproc > 0 else 1
    if isinstance(load, list) and load and isinstance(load[0], (int, float)) \
            and load[0] > 0.5 * nproc:
        warns.append(f"load average was {load[0]:.2f} on {nproc:d} CPUs when the run started:"
                     " other work competed with it")
    return lines, warns


def mode_text(f):
    """One line for a cell whose samples split into two modes (modes.Finding)."""
    sp = f.split
    unit = f" {f.unit}" if f.unit else ""
    cause = f"; {f.cause}" if f.cause else ""
    return (f"{f.key}: its samples fall into two modes, {len(sp.low)} near"
            f" {fmt.num(sp.low_median)} and {len(sp.high)} near {fmt.num(sp.high_median)}{unit};"
            f" a median and CV describe neither{cause}. {f.advice}")


def build_text(build):
    """What kernel was measured (results meta.build, set by the lab), in one line."""
    if not isinstance(build, dict):
        return "?"
    parts = [str(build.get("release") or "?")]
    base = build.get("base")
    if isinstance(base, dict):
        pkg = f"{base.get('package')} {base.get('version')}" if base.get("package") \
            else base.get("tarball", "?")
        parts.append(f"base {base.get('name')} ({pkg})")
    src = str(build.get("source") or "")
    if build.get("commit"):
        parts.append(f"commit {build['commit'][:12]} ({build.get('describe') or '?'})")
    elif build.get("image_sha256"):
        parts.append(f"prebuilt image sha256 {build['image_sha256'][:12]}")
    elif src.startswith("tarball:"):
        _, name, digest = (src.split(":", 2) + ["", ""])[:3]
        parts.append(f"{name} sha256 {digest[:12]}")
    elif src:
        parts.append(src)
    patches = build.get("patches") or []
    parts.append("patches " + ", ".join(f"{p.get('name')} {str(p.get('sha256'))[:8]}"
                                        for p in patches) if patches else "no patches")
    cfg = build.get("config_sha256")
    parts.append(f"config sha256 {cfg[:12]}" if cfg else "config unknown")
    return ", ".join(parts)


def show(res, out=sys.stdout, peers=None):
    incomplete = "" if res.get("complete") else " (incomplete: continue with run --resume)"
    out.write(f"{res.get('id')}: suite {res.get('suite')}, {res.get('mode')} mode, created"
              f" {res.get('created')}{incomplete}\n")
    env = res.get("env", {})
    if env:
        accel = results.accel(res, "?")
        out.write(f"host: {env.get('hostname', '?')}, {env.get('cpu', '?')},"
                  f" {env.get('nproc', '?')} CPUs, kernel {env.get('kernel', '?')},"
                  f" accel {accel}\n")
    if results.build(res) is not None:
        out.write(f"kernel: {build_text(results.build(res))}\n")
    if deterministic.is_deterministic(res):
        out.write(f"clock: {deterministic.clock_of(res)} (deterministic: guest instructions,"
                  " not time)\n")
    out.write("\n")
    render_views(res, out, peers=peers)
    lines, warns = quality(res)
    for l in lines:
        out.write(l + "\n")
    for w in warns:
        out.write(f"warning: {w}\n")


def write_report(paths_and_results, out_dir, peers=None, outcomes=None):
    """report.md plus PNG plots in out_dir; returns the Markdown path.

    One results file: its tables and plots.  Several: each one's tables,
    then every later file compared against the first (`outcomes`: those comparisons, when
    the caller has computed them already; they are not computed again).  peers: a peers run
    whose peer figures stand beside ours in the seed tables.
    """
    from ipclab import plot   # matplotlib is slow to import; only reports need it

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    earlier = _plots_shown(out_dir / "report.md")
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
            w(f"![{caption}]({png.name})\n")
    for i, (path, res) in enumerate(paths_and_results[1:]):
        buf = io.StringIO()
        outcome = outcomes[i] if outcomes else compare.compare_results(first, res)
        render_compare(outcome, buf)
        w(f"## Compare: {first.get('id')} -> {res.get('id')}\n")
        w("```\n" + buf.getvalue().rstrip() + "\n```\n")
        png = plot.compare_plot(outcome, out_dir)
        if png:
            w(f"![baseline -> new: each delta with its interval]({png.name})\n")
    path = out_dir / "report.md"
    proc.write_text_atomic(path, "\n".join(md).rstrip() + "\n")
    # An earlier report's plots that this one does not show would pass for its own.
    for name in earlier - _plots_shown(path):
        with contextlib.suppress(OSError):
            os.unlink(out_dir / name)
    return path


_PLOT_LINK = re.compile(r"^!\[[^\]]*\]\(([^)/\\]+\.png)\)$", re.M)


def _plots_shown(md_path):
    """The PNG files (in its own folder) a report.md shows; none when there is none."""
    safeio.check_replaceable(md_path)
    try:
        return set(_PLOT_LINK.findall(md_path.read_text(errors="replace")))
    except OSError:
        return set()
def mark(row):
    return "*" if row.cmp.significant else ""


def ci_text(c):
    lo, hi = c.ci
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "-"
    return f"[{fmt.pct(lo - 1)}, {fmt.pct(hi - 1)}]"


def p_text(p):
    if p is None or not math.isfinite(p):
        return "-"
    return f"{p:.4f}" if p >= 0.0001 else "<0.0001"


def _views_text(outcome, out):
    """Seed-shaped tables: 'base -> new (delta)*' in each view's grid."""
    det = outcome.clock != deterministic.REAL
    for vc in outcome.views:
        view = vc.view
        trows = []
        for label, entries in vc.rows:
            line = [label]
            for e in entries:
                if e is None:
                    line.append("-")
                elif det:
                    star = "*" if e.is_change else " "
                    line.append(f"{fmt.count(e.base)} -> {fmt.count(e.new)}"
                                f" ({fmt.pct(e.delta, True, 2)}){star}")
                else:
                    star = "*" if e.is_change else " "
                    txt = f"{fmt.num(e.base)} -> {fmt.num(e.new)} ({fmt.pct(e.delta)}){star}"
                    if e.seed_change is not None:
                        # The seed's own before -> after change, for a patch A/B.
                        txt += f" [seed {fmt.pct(e.seed_change, True)}]"
                    line.append(txt)
            trows.append(line)
        seed = "; [seed's published change]" if vc.has_seed else ""
        out.write(f"{vc.suite}: {view.title} (baseline -> new, delta{seed})\n")
        out.write(fmt.table([view.row_header] + view.columns, trows) + "\n")
        if vc.geomean is not None:
            g = vc.geomean
            seed_gm = (f" [seed {fmt.pct(vc.seed_geomean)}]" if vc.seed_geomean is not None
                       else "")
            over = {"round": "t over rounds", "boot": "t over boots"}.get(
                vc.geomean_over, "t over the points")
            if g.can_claim:
                gm = (f"{fmt.pct(g.delta)}, 95% CI [{fmt.pct(g.ci[0] - 1)},"
                      f" {fmt.pct(g.ci[1] - 1)}] ({over})")
            else:
                gm = f"- ({g.reason})"
            out.write(f"  geometric mean of ratios: {gm}{seed_gm}\n")
        out.write("\n")


def render_compare(outcome, out=sys.stdout, heading=None, names=("baseline", "new")):
    b, n = outcome.base, outcome.new
    if heading:
        out.write(heading + "\n\n")
    out.write(f"{names[0]}: {b.get('id')} ({b.get('suite')}, {b.get('mode')})\n"
              f"{names[1]}: {n.get('id')} ({n.get('suite')}, {n.get('mode')})\n\n")
    if outcome.clock != deterministic.REAL:
        _render_deterministic(outcome, out)
        return
    for side, res in ((names[0], b), (names[1], n)):
        caveat = deterministic.caveat_of(res)
        if caveat:
            out.write(f"note: {side}: {caveat}\n")
    _views_text(outcome, out)
    t = f"±{outcome.min_change * 100:g}%"
    unit = outcome.unit
    header = ["cell", "metric", "base", "new", "delta", "CI", "p (Holm)", "verdict", "MDE",
              {"boot": "boots", "round": "rounds"}.get(unit, "n")]
    rows = []
    for r in outcome.rows:
        c = r.cmp
        rows.append([r.key, (f"{r.label} {r.unit}").strip(), fmt.num(c.base.median),
                     fmt.num(c.new.median), _delta_text(c), ci_text(c),
                     p_text(c.p_holm) if r.primary else "-",
                     (mark(r) + " " + r.verdict).strip() if r.primary else "(secondary)",
                     fmt.pct(r.mde, False) if r.primary and math.isfinite(r.mde) else "-",
                     f"{int(c.base.n)}/{int(c.new.n)}"])
    if unit == "boot":
        out.write("The boot is the unit: one value per boot (the median of its samples), boots"
                  f" paired A B A B, {_paired_tests_text(outcome)}.\n")
    elif unit == "round":
        out.write(f"Paired by round: {names[0]} and {names[1]} ran in one run, each cell on"
                  " both sides back to back, the first side alternating by round; one value"
                  f" per round and side, {_paired_tests_text(outcome)}.\n")
    else:
        out.write("Unpaired samples: delta is the Hodges-Lehmann estimate (the median of every"
                  " new/base ratio of samples), and its CI the one the Mann-Whitney U test"
                  " inverts, so it can differ from the ratio of the medians shown.\n")
    meds = {"boot": "per-boot medians", "round": "per-round values"}.get(unit, "n samples")
    out.write(f"All cells (median of {meds}; * ="
              f" significant after Holm over the primary metric of each cell, alpha"
              f" {stats.ALPHA:.2f}; CI: {outcome.level * 100:.4g}% for the"
              f" {outcome.family} primaries (Bonferroni, so it agrees with the stars), 95% for"
              f" the rest; a verdict needs a change beyond {t}; MDE = the smallest change"
              f" this design finds 80% of the time at the family's level, alpha"
              f" {stats.ALPHA:.2f}/{outcome.family})\n")
    out.write(fmt.table(header, rows, ["<", "<", ">", ">", ">", ">", ">", "<", ">", ">"])
              + "\n\n")
    for key, why in outcome.skipped:
        out.write(f"not compared: {key}: {why}\n")
    prim = [r for r in outcome.rows if r.primary]
    if not prim:
        out.write("nothing to compare\n")
    else:
        methods = sorted({r.cmp.test.method for r in prim} if unit in ("boot", "round")
                         else set())
        what = " or ".join(PAIRED_NAMES[m] for m in methods)
        test = {"boot": f"{what} on per-boot log ratios",
                "round": f"{what} on per-round log ratios"}.get(unit, "Mann-Whitney U")
        below = f"changed, below {t}"
        count, said = _tally(prim, ("better", "worse", "changed", below, f"within {t}",
                                    "inconclusive"))
        changed = sum(count.get(v, 0) for v in ("better", "worse", "changed", below))
        lead = "Changed" if changed else f"No significant change beyond {t}"
        out.write(f"{lead}: {len(prim)} cells ({test}, Holm, alpha {stats.ALPHA:.2f}): {said}.\n")
        mdes = sorted(r.mde for r in prim if r.verdict == "inconclusive" and math.isfinite(r.mde))
        if count.get("inconclusive"):
            what = (f"the smallest change these runs could find is {fmt.pct(stats.median(mdes), False)}"
                    f" (median over those cells; from {fmt.pct(mdes[0], False)})" if mdes else
                    "too few repetitions to say what change they could find")
            out.write(f"Inconclusive is not 'no change': {what}.\n")
        if unit == "boot":
            _render_boot_plan(prim, outcome, out)
        elif unit == "round":
            _render_pairing_gain(prim, names, out)
    for w in outcome.warnings:
        out.write(f"warning: {w}\n")


PAIRED_NAMES = {"t": "paired t", "wilcoxon": "Wilcoxon signed-rank"}


def _paired_tests_text(outcome):
    """Which paired test the rows got, and what their delta is."""
    methods = {r.cmp.test.method for r in outcome.rows if r.primary}
    parts = []
    if "wilcoxon" in methods:
        parts.append("a Wilcoxon signed-rank test on the log ratios, delta = exp(Hodges-Lehmann"
                     " estimate) - 1")
    if "t" in methods:
        parts.append("a paired t test on the log ratios, delta = exp(mean log ratio) - 1")
    how = "; ".join(parts) or "a paired test on the log ratios"
    if outcome.paired_test == "auto" and methods:
        need = stats.wilcoxon_min_pairs(outcome.family) + stats.WILCOXON_EXTRA_PAIRS
        how += (f" (the signed-rank test from {need} pairs, which in a family of"
                f" {outcome.family} it needs to compete with t; else t)")
    return how


def _tally(rows, order):
    """({verdict: rows}, "2 better, 1 worse, ...") in the order given."""
    count = {}
    for r in rows:
        count[r.verdict] = count.get(r.verdict, 0) + 1
    return count, ", ".join(f"{count[v]} {v}" for v in order if v in count)


def _delta_text(c):
    if math.isfinite(c.ratio):
        return fmt.pct(c.delta)
    # A base median of 0: a difference, not a ratio.
    return f"{c.diff:+.4g}" if math.isfinite(c.diff) else "-"


def _render_pairing_gain(rows, names, out):
    """How much noise pairing by round took out: each side's CV across rounds against the
    CV of the paired ratios, which is what the test sees."""
    lines = []
    for r in rows:
        c = r.cmp
        if math.isfinite(c.test.sd_log):
            lines.append([r.key, fmt.pct(c.base.cv, False), fmt.pct(c.new.cv, False),
                          fmt.pct(stats.cv_of_log_var(c.test.sd_log ** 2), False),
                          str(c.test.n)])
    if lines:
        out.write("\nNoise across rounds on each side, and of the paired ratios (what pairing"
                  " leaves):\n")
        out.write(fmt.table(["cell", f"{names[0]} CV", f"{names[1]} CV", "ratio CV", "pairs"],
                            lines, ["<", ">", ">", ">", ">"]) + "\n")
    for r in rows:
        if not r.cmp.test.can_claim:
            out.write(f"no significance claimed: {r.cmp.test.reason}\n")
            break


def _render_boot_plan(rows, outcome, out):
    """Boot-to-boot and within-boot noise (both sides' boots), and the design the next run
    needs (Kalibera & Jones): more boots when boots differ, more repetitions when samples
    do."""
    lines = []
    for r in rows:
        p, plan = r.cmp.parts, r.cmp.plan
        if plan is None:
            continue
        nxt = (f"{plan.reps} reps x {plan.units} boots per side" if plan.units else
               plan.reason or "out of reach")
        lines.append([r.key, fmt.pct(p.cv_between, False), fmt.pct(p.cv_within, False),
                      str(r.cmp.reps), str(r.cmp.test.n), nxt])
    if not lines:
        return
    costs = outcome.costs
    cost = (f"a boot costs {costs.boot_s:.0f} s beyond its samples and a repetition its cell's"
            " own time, as these boots measured" if costs and costs.measured else
            "a boot costed as 60 repetitions: these files carry no boot or sample times")
    out.write(f"\nNoise by boot (both sides' boots), and what a run needs to find"
              f" ±{outcome.min_change * 100:g}% (power 0.8 at the family's level; {cost}):\n")
    out.write(fmt.table(["cell", "boot-to-boot CV", "within-boot CV", "reps", "pairs",
                         "next run"], lines, ["<", ">", ">", ">", ">", "<"]) + "\n")
    for r in rows:
        if not r.cmp.test.can_claim:
            out.write(f"no significance claimed: {r.cmp.test.reason}\n")
            break


def _render_deterministic(outcome, out):
    out.write(f"Deterministic clock ({outcome.clock}): guest instructions, not time. A change"
              " must exceed the threshold: t(k, 0.975) x the cell's A/A floor (the rms of its k"
              " A/A differences), a 95% prediction bound, or the two medians' own \u00b1 (their"
              " 95% order-statistics half-widths) in quadrature, whichever is larger; without"
              f" a floor, {deterministic.SAFETY:g} x the larger \u00b1. Each primary row is at"
              " 5%: an A/A of m rows flags 0.05 m of them on average.\n")
    src = outcome.floor_source
    if src:
        out.write(f"A/A floor: {os.path.relpath(src['path'])}, kernel base {src.get('base')}"
                  f" ({src.get('release', '?')}), QEMU {src.get('qemu', '?')}\n")
    out.write("\n")
    _views_text(outcome, out)
    header = ["cell", "metric", "base", "new", "delta", "\u00b1 A", "\u00b1 B", "floor (k)",
              "threshold", "verdict", "n"]
    notes = []
    for primary in (True, False):
        rows = []
        for r in outcome.judged:
            if r.primary != primary or r.model:
                continue
            j = r.j
            fl = f"{fmt.pct(j.floor, False, 3)} ({j.floor_pairs})" if j.floor_pairs else "-"
            verdict = j.verdict or "(secondary)"
            if primary and j.note:
                if j.note not in notes:
                    notes.append(j.note)
                verdict += f" [{notes.index(j.note) + 1}]"
            rows.append([r.key, (f"{r.label} {r.unit}").strip(), fmt.count(j.base.median),
                         fmt.count(j.new.median), fmt.pct(j.delta, True, 3),
                         fmt.pct(j.spread_base, False, 3), fmt.pct(j.spread_new, False, 3),
                         fl, fmt.pct(j.threshold, False, 3), verdict,
                         f"{int(j.base.n)}/{int(j.new.n)}"])
        if not rows:
            continue
        out.write("Instructions per operation (primary)\n" if primary else
                  "Other metrics (secondary, no verdict: rates are per 10^9 guest instructions,"
                  " times are guest instructions)\n")
        out.write(fmt.table(header, rows, ["<", "<", ">", ">", ">", ">", ">", ">", ">", "<",
                                           ">"]) + "\n\n")
    costreport.render_rows(outcome, out)
    for i, note in enumerate(notes, 1):
        out.write(f"[{i}] {note}\n")
    if notes:
        out.write("\n")
    for key, why in outcome.skipped:
        out.write(f"not compared: {key}: {why}\n")
    prim = [r for r in outcome.judged if r.primary]
    if not prim:
        out.write("nothing to compare\n")
    else:
        ncells = len({r.key for r in prim})
        _, said = _tally(prim, ("better", "worse", "changed", "within noise", "too noisy",
                                deterministic.BIMODAL, deterministic.TOO_FEW, "no data"))
        out.write(f"Primary metrics: {len(prim)} rows in {ncells} cells: {said}.\n")
    for w in outcome.warnings:
        out.write(f"warning: {w}\n")


def render_profile_diff(base, new, out, unit="insn"):
    """Where the instructions (or the time) went: the functions that moved most."""
    d = profile.diff(base, new)
    if not d:
        return
    if base.get("event") == "insncount":
        out.write("Where the instructions went: exact guest instructions per operation, by"
                  " kernel function (all of user space as one row), counted by QEMU outside"
                  " the guest; the functions that moved most\n")
    else:
        what = "instructions" if unit == "insn" else "time"
        period = int(base.get("period", profile.PERIOD))
        per = "guest instructions" if unit == "insn" else "ns"
        out.write(f"Where the {what} went: perf cpu-clock samples every {period} {per}, per"
                  " operation; the functions that moved most (noise: 2 standard errors from"
                  " sampling)\n")
    for key, rows, tb, tn in d:
        delta = fmt.pct(tn / tb - 1 if tb else math.nan, True, 2)
        out.write(f"{key}: all functions {fmt.count(tb)} -> {fmt.count(tn)} ({delta})\n")
        exact = base.get("event") == "insncount"
        table = [["  " + sym, fmt.count(vb), fmt.count(vn), f"{dv:+.1f}"]
                 + ([] if exact else [fmt.count(noise)]) for sym, vb, vn, dv, noise in rows]
        out.write(fmt.table(["  function", "base", "new", "delta"] + ([] if exact else ["noise"]),
                            table, ["<", ">", ">", ">", ">"][:len(table[0]) if table else 4])
                  + "\n")
    out.write("\n")
    costreport.render_profile(base, new, out)
