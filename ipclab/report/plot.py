# SPDX-License-Identifier: MIT
"""PNG plots for reports (matplotlib, Agg backend: no display needed)."""

import io
import math
import re
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ipclab import metrics, proc, results, stats, views  # noqa: E402
from ipclab.compare.record import row_verdicts  # noqa: E402
from ipclab.mode import Mode  # noqa: E402


PERCENTILES = ("p50", "p90", "p99", "p99.9")


def _name(res, what):
    rid = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(res.get("id", "run")))
    return f"{rid}-{what}.png"


def _save(fig, out_dir, name):
    path = Path(out_dir) / name
    fig.tight_layout()
    # Rendered whole first, then written as every file is (proc.write_text_atomic): a link
    # or a device named like a plot is refused, and a full disk leaves no half a PNG.
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=100)
    finally:
        plt.close(fig)
    proc.write_text_atomic(path, buf.getvalue())
    return path


def _title(ax, text):
    """A title that fits the figure's width: long run ids wrap rather than run off it."""
    ax.set_title("\n".join(textwrap.wrap(text, 70)) or text, fontsize=10)


def ladder(res, sv, out_dir):
    part, view, ref = sv.part, sv.view, sv.ref or {}
    vals = views.values(res, view)
    labels, ours, lo, hi, pub = [], [], [], [], []
    for label, _ in view.rows:
        xs, _ = vals.get((label, view.columns[0]), ([], None))
        if not xs:
            continue
        m = stats.median(xs)
        labels.append(label)
        ours.append(m)
        lo.append(m - stats.quantile(xs, 0.25))
        hi.append(stats.quantile(xs, 0.75) - m)
        pub.append(views.published(ref, view, label, view.columns[0]))
    if not labels:
        return None
    fig, ax = plt.subplots(figsize=(8, 4))
    x = range(len(labels))
    w = 0.4
    ax.bar([i - w / 2 for i in x], ours, w, yerr=[lo, hi], capsize=3, label="ours (median, IQR)")
    if any(p is not None for p in pub):
        ax.bar([i + w / 2 for i in x], [p or 0 for p in pub], w, alpha=0.5, hatch="//",
               label=f"published ({ref.get('machine', 'seed').split(',')[0]})")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=20, ha="right")
    ax.set_ylabel(view.unit)
    ax.set_title(f"{part.name}: {view.title}")
    ax.legend()
    return _save(fig, out_dir, _name(res, view.id))


def grid(res, sv, out_dir):
    part, view = sv.part, sv.view
    vals = views.values(res, view)
    data = []
    for label, _ in view.rows:
        row = []
        for col in view.columns:
            xs, _ = vals.get((label, col), ([], None))
            row.append(stats.median(xs) if xs else math.nan)
        data.append(row)
    if all(math.isnan(v) for r in data for v in r):
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    im = ax.imshow(data, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(view.columns)))
    ax.set_xticklabels(view.columns)
    ax.set_yticks(range(len(view.rows)))
    ax.set_yticklabels([r[0] for r in view.rows])
    ax.set_ylabel(view.row_header)
    for i, r in enumerate(data):
        for j, v in enumerate(r):
            if not math.isnan(v):
                ax.text(j, i, f"{v:.0f}", ha="center", va="center", color="w")
    fig.colorbar(im, ax=ax, label=view.unit)
    ax.set_title(f"{part.name}: {view.title}")
    return _save(fig, out_dir, _name(res, view.id))


def latency_percentiles(res, out_dir):
    """Median over samples of each write-latency percentile, one line per cell."""
    cells = [c for c in res["cells"] if c.get("workload") == "pipe-sweep"
             and results.measured(c)]
    series = []
    for c in cells:
        ys = []
        for p in PERCENTILES:
            xs = metrics.metric_values(c, "latency.write." + p)
            ys.append(stats.median(xs) if xs else math.nan)
        if not all(math.isnan(y) for y in ys):
            series.append((c["key"].split("/", 1)[-1], ys))
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label, ys in series:
        ax.plot(PERCENTILES, ys, marker="o", label=label)
    ax.set_yscale("log")
    unit = Mode.of(res).unit_text
    ax.set_ylabel(f"write latency ({unit}, log)")
    ax.set_xlabel("percentile")
    ax.set_title("pipe-sweep write latency percentiles (median over samples)")
    ax.legend(fontsize=7, ncol=3)
    return _save(fig, out_dir, _name(res, "latency-percentiles"))


def run_plots(res, out_dir):
    out = []
    for sv in views.shown(res):
        fn = {"ladder": ladder, "grid": grid}.get(sv.view.kind)
        if fn:
            p = fn(res, sv, out_dir)
            if p:
                out.append((p, f"{sv.part.name}: {sv.view.title}"))
    p = latency_percentiles(res, out_dir)
    if p:
        out.append((p, "pipe-sweep write latency percentiles"))
    return out


VERDICT_COLOUR = {"better": "tab:green", "worse": "tab:red", "changed": "tab:orange"}


def verdict_colours(outcome, rows, record=None):
    """Each row's colour from its verdict as the comparison record (given, or built) says:
    green better, red worse, orange a change of unknown direction or (timed) a significant
    difference that is no verdict's change, grey the rest."""
    verdict = row_verdicts(outcome, record)
    return [VERDICT_COLOUR.get(verdict[id(r)], "tab:orange" if not outcome.judged and
                               r.cmp.significant else "tab:gray") for r in rows]


def judged_plot(outcome, out_dir, record=None):
    """Deterministic A/B: delta % of each primary row, with the band it had to leave."""
    rows = [r for r in outcome.judged if r.primary and math.isfinite(r.j.ratio)]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(rows) + 1.5))
    y = list(range(len(rows)))
    colors = verdict_colours(outcome, rows, record)
    ax.barh(y, [r.j.delta * 100 for r in rows], color=colors)
    ax.errorbar([0] * len(rows), y, xerr=[r.j.threshold * 100 if math.isfinite(r.j.threshold)
                                          else 0 for r in rows], fmt="none",
                ecolor="k", capsize=3, lw=0.8)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{r.key} {r.unit}" for r in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel(f"delta % of guest instructions per operation ({outcome.clock}); whiskers:"
                  " the rule's threshold, coloured = a change")
    _title(ax, f"{outcome.old.get('id')} -> {outcome.new.get('id')}")
    name = f"compare-{outcome.old.get('id')}-vs-{outcome.new.get('id')}.png"
    return _save(fig, out_dir, re.sub(r"[^A-Za-z0-9_.-]+", "_", name))


BETTER_MARK = {"higher": "(+ is better)", "lower": "(- is better)"}


def _interval(r):
    """(low, high) of a row's delta interval in %, or None when it has none."""
    lo, hi = r.cmp.ci
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return (lo - 1) * 100, (hi - 1) * 100


def _scale(deltas, intervals):
    """Half-width of the x axis: every delta, and the intervals up to the widest but one's
    reach, so that one wide interval does not squeeze every other row into a line."""
    reach = sorted(max(abs(a), abs(b)) for a, b in intervals)
    keep = reach[-2] if len(reach) > 1 else (reach[-1] if reach else 0.0)
    return max([abs(d) for d in deltas] + [keep, 1.0]) * 1.1


def compare_plot(outcome, out_dir, record=None):
    """Delta % of each row with its interval (the primary rows' at the family's level);
    colours name a verdict, as the comparison record (given, or built) says it; a row
    without an interval is drawn hollow, and an interval beyond the axis ends in an arrow
    with its bound."""
    if outcome.judged:
        return judged_plot(outcome, out_dir, record)
    rows = [r for r in outcome.rows if math.isfinite(r.cmp.ratio)]
    if not rows:
        return None
    d = [r.cmp.delta * 100 for r in rows]
    iv = [_interval(r) for r in rows]
    half = _scale(d, [i for i in iv if i])
    colors = verdict_colours(outcome, rows, record)
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(rows) + 1.5))
    y = list(range(len(rows)))
    for i, (r, delta, inter) in enumerate(zip(rows, d, iv)):
        ax.barh(i, delta, color=colors[i] if inter else "none", edgecolor=colors[i],
                hatch=None if inter else "//")
        if inter is None:
            ax.text(delta, i, "  no interval", va="center", fontsize=6)
            continue
        lo, hi = max(inter[0], -half), min(inter[1], half)
        ax.errorbar([delta], [i], xerr=[[max(0.0, delta - lo)], [max(0.0, hi - delta)]],
                    fmt="none", ecolor="k", capsize=2, lw=0.8)
        for bound, edge in ((inter[0], -half), (inter[1], half)):
            if abs(bound) > half:
                ax.annotate(f"{bound:+.0f}%", (edge, i), fontsize=6, va="bottom",
                            ha="right" if edge > 0 else "left")
    ax.set_xlim(-half, half)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{r.key} {r.label} {BETTER_MARK.get(r.better, '')}".rstrip()
                        for r in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    level = f"{outcome.level:.1%}".replace(".0%", "%")
    ax.set_xlabel(f"delta % (new vs old); green better, red worse, orange changed\n"
                  f"intervals: {level} for the primary rows (Bonferroni, family of"
                  f" {outcome.family}),"
                  " 95% for the others", fontsize=8)
    _title(ax, f"{outcome.old.get('id')} -> {outcome.new.get('id')}")
    name = f"compare-{outcome.old.get('id')}-vs-{outcome.new.get('id')}.png"
    return _save(fig, out_dir, re.sub(r"[^A-Za-z0-9_.-]+", "_", name))
