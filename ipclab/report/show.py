# SPDX-License-Identifier: MIT
"""One run as seed-shaped tables: each seed suite's views in the seed's own shape (the pipe
sweep as writers x readers, the fast-pipes ladder as steps), ours as the median with its CV
and the seed's published figures beside them; the live peers; the cells no view shows; what
was measured (build_text) and the run's quality lines. Computes nothing it does not print."""

import math
import sys

from ipclab import bimodal, deterministic, fmt, metrics, peers, results, stats, views
from ipclab.mode import Mode, caveat_of


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
    det = Mode.of(res).deterministic
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
    reps = [len(results.invocations(c)) for c in res["cells"] if results.measured(c)]
    det = Mode.of(res).deterministic
    # Under icount the samples of a cell agree to parts in 10^4: a few are enough.
    if reps and min(reps) < stats.MIN_REPS and not det:
        warns.append(f"only {min(reps)} repetitions in some cells (fewer than {stats.MIN_REPS}):"
                     " compare will have little power; use --reps 10 or more")
    by_suite, few = {}, 0
    for c in res["cells"]:
        paths = [p for p, _ in deterministic.op_paths(c)] if det else metrics.metrics_for(c)
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
        warns += [mode_text(f) for f in bimodal.findings(res)]
    caveat = caveat_of(res)
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
    """One line for a cell whose samples split into two modes (bimodal.BimodalCell)."""
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
    measured_in = Mode.of(res)
    if measured_in.deterministic:
        out.write(f"clock: {measured_in.clock} (deterministic: guest instructions,"
                  " not time)\n")
    out.write("\n")
    render_views(res, out, peers=peers)
    lines, warns = quality(res)
    for l in lines:
        out.write(l + "\n")
    for w in warns:
        out.write(f"warning: {w}\n")
