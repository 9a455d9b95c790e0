# SPDX-License-Identifier: MIT
"""A comparison as text: the seed views' changes, every row with its test or its rule, the
verdicts' tally, the noise by round or boot and the next run's design, the cost model's rows,
and the warnings; all from the one outcome ipclab/compare/ computed."""

import math
import os
import sys

from ipclab import deterministic, fmt, stats
from ipclab.deterministic import cost
from ipclab.mode import caveat_of
from ipclab.compare.record import row_verdicts as record_verdicts


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
    """Seed-shaped tables: 'old -> new (delta)*' in each view's grid."""
    det = outcome.mode.deterministic
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
                    line.append(f"{fmt.count(e.old)} -> {fmt.count(e.new)}"
                                f" ({fmt.pct(e.delta, True, 2)}){star}")
                else:
                    star = "*" if e.is_change else " "
                    txt = f"{fmt.num(e.old)} -> {fmt.num(e.new)} ({fmt.pct(e.delta)}){star}"
                    if e.seed_change is not None:
                        # The seed's own before -> after change, for a patch A/B.
                        txt += f" [seed {fmt.pct(e.seed_change, True)}]"
                    line.append(txt)
            trows.append(line)
        seed = "; [seed's published change]" if vc.has_seed else ""
        out.write(f"{vc.suite}: {view.title} (old -> new, delta{seed})\n")
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


def render_compare(outcome, out=sys.stdout, heading=None, names=("old", "new"),
                   record=None):
    """The comparison as text, each verdict as its record (given, or built) says."""
    verdict, b, n = record_verdicts(outcome, record).__getitem__, outcome.old, outcome.new
    if heading:
        out.write(heading + "\n\n")
    out.write(f"{names[0]}: {b.get('id')} ({b.get('suite')}, {b.get('mode')})\n"
              f"{names[1]}: {n.get('id')} ({n.get('suite')}, {n.get('mode')})\n\n")
    if outcome.mode.deterministic:
        _render_deterministic(outcome, out, verdict)
        return
    for side, res in ((names[0], b), (names[1], n)):
        caveat = caveat_of(res)
        if caveat:
            out.write(f"note: {side}: {caveat}\n")
    _views_text(outcome, out)
    t = f"±{outcome.min_change * 100:g}%"
    unit = outcome.unit
    header = ["cell", "metric", "old", "new", "delta", "CI", "p (Holm)", "verdict", "MDE",
              {"boot": "boots", "round": "rounds"}.get(unit, "n")]
    rows = []
    for r in outcome.rows:
        c = r.cmp
        rows.append([r.key, (f"{r.label} {r.unit}").strip(), fmt.num(c.old.median),
                     fmt.num(c.new.median), _delta_text(c), ci_text(c),
                     p_text(c.p_holm) if r.primary else "-",
                     (mark(r) + " " + verdict(id(r))).strip() if r.primary else "(secondary)",
                     fmt.pct(r.mde, False) if r.primary and math.isfinite(r.mde) else "-",
                     f"{int(c.old.n)}/{int(c.new.n)}"])
    if unit == "boot":
        out.write("The boot is the unit: one value per boot (the median of its samples), boots"
                  f" paired A B A B, {_paired_tests_text(outcome)}.\n")
    elif unit == "round":
        out.write(f"Paired by round: {names[0]} and {names[1]} ran in one run, each cell on"
                  " both sides back to back, the first side alternating by round; one value"
                  f" per round and side, {_paired_tests_text(outcome)}.\n")
    else:
        out.write("Unpaired samples: delta is the Hodges-Lehmann estimate (the median of every"
                  " new/old ratio of samples), and its CI the one the Mann-Whitney U test"
                  " inverts, so it can differ from the ratio of the medians shown.\n")
    meds = {"boot": "per-boot medians", "round": "per-round values"}.get(unit, "n samples")
    out.write(f"All cells (median of {meds}; * ="
              f" significant after Holm over the primary metric of each cell, alpha"
              f" {stats.ALPHA:.2f}; CI: {outcome.level * 100:.4g}% for the"
              f" {outcome.family} primaries (Bonferroni, so it agrees with the stars), 95% for"
              f" the rest; a verdict needs a change beyond {t}; MDE = the smallest change"
              f" this design finds 80% of the time at the family's level, alpha"
              f" {stats.ALPHA:.2f}/{max(1, outcome.family)})\n")
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
                                    "inconclusive"), verdict)
        changed = sum(count.get(v, 0) for v in ("better", "worse", "changed", below))
        lead = "Changed" if changed else f"No significant change beyond {t}"
        out.write(f"{lead}: {len(prim)} cells ({test}, Holm, alpha {stats.ALPHA:.2f}): {said}.\n")
        mdes = sorted(r.mde for r in prim if verdict(id(r)) == "inconclusive"
                      and math.isfinite(r.mde))
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


def _tally(rows, order, verdict):
    """({verdict: rows}, "2 better, 1 worse, ...") in the order given."""
    count = {}
    for r in rows:
        v = verdict(id(r))
        count[v] = count.get(v, 0) + 1
    return count, ", ".join(f"{count[v]} {v}" for v in order if v in count)


def _delta_text(c):
    if math.isfinite(c.ratio):
        return fmt.pct(c.delta)
    # An old median of 0: a difference, not a ratio.
    return f"{c.diff:+.4g}" if math.isfinite(c.diff) else "-"


def _render_pairing_gain(rows, names, out):
    """How much noise pairing by round took out: each side's CV across rounds against the
    CV of the paired ratios, which is what the test sees."""
    lines = []
    for r in rows:
        c = r.cmp
        if math.isfinite(c.test.sd_log):
            lines.append([r.key, fmt.pct(c.old.cv, False), fmt.pct(c.new.cv, False),
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
        p, plan = r.cmp.components, r.cmp.plan
        if plan is None:
            continue
        nxt = (f"{plan.reps} reps x {plan.units} boots per side" if plan.units else
               plan.reason or "out of reach")
        lines.append([r.key, fmt.pct(p.cv_between, False), fmt.pct(p.cv_within, False),
                      str(r.cmp.reps), str(r.cmp.test.n), nxt])
    if not lines:
        return
    times = outcome.step_times
    took = (f"a boot takes {times.boot_s:.0f} s beyond its samples and a repetition its cell's"
            " own time, as these boots measured" if times and times.measured else
            "a boot counted as 60 repetitions' time: these files carry no boot or sample times")
    out.write(f"\nNoise by boot (both sides' boots), and what a run needs to find"
              f" ±{outcome.min_change * 100:g}% (power 0.8 at the family's level; {took}):\n")
    out.write(fmt.table(["cell", "boot-to-boot CV", "within-boot CV", "reps", "pairs",
                         "next run"], lines, ["<", ">", ">", ">", ">", "<"]) + "\n")
    for r in rows:
        if not r.cmp.test.can_claim:
            out.write(f"no significance claimed: {r.cmp.test.reason}\n")
            break


def _render_deterministic(outcome, out, verdict):
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
    header = ["cell", "metric", "old", "new", "delta", "\u00b1 A", "\u00b1 B", "floor (k)",
              "threshold", "verdict", "n"]
    notes = []
    for primary in (True, False):
        rows = []
        for r in outcome.judged:
            if r.primary != primary or r.model:
                continue
            j = r.j
            fl = f"{fmt.pct(j.floor, False, 3)} ({j.floor_pairs})" if j.floor_pairs else "-"
            said = verdict(id(r)) or "(secondary)"
            if primary and j.note:
                if j.note not in notes:
                    notes.append(j.note)
                said += f" [{notes.index(j.note) + 1}]"
            rows.append([r.key, (f"{r.label} {r.unit}").strip(), fmt.count(j.old.median),
                         fmt.count(j.new.median), fmt.pct(j.delta, True, 3),
                         fmt.pct(j.spread_old, False, 3), fmt.pct(j.spread_new, False, 3),
                         fl, fmt.pct(j.threshold, False, 3), said,
                         f"{int(j.old.n)}/{int(j.new.n)}"])
        if not rows:
            continue
        out.write("Instructions per operation (primary)\n" if primary else
                  "Other metrics (secondary, no verdict: rates are per 10^9 guest instructions,"
                  " times are guest instructions)\n")
        out.write(fmt.table(header, rows, ["<", "<", ">", ">", ">", ">", ">", ">", ">", "<",
                                           ">"]) + "\n\n")
    render_cost_rows(outcome, out, verdict)
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
                                deterministic.BIMODAL, deterministic.TOO_FEW, "no data"),
                          verdict)
        out.write(f"Primary metrics: {len(prim)} rows in {ncells} cells: {said}.\n")
    for w in outcome.warnings:
        out.write(f"warning: {w}\n")


def render_cost_rows(outcome, out, verdict=None):
    """The cost-model rows of a deterministic comparison, with the model's caveat."""
    verdict = verdict or record_verdicts(outcome).__getitem__
    rows = [r for r in outcome.judged if r.model]
    if not rows:
        return
    model = outcome.cost_model or {}
    out.write("Cost model, per operation (secondary rows: the instruction rule and the cells'"
              " A/A floors, a cell's rows sharing its 5% level; counted by QEMU's plugin over"
              " each sample's measured section)\n")
    arm64 = cost.is_arm64(r.path.split()[0].removeprefix("cost.") for r in rows)
    out.write(f"note: {cost.caveat(outcome.cost_model, arm64)}\n")
    if model.get("memory") == "off":
        out.write("note: no memory model in this run (--cost runs it): no loads, stores,"
                  " misses or est. cycles\n")
    header = ["cell", "count", "old", "new", "diff", "delta", "\u00b1 A", "\u00b1 B", "floor",
              "verdict", "n"]
    table = []
    for r in rows:
        j = r.j
        table.append([r.key, f"{r.label} {r.unit}", fmt.per_op(j.old.median), fmt.per_op(j.new.median),
                      fmt.per_op_change(j.new.median - j.old.median), fmt.pct(j.delta, True, 3),
                      fmt.pct(j.spread_old, False, 3), fmt.pct(j.spread_new, False, 3),
                      f"{fmt.pct(j.floor, False, 3)} ({j.floor_pairs})" if j.floor_pairs else "-",
                      verdict(id(r)), f"{int(j.old.n)}/{int(j.new.n)}"])
    out.write(fmt.table(header, table, ["<", "<"] + [">"] * 7 + ["<", ">"]) + "\n\n")
