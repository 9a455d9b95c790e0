# SPDX-License-Identifier: MIT
"""Compare two results files: baseline -> new, per cell and metric.

For every cell in both files and every metric compare tests: the medians,
delta %, a bootstrap 95% CI of the ratio of medians, and a two-sided
Mann-Whitney U p-value, Holm-corrected across all rows.  Seed-shaped views
(writers x readers, the ladder, ...) are printed first, then the full table,
then a verdict that says "no significant change" when that is the answer.

The lab's `ab` command reuses compare_results() and render() on results it
holds in memory; compare_files() is the CLI's path.
"""

import json
import math
import os
import sys
from dataclasses import dataclass, field

from ipclab import UserError, deterministic, fmt, results, stats, suites


@dataclass
class Row:
    key: str
    suite: str
    workload: str
    path: str
    label: str
    unit: str
    better: str
    cmp: stats.Comparison

    @property
    def verdict(self):
        if not self.cmp.significant:
            return ""
        up = self.cmp.ratio > 1
        if self.better == "higher":
            return "better" if up else "worse"
        if self.better == "lower":
            return "worse" if up else "better"
        return "changed"


@dataclass
class JudgedRow:
    """One row of a deterministic comparison: judged against the noise, not tested."""
    key: str
    path: str
    label: str
    unit: str
    primary: bool
    j: deterministic.Judgement

    @property
    def verdict(self):
        return self.j.verdict


@dataclass
class Outcome:
    rows: list = field(default_factory=list)
    skipped: list = field(default_factory=list)     # (key, reason)
    warnings: list = field(default_factory=list)
    base: dict = None
    new: dict = None
    clock: str = deterministic.REAL
    judged: list = field(default_factory=list)      # JudgedRow, deterministic clock only
    floor_source: dict = None


def metrics_for(cell):
    """Metric paths compared for a cell, primary first."""
    samples = results.measured(cell)
    if not samples:
        return []
    wanted = suites.COMPARE_METRICS.get(cell.get("workload"))
    if wanted:
        have = [p for p in wanted if results.metric_value(samples[0], p) is not None]
        if have:
            return have
    names = [n for n, m in samples[0].get("metrics", {}).items()
             if isinstance(m, dict) and m.get("better") in ("higher", "lower")]
    return ["metrics." + n for n in names]


def match_cells(base, new, common=False, names=("BASE", "NEW")):
    """Pairs of cells with the same key; UserError explaining any mismatch."""
    bk = {c["key"]: c for c in base["cells"]}
    nk = {c["key"]: c for c in new["cells"]}
    only_b = [k for k in bk if k not in nk]
    only_n = [k for k in nk if k not in bk]
    if (only_b or only_n) and not common:
        parts = []
        for label, keys in ((names[0], only_b), (names[1], only_n)):
            if keys:
                parts.append("%d only in %s (%s%s)" % (len(keys), label, ", ".join(keys[:3]),
                                                       ", ..." if len(keys) > 3 else ""))
        raise UserError("cells do not match: %s; compare runs of the same suite and mode,"
                        " or pass --common to compare the shared cells only"
                        % "; ".join(parts))
    pairs = []
    for k, b in bk.items():
        if k not in nk:
            continue
        n = nk[k]
        if list(b.get("args", [])) != list(n.get("args", [])) and not common:
            raise UserError("cell %s was run with different engine arguments: %s vs %s"
                            % (k, " ".join(b.get("args", [])), " ".join(n.get("args", []))))
        pairs.append((b, n))
    if not pairs:
        raise UserError("no cells in common between %s and %s" % names)
    return pairs


def check_clocks(base, new, names=("BASE", "NEW")):
    """The clock both files were measured with; UserError if they differ."""
    cb, cn = deterministic.clock_of(base), deterministic.clock_of(new)
    if cb != cn:
        raise UserError("%s was measured with clock %r and %s with %r: a time from one is not"
                        " a time from the other, so they are not compared; measure both"
                        " sides in the same mode" % (names[0], cb, names[1], cn))
    return cb


def guest_cpus(res):
    clock = res.get("meta", {}).get("clock")
    if isinstance(clock, dict) and clock.get("cpus"):
        return clock["cpus"]
    return res.get("env", {}).get("nproc")


def not_comparable(b, n, out):
    """True, with the reason noted in out.skipped, when a failed or skipped side rules a
    pair of cells out."""
    if b.get("status") in ("failed", "skipped") or n.get("status") in ("failed", "skipped"):
        why = b.get("error") or n.get("error") or "no samples"
        out.skipped.append((b["key"], "%s/%s: %s" % (b.get("status"), n.get("status"), why)))
        return True
    return False


def compare_results(base, new, common=False, names=("BASE", "NEW"), floor_file=None):
    out = Outcome(base=base, new=new)
    out.clock = check_clocks(base, new, names)
    pairs = match_cells(base, new, common, names)
    if out.clock != deterministic.REAL:
        return _judge_deterministic(out, pairs, floor_file or deterministic.FLOOR_FILE)
    for b, n in pairs:
        if not_comparable(b, n, out):
            continue
        paths = metrics_for(b)
        if not paths or not results.measured(n):
            out.skipped.append((b["key"], "no measured samples"))
            continue
        for path in paths:
            xb = results.metric_values(b, path)
            xn = results.metric_values(n, path)
            if not xb or not xn:
                continue
            unit, better = results.metric_info(b, path)
            c = stats.compare_samples(xb, xn, seed=stats.stable_seed(b["key"] + path))
            label = results.metric_label(b, path).split(".", 1)[-1]
            out.rows.append(Row(b["key"], b.get("suite", ""), b.get("workload", ""), path,
                                label, unit, better, c))
    stats.apply_holm([r.cmp for r in out.rows])
    out.warnings = quality_warnings(out.rows)
    return out


def _judge_deterministic(out, pairs, floor_file):
    floors, entry = deterministic.load_floor(out.clock, guest_cpus(out.base), floor_file)
    out.floor_source = dict(entry, path=floor_file) if entry else None
    for b, n in pairs:
        if not_comparable(b, n, out):
            continue
        if not results.measured(b) or not results.measured(n):
            out.skipped.append((b["key"], "no measured samples"))
            continue
        rows = [(p, unit, "lower", True) for p, unit in deterministic.cost_paths(b)]
        seen = {p for p, _, _, _ in rows}
        for p in metrics_for(b):
            if p not in seen:
                unit, better = results.metric_info(b, p)
                rows.append((p, deterministic.unit_in_icount(unit), better, False))
        for path, unit, better, primary in rows:
            xb, xn = results.metric_values(b, path), results.metric_values(n, path)
            if not xb or not xn:
                continue
            floor = floors.get(deterministic.floor_key(b["key"], path), math.nan)
            label = "cost" if primary and path in deterministic.OP_PATHS else \
                results.metric_label(b, path).split(".", 1)[-1]
            out.judged.append(JudgedRow(b["key"], path, label, unit, primary,
                                        deterministic.judge(xb, xn, better, floor)))
    if out.judged and not any(math.isfinite(r.j.floor) for r in out.judged if r.primary):
        out.warnings.append("no A/A floor is known for these cells in this mode: each side's"
                            " own spread stands in for it, which misses boot-to-boot noise;"
                            " run `ipclab ab base base --deterministic` to measure one")
    return out


def quality_warnings(rows):
    w = []
    few = sorted({r.key for r in rows if min(r.cmp.base.n, r.cmp.new.n) < stats.MIN_REPS})
    if few:
        n = min(min(r.cmp.base.n, r.cmp.new.n) for r in rows)
        w.append("only %d repetitions in %d cell(s) (fewer than %d): the test has little power;"
                 " run with --reps 10 or more" % (n, len(few), stats.MIN_REPS))
    noisy = [(max(r.cmp.base.cv, r.cmp.new.cv), r) for r in rows
             if max(r.cmp.base.cv, r.cmp.new.cv) > stats.MAX_CV]
    if noisy:
        worst, r = max(noisy, key=lambda t: t[0])
        w.append("CV over %d%% in %d of %d rows (worst %s in %s %s): small changes are lost in"
                 " the noise; use an idle machine, more --reps, or --full"
                 % (stats.MAX_CV * 100, len(noisy), len(rows), fmt.pct(worst, False), r.key,
                    r.label))
    return w


def mark(row):
    return "*" if row.cmp.significant else ""


def ci_text(c):
    lo, hi = c.ci
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "-"
    return "[%s, %s]" % (fmt.pct(lo - 1), fmt.pct(hi - 1))


def p_text(p):
    if p is None or not math.isfinite(p):
        return "-"
    return "%.4f" % p if p >= 0.0001 else "<0.0001"


def _views_text(outcome, out):
    """Seed-shaped tables: 'base -> new (delta)*' in each view's grid."""
    idx = {(r.key, r.path): r for r in outcome.rows}
    judged = {(r.key, r.path): r for r in outcome.judged}
    det = outcome.clock != deterministic.REAL
    by_key = {c["key"]: c for c in outcome.base["cells"]}
    mode = outcome.base.get("mode", "quick")
    from ipclab import report
    for part in suites.suite_parts(outcome.base.get("suite")) or []:
        ref = part.reference()
        for view in part.views:
            if mode not in view.modes:
                continue
            if det:
                view = deterministic.view_for(view, by_key)
                if view is None:
                    continue
            trows, anyval, anyref = [], False, False
            ratios, pub_ratios = [], []
            for label, entries in view.rows:
                line = [label]
                for key, path in entries:
                    if det:
                        jr = judged.get((key, path))
                        if jr is None:
                            line.append("-")
                            continue
                        anyval = True
                        ratios.append(jr.j.ratio)
                        line.append("%s -> %s (%s)%s" % (
                            fmt.count(jr.j.base.median), fmt.count(jr.j.new.median),
                            fmt.pct(jr.j.delta, True, 2), "*" if jr.j.is_change else " "))
                        continue
                    r = idx.get((key, path))
                    if r is None and key in by_key:
                        # The view may name a path compare did not test (a derived one).
                        b = by_key[key]
                        nb = {c["key"]: c for c in outcome.new["cells"]}.get(key)
                        if nb is not None:
                            xb = results.metric_values(b, path)
                            xn = results.metric_values(nb, path)
                            if xb and xn:
                                r = Row(key, "", "", path, path, "", "",
                                        stats.compare_samples(xb, xn,
                                                              seed=stats.stable_seed(key + path)))
                    if r is None:
                        line.append("-")
                        continue
                    anyval = True
                    s = view.scale
                    ratios.append(r.cmp.ratio)
                    txt = "%s -> %s (%s)%s" % (fmt.num(r.cmp.base.median * s),
                                               fmt.num(r.cmp.new.median * s),
                                               fmt.pct(r.cmp.delta), mark(r) or " ")
                    # The seed's own before -> after change, for a patch A/B:
                    # its last two published columns.
                    pub = report.ref_values(ref, view, label, (view.columns +
                                                               [None])[len(line) - 1])
                    if isinstance(pub, list) and len(pub) >= 2 and pub[-2]:
                        txt += " [seed %s]" % fmt.pct(pub[-1] / pub[-2] - 1, True)
                        pub_ratios.append(pub[-1] / pub[-2])
                        anyref = True
                    line.append(txt)
                trows.append(line)
            if not anyval:
                continue
            out.write("%s: %s (baseline -> new, delta%s)\n"
                      % (part.name, view.title, "; [seed's published change]" if anyref else ""))
            out.write(fmt.table([view.row_header] + view.columns, trows) + "\n")
            # A sweep's summary (DESIGN.md); other views mix metrics, where
            # one mean of ratios would mean nothing.
            if len(ratios) > 1 and view.kind == "grid":
                seed_gm = (" [seed %s]" % fmt.pct(stats.geomean(pub_ratios) - 1)
                           if len(pub_ratios) == len(ratios) else "")
                out.write("  geometric mean of ratios: %s%s\n"
                          % (fmt.pct(stats.geomean(ratios) - 1), seed_gm))
            out.write("\n")


def render(outcome, out=sys.stdout, heading=None, names=("baseline", "new")):
    b, n = outcome.base, outcome.new
    if heading:
        out.write(heading + "\n\n")
    out.write("%s: %s (%s, %s)\n%s: %s (%s, %s)\n\n" % (
        names[0], b.get("id"), b.get("suite"), b.get("mode"),
        names[1], n.get("id"), n.get("suite"), n.get("mode")))
    if outcome.clock != deterministic.REAL:
        _render_deterministic(outcome, out)
        return
    for side, res in ((names[0], b), (names[1], n)):
        acc = res.get("meta", {}).get("accel") or res.get("env", {}).get("accel")
        if acc and acc != "native":
            out.write("note: %s timings are %s-emulated: compare counts, not times\n"
                      % (side, acc))
    _views_text(outcome, out)
    header = ["cell", "metric", "base", "new", "delta", "95% CI", "p (Holm)", "", "n"]
    rows = []
    for r in outcome.rows:
        c = r.cmp
        rows.append([r.key, ("%s %s" % (r.label, r.unit)).strip(), fmt.num(c.base.median),
                     fmt.num(c.new.median), fmt.pct(c.delta), ci_text(c), p_text(c.p_holm),
                     (mark(r) + " " + r.verdict).strip(), "%d/%d" % (c.base.n, c.new.n)])
    out.write("All cells (median of n; delta = new/base - 1; * = significant after Holm,"
              " alpha %.2f)\n" % stats.ALPHA)
    out.write(fmt.table(header, rows, ["<", "<", ">", ">", ">", ">", ">", "<", ">"]) + "\n\n")
    for key, why in outcome.skipped:
        out.write("not compared: %s: %s\n" % (key, why))
    sig = [r for r in outcome.rows if r.cmp.significant]
    if not outcome.rows:
        out.write("nothing to compare\n")
    elif not sig:
        out.write("No significant change: none of %d comparisons in %d cells differs"
                  " (Mann-Whitney U, Holm, alpha %.2f).\n"
                  % (len(outcome.rows), len({r.key for r in outcome.rows}), stats.ALPHA))
    else:
        better = sum(1 for r in sig if r.verdict == "better")
        worse = sum(1 for r in sig if r.verdict == "worse")
        out.write("Significant: %d of %d comparisons (%d better, %d worse) in %d of %d cells"
                  " (Mann-Whitney U, Holm, alpha %.2f).\n"
                  % (len(sig), len(outcome.rows), better, worse, len({r.key for r in sig}),
                     len({r.key for r in outcome.rows}), stats.ALPHA))
    for w in outcome.warnings:
        out.write("warning: %s\n" % w)


def _render_deterministic(outcome, out):
    out.write("Deterministic clock (%s): guest instructions, not time. A change must exceed"
              " %g x the noise: the A/A floor of the cell, or how far either side's median"
              " could be off (\u00b1, its 95%% order-statistics interval), whichever is"
              " larger.\n"
              % (outcome.clock, deterministic.SAFETY))
    src = outcome.floor_source
    if src:
        out.write("A/A floor: %s (%s)\n" % (os.path.relpath(src["path"]),
                                           src.get("measured", "")))
    out.write("\n")
    _views_text(outcome, out)
    header = ["cell", "metric", "base", "new", "delta", "\u00b1 A", "\u00b1 B", "floor",
              "verdict", "n"]
    for primary in (True, False):
        rows = []
        for r in outcome.judged:
            if r.primary != primary:
                continue
            j = r.j
            rows.append([r.key, ("%s %s" % (r.label, r.unit)).strip(), fmt.count(j.base.median),
                         fmt.count(j.new.median), fmt.pct(j.delta, True, 3),
                         fmt.pct(j.spread_base, False, 3), fmt.pct(j.spread_new, False, 3),
                         fmt.pct(j.floor, False, 3) if math.isfinite(j.floor) else "-",
                         j.verdict, "%d/%d" % (j.base.n, j.new.n)])
        if not rows:
            continue
        out.write("Instructions per operation (primary)\n" if primary else
                  "Other metrics (secondary: rates are per 10^9 guest instructions, times are"
                  " guest instructions)\n")
        out.write(fmt.table(header, rows, ["<", "<", ">", ">", ">", ">", ">", ">", "<", ">"])
                  + "\n\n")
    for key, why in outcome.skipped:
        out.write("not compared: %s: %s\n" % (key, why))
    prim = [r for r in outcome.judged if r.primary]
    if not prim:
        out.write("nothing to compare\n")
    else:
        count = {}
        for r in prim:
            count[r.verdict] = count.get(r.verdict, 0) + 1
        out.write("Primary metrics: %d rows in %d cells: %s.\n"
                  % (len(prim), len({r.key for r in prim}),
                     ", ".join("%d %s" % (count[v], v) for v in
                               ("better", "worse", "changed", "within noise", "too noisy",
                                "no data") if v in count)))
    for w in outcome.warnings:
        out.write("warning: %s\n" % w)


def outcome_record(outcome):
    """The comparison as data: one entry per row, what the text shows."""
    rec = {"base": outcome.base.get("id"), "new": outcome.new.get("id"), "clock": outcome.clock,
           "rows": [], "skipped": [{"key": k, "why": w} for k, w in outcome.skipped],
           "warnings": list(outcome.warnings)}
    for r in outcome.judged:
        j = r.j
        rec["rows"].append({"key": r.key, "path": r.path, "unit": r.unit, "primary": r.primary,
                            "base": j.base.median, "new": j.new.median, "n": [j.base.n, j.new.n],
                            "delta": j.delta, "spread_base": j.spread_base,
                            "spread_new": j.spread_new,
                            "floor": j.floor if math.isfinite(j.floor) else None,
                            "threshold": j.threshold, "verdict": j.verdict})
    for r in outcome.rows:
        c = r.cmp
        rec["rows"].append({"key": r.key, "path": r.path, "unit": r.unit, "base": c.base.median,
                            "new": c.new.median, "n": [c.base.n, c.new.n], "delta": c.delta,
                            "ci": list(c.ci), "p_holm": c.p_holm, "verdict": r.verdict})
    return json.loads(json.dumps(rec).replace("NaN", "null"))


def compare_files(base_path, new_path, out=sys.stdout, heading=None, common=False, record=None):
    """Print the comparison of two results files; returns the CLI's exit code.

    Bad input (missing/corrupt file, cells that do not match) prints one
    line to stderr and returns 2. `record`, a path, also gets the comparison as JSON.
    """
    try:
        base = results.load(base_path)
        new = results.load(new_path)
        outcome = compare_results(base, new, common=common)
    except UserError as e:
        sys.stderr.write("ipclab: error: %s\n" % e)
        return 2
    render(outcome, out, heading)
    if record is not None:
        results.write_json_atomic(record, outcome_record(outcome))
    return 0
