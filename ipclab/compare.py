# SPDX-License-Identifier: MIT
"""Compare two results files: baseline -> new, per cell and metric.  Computes only: the
outcome is data, which report.render_compare prints and outcome_record() turns into JSON.

For every cell in both files and every metric compare tests: the medians,
delta %, a bootstrap 95% CI of the ratio of medians, and a two-sided
Mann-Whitney U p-value, Holm-corrected across all rows.  Under a deterministic
clock each row is judged against the noise instead (ipclab/deterministic.py), and the
lab's cost-model counts per operation (ipclab/costmodel.py) are secondary rows under the
same rule.
The seed views (writers x readers, the ladder, ...) get their entries' changes
too, with the seed's own published change beside them.
"""

import json
import math
from dataclasses import dataclass, replace

from ipclab import Error, costmodel, deterministic, floor, metrics, power, results, stats, views
from ipclab.comparison import (MIN_CHANGE, EntryChange, JudgedRow, Outcome, PairedComparison,
                               Row, ViewChange)



def match_cells(base, new, common=False, names=("BASE", "NEW"), hint_common=True):
    """Pairs of cells with the same key; Error explaining any mismatch (hint_common: the
    command has --common to offer)."""
    bk = {c["key"]: c for c in base["cells"]}
    nk = {c["key"]: c for c in new["cells"]}
    only_b = [k for k in bk if k not in nk]
    only_n = [k for k in nk if k not in bk]
    if (only_b or only_n) and not common:
        parts = []
        for label, keys in ((names[0], only_b), (names[1], only_n)):
            if keys:
                more = ", ..." if len(keys) > 3 else ""
                parts.append(f"{len(keys)} only in {label} ({', '.join(keys[:3])}{more})")
        raise Error(f"cells do not match: {'; '.join(parts)}; compare runs of the same suite"
                    " and mode" + (", or pass --common to compare the shared cells only"
                                   if hint_common else ""))
    pairs = []
    for k, b in bk.items():
        if k not in nk:
            continue
        n = nk[k]
        # The sides of one run differ by their --side arguments on purpose.
        if list(b.get("args", [])) != list(n.get("args", [])) and not common and \
                not results.sides_of_one_run(base, new):
            args_b, args_n = " ".join(b.get("args", [])), " ".join(n.get("args", []))
            raise Error(f"cell {k} was run with different engine arguments: {args_b} vs {args_n}")
        pairs.append((b, n))
    if not pairs:
        raise Error(f"no cells in common between {names[0]} and {names[1]}")
    return pairs


def check_clocks(base, new, names=("BASE", "NEW")):
    """The clock both files were measured with; Error if they differ."""
    cb, cn = deterministic.clock_of(base), deterministic.clock_of(new)
    if cb != cn:
        raise Error(f"{names[0]} was measured with clock {cb!r} and {names[1]} with {cn!r}: a"
                    " time from one is not a time from the other, so they are not compared;"
                    " measure both sides in the same mode")
    return cb


def not_comparable(b, n, out):
    """True, with the reason noted in out.skipped, when a failed or skipped side rules a
    pair of cells out."""
    if b.get("status") in ("failed", "skipped") or n.get("status") in ("failed", "skipped"):
        why = b.get("error") or n.get("error") or "no samples"
        out.skipped.append((b["key"], f"{b.get('status')}/{n.get('status')}: {why}"))
        return True
    return False


def units_of(cell, field):
    """{unit number: [samples]} of a cell whose samples carry `field` ("lab_boot": the boot
    the lab pooled them from; "round": the round of a run with two sides), or {}."""
    by = {}
    for smp in results.measured(cell):
        if isinstance(smp.get(field), int):
            by.setdefault(smp[field], []).append(smp)
    return by


def compare_results(base, new, common=False, names=("BASE", "NEW"), floor_file=None,
                    min_change=MIN_CHANGE, paired_test="auto"):
    """The outcome of new against base.  `paired_test` is the test of paired units (rounds
    or boots): "auto" (stats.choose_paired_test), "t" or "wilcoxon"."""
    if paired_test not in stats.PAIRED_TESTS:
        raise Error(f"unknown paired test {paired_test!r}: one of"
                    f" {', '.join(stats.PAIRED_TESTS)}")
    out = Outcome(base=base, new=new, min_change=min_change, paired_test=paired_test)
    out.clock = check_clocks(base, new, names)
    pairs = match_cells(base, new, common, names)
    if out.clock != deterministic.REAL:
        return _judge_deterministic(out, pairs, floor_file or floor.FLOOR_FILE)
    out.unit = _unit(base, new, pairs)
    field = {"boot": "lab_boot", "round": "round"}.get(out.unit)
    units = {b["key"]: (units_of(b, field), units_of(n, field)) for b, n in pairs} \
        if field else {}
    todo = []
    for b, n in pairs:
        if not_comparable(b, n, out):
            continue
        paths = metrics.metrics_for(b)
        if not paths or not results.measured(n):
            out.skipped.append((b["key"], "no measured samples"))
            continue
        todo.append((b, n, paths))
    # The primaries' intervals are Bonferroni-wide, so that an interval that leaves 0 out
    # goes with a Holm star (Holm rejects at least what Bonferroni does).
    out.family = len(todo)
    out.level = 1 - stats.ALPHA / max(1, out.family)
    for b, n, paths in todo:
        for i, path in enumerate(paths):
            level = out.level if i == 0 else 0.95
            # A secondary row is no member of the family: it is tested as if alone.
            family = out.family if i == 0 else 1
            c = _paired_comparison(out.unit, *units[b["key"]], path, level, family,
                                   paired_test, stats.stable_seed(b["key"] + path)) \
                if field else _sample_comparison(b, n, path, level)
            if c is None:
                continue
            unit, better = metrics.metric_info(b, path)
            label = metrics.metric_label(b, path).split(".", 1)[-1]
            out.rows.append(Row(b["key"], b.get("suite", ""), b.get("workload", ""), path,
                                label, unit, better, c, primary=i == 0))
    stats.apply_holm([r.cmp for r in out.rows if r.primary])
    if out.unit == "boot":
        out.costs = measured_costs(base, new)
    for r in out.rows:
        r.mde = _mde(r.cmp, stats.ALPHA / max(1, out.family) if r.primary else stats.ALPHA)
        if out.unit == "boot" and r.primary:
            r.cmp.plan = _plan(r, out)
        r.verdict = verdict(r, min_change) if r.primary else ""
    out.warnings = quality_warnings(out.rows)
    if out.unit == "sample" and out.rows:
        out.warnings.append("unpaired: the two files are separate runs, so whatever drifted"
                            " between them (load, thermal state, a reboot) is part of every"
                            " difference; measure both sides in one run (`run --side`) or one `ab`")
    out.views = view_changes(out)
    return out


def _unit(base, new, pairs):
    """What the tests treat as independent.  A round, when the two files are the sides of
    one run: A and B ran alternately, so a round's pair shares whatever the machine was
    doing then.  A boot, when each side has two boots or more for every cell: samples of
    one boot share that boot's luck.  Otherwise the sample."""
    if results.sides_of_one_run(base, new):
        return "round"
    measured = [(b, n) for b, n in pairs if results.measured(b) and results.measured(n)]
    boots = [(units_of(b, "lab_boot"), units_of(n, "lab_boot")) for b, n in measured]
    if boots and all(len(bb) >= 2 and len(nb) >= 2 for bb, nb in boots):
        return "boot"
    return "sample"


def _sample_comparison(b, n, path, level):
    xb, xn = metrics.metric_values(b, path), metrics.metric_values(n, path)
    if not xb or not xn:
        return None
    return stats.compare_samples(xb, xn, seed=stats.stable_seed(b["key"] + path), level=level)


def _paired_comparison(unit, bu, nu, path, level, family, paired_test, seed):
    """bu, nu: {unit number: [samples]} of one cell on each side (units_of); unit i of one
    side pairs with unit i of the other: boot i of each side ran one after the other, and
    so did round i.  The test is stats.choose_paired_test's for this many pairs in a
    family of `family`."""
    vb = {k: metrics.metric_values({"samples": v}, path) for k, v in sorted(bu.items())}
    vn = {k: metrics.metric_values({"samples": v}, path) for k, v in sorted(nu.items())}
    if not any(vb.values()) or not any(vn.values()):
        return None
    common = [k for k in vb if k in vn]
    test = stats.paired_log_ratio(stats.per_unit_values([vb[k] for k in common]),
                                  stats.per_unit_values([vn[k] for k in common]), level=level,
                                  test=stats.choose_paired_test(len(common), family,
                                                                paired_test), seed=seed)
    meds_b = [stats.median(v) for v in vb.values() if v]
    meds_n = [stats.median(v) for v in vn.values() if v]
    reps = min(len(v) for v in list(vb.values()) + list(vn.values()) if v)
    parts = stats.variance_components([v for v in vb.values() if v],
                                      [v for v in vn.values() if v]) \
        if unit == "boot" else None
    return PairedComparison(unit, stats.summarize(meds_b), stats.summarize(meds_n), test,
                            parts, reps)


@dataclass
class Costs:
    """What a boot and a repetition cost, for the next run's design: seconds."""
    boot_s: float           # a boot beyond the samples it takes (median over every boot)
    rep_s: dict             # {cell key: seconds per sample (median)}
    measured: bool          # False: nothing measured them, and a boot is taken as 60 reps


def measured_costs(base, new):
    """Costs from the boots' own records (meta.lab: each boot's wall time from vng's start
    to the guest's end) and the samples' own times (elapsed_s, the engine's wall time of a
    sample, warmups included): a boot's cost is its wall time less its samples'."""
    boot_s, rep_s = [], {}
    for res in (base, new):
        lab = results.lab_boots(res)
        spent = {}
        for cell in res.get("cells", []):
            for smp in cell.get("samples", []):
                t = smp.get("elapsed_s")
                if isinstance(t, (int, float)) and isinstance(smp.get("lab_boot"), int):
                    spent[smp["lab_boot"]] = spent.get(smp["lab_boot"], 0.0) + t
                    if not smp.get("warmup"):
                        rep_s.setdefault(cell["key"], []).append(t)
        for i, rec in enumerate(lab, 1):
            total = ((rec or {}).get("timings") or {}).get("boot_total_s") \
                if isinstance(rec, dict) else None
            if isinstance(total, (int, float)) and i in spent:
                boot_s.append(max(0.0, total - spent[i]))
    reps = {k: stats.median(v) for k, v in rep_s.items() if v}
    if not boot_s or not reps:
        return Costs(60.0, {}, False)
    return Costs(stats.median(boot_s), reps, True)


def _plan(row, out):
    """The next run's design for a primary row with boots as the unit, at the family's
    level, with the costs measured (or a boot as 60 repetitions when nothing measured
    them)."""
    p = row.cmp.parts
    if not (math.isfinite(p.cv_between) and math.isfinite(p.cv_within)):
        return None
    costs = out.costs
    rep = costs.rep_s.get(row.key) if costs.measured else None
    boot, rep = (costs.boot_s, rep) if rep else (60.0, 1.0)
    return power.plan_next_run(p.cv_between, p.cv_within, out.min_change, boot, rep,
                               alpha=stats.ALPHA / max(1, out.family))


def _mde(c, alpha):
    """The smallest relative change this comparison could have found (power 0.8) at
    `alpha`: a primary's is alpha / family, the level Holm's first step asks of it, so it
    is what the row needs to be found when nothing else in the family is."""
    if isinstance(c, PairedComparison):
        if c.parts is None or c.test.method == "wilcoxon":
            # Rounds side by side: the noise left is that of the ratios themselves.
            return power.paired_mde(c.test.scale_log, c.test.n, alpha, test=c.test.method)
        p = c.parts
        if not (math.isfinite(p.cv_between) and math.isfinite(p.cv_within)):
            return math.nan
        return power.minimum_detectable_effect(p.cv_between, p.cv_within, c.reps, c.test.n,
                                               alpha)
    cvs = [x for x in (c.base.cv, c.new.cv) if math.isfinite(x)]
    if not cvs or min(c.base.n, c.new.n) < 3:
        return math.nan
    return power.minimum_detectable_effect(max(cvs), 0.0, 1, min(c.base.n, c.new.n), alpha,
                                           paired=False)


def within_text(min_change):
    return f"within ±{min_change * 100:g}%"


def below_text(min_change):
    return f"changed, below ±{min_change * 100:g}%"


def verdict(row, min_change):
    """A primary row's verdict: a change beyond the threshold, a difference within it, or
    inconclusive (the design could not tell; row.mde says what it could have seen).

    "within ±T" needs the whole interval inside ±T, significant or not: a point estimate
    under T whose interval reaches past it is a change of unknown size, "changed, below
    ±T"."""
    c = row.cmp
    lo, hi = c.ci
    inside = math.isfinite(lo) and math.isfinite(hi) and lo - 1 > -min_change and \
        hi - 1 < min_change
    if c.significant:
        if math.isfinite(c.ratio) and abs(c.delta) < min_change:
            return within_text(min_change) if inside else below_text(min_change)
        if not c.direction or not math.isfinite(c.direction):
            return "changed"
        return metrics.direction_verdict(row.better, c.direction > 0)
    return within_text(min_change) if inside else "inconclusive"


def deterministic_rows(cell):
    """[(path, unit, better, primary)] a deterministic comparison judges for a cell: its
    instructions per operation (primary), then the metrics compare tests (secondary)."""
    rows = [(p, unit, "lower", True) for p, unit in deterministic.cost_paths(cell)]
    seen = {p for p, _, _, _ in rows}
    for p in metrics.metrics_for(cell):
        if p not in seen:
            unit, better = metrics.metric_info(cell, p)
            rows.append((p, deterministic.unit_in_icount(unit), better, False))
    return rows


def _judge_deterministic(out, pairs, floor_file):
    clock, cpus, kbase = out.clock, results.guest_cpus(out.base), results.kernel_base(out.base)
    # The floor file is parsed once: its floors for this kernel and its bases for the warning.
    floor_data = floor.read_or_empty(floor_file)
    floors, entry = floor.floors_for(floor_data, clock, cpus, kbase)
    out.floor_source = dict(entry, path=str(floor_file)) if entry else None
    for b, n in pairs:
        if not_comparable(b, n, out):
            continue
        if not results.measured(b) or not results.measured(n):
            out.skipped.append((b["key"], "no measured samples"))
            continue
        for path, unit, better, primary in deterministic_rows(b):
            xb, xn = metrics.metric_values(b, path), metrics.metric_values(n, path)
            if not xb or not xn:
                continue
            fl = floors.get(floor.key(b["key"], path))
            label = "cost" if primary and path in deterministic.OP_PATHS else \
                metrics.metric_label(b, path).split(".", 1)[-1]
            j = deterministic.judge(xb, xn, better, fl)
            if j.verdict == deterministic.BIMODAL:
                boots_b, boots_n = (
                    [metrics.metric_values({"samples": v}, path)
                     for _, v in sorted(units_of(c, "lab_boot").items())] for c in (b, n))
                if min(len(boots_b), len(boots_n)) >= deterministic.BIMODAL_BOOTS:
                    j = deterministic.judge_boots(boots_b, boots_n, better, fl)
            if not primary:
                # A verdict per row at the rule's level would multiply the false positives
                # by the metrics of a cell: only the primaries get one, as in the timed mode.
                j = replace(j, verdict="")
            out.judged.append(JudgedRow(b["key"], path, label, unit, primary, j))
        costs = costmodel.cost_paths(b)
        for path, name, unit in costs:
            xb, xn = metrics.metric_values(b, path), metrics.metric_values(n, path)
            if not xb or not xn:
                continue
            out.judged.append(JudgedRow(
                b["key"], path, costmodel.ROW_LABEL[name], unit, False,
                costmodel.judge(xb, xn, floors.get(floor.key(b["key"], path)), len(costs)),
                model=True))
    models = [results.cost_model(r) for r in (out.base, out.new)]
    out.cost_model = models[0]
    if any(r.model for r in out.judged) and models[0] and models[1] and \
            (models[0].get("weights"), models[0].get("cache")) != \
            (models[1].get("weights"), models[1].get("cache")):
        out.warnings.append("the two sides' costs were counted with different cost models"
                            " (weights or cache geometry): est. cycles and misses do not"
                            " compare")
    prim = [r for r in out.judged if r.primary]
    if not any(r.j.floor_pairs for r in out.judged):
        out.floor_source = None
    if prim and not any(r.j.floor_pairs for r in prim):
        have = sorted({x for c, k, x in floor.bases(floor_data) if c == clock and k == cpus})
        where = f"kernel base {kbase}" if kbase else "a kernel the lab did not build from a base"
        out.warnings.append(
            f"no A/A floor for {where} in this mode ({clock}, {cpus} CPU(s)); the floor file"
            f" has pairs for {', '.join(have) or 'no base'}: each side's own spread stands in"
            " for it, which misses boot-to-boot noise; measure one with `ipclab ab BASE BASE"
            " --suite SUITE --deterministic --boots 8` and scripts/icount-floor")
    short = sorted({r.j.floor_pairs for r in prim if 0 < r.j.floor_pairs < floor.TRUST_PAIRS})
    if short:
        out.warnings.append(f"the A/A floor of some cells comes from {short[0]}"
                            f"{'-' + str(short[-1]) if len(short) > 1 else ''} pairs, fewer"
                            f" than the {floor.TRUST_PAIRS} it is trusted from: their"
                            " thresholds are wide and a rare mode may not have been seen")
    out.views = view_changes(out)
    return out


def _reps(c):
    """Repetitions behind one value: samples per side, per boot when boots are the unit (too
    few boots is the paired test's to say), or the pairs of rounds."""
    if isinstance(c, PairedComparison):
        return c.reps if c.unit == "boot" else c.test.n
    return min(c.base.n, c.new.n)


def quality_warnings(rows):
    w = []
    few = sorted({r.key for r in rows if _reps(r.cmp) < stats.MIN_REPS})
    if few:
        n = min(_reps(r.cmp) for r in rows)
        w.append(f"only {n} repetitions in {len(few)} cell(s) (fewer than {stats.MIN_REPS}): the"
                 " test has little power; run with --reps 10 or more")
    noisy = [(cv, r) for r in rows if (cv := _noise_cv(r.cmp)) > stats.MAX_CV]
    if noisy:
        worst, r = max(noisy, key=lambda t: t[0])
        what = f"{len(rows)} rows (worst {worst * 100:.1f}% in {r.key} {r.label})"
        if isinstance(r.cmp, PairedComparison):
            what += ", the CV of the paired ratios"
        w.append(stats.noise_warning(len(noisy), what))
    return w


def _noise_cv(c):
    """The noise the row's test sees, as a CV: each side's for independent samples, the
    paired ratios' for paired units (a drift slower than a pair moves each side's CV and
    cancels in the ratios; what is left is what the test is up against)."""
    if isinstance(c, PairedComparison):
        sd = c.test.sd_log
        return stats.cv_of_log_var(sd * sd) if math.isfinite(sd) else math.nan
    return max(c.base.cv, c.new.cv)


def _entry(outcome, index, key, path, scale, pub):
    """One view entry's change, or None when either side has no values for it. index: the
    outcome's rows by (key, path), and each side's cells by key (view_changes builds it)."""
    rows, base_cells, new_cells = index
    r = rows.get((key, path))
    if outcome.clock != deterministic.REAL:
        if r is None:
            return None
        j = r.j
        return EntryChange(j.base.median, j.new.median, j.delta, j.is_change)
    if r is not None:
        c, sig = r.cmp, r.cmp.significant
    else:
        # A view may name a path compare does not test (a derived one): its change is
        # shown, untested.
        b, n = base_cells.get(key), new_cells.get(key)
        xb = metrics.metric_values(b, path) if b else []
        xn = metrics.metric_values(n, path) if n else []
        if not xb or not xn:
            return None
        c, sig = stats.compare_samples(xb, xn, seed=stats.stable_seed(key + path)), False
    seed = pub[-1] / pub[-2] - 1 if isinstance(pub, list) and len(pub) >= 2 and pub[-2] \
        else None
    return EntryChange(c.base.median * scale, c.new.median * scale, c.delta, sig, seed)


def view_changes(outcome):
    """[ViewChange] for the seed views of the base file: each entry's change, and for a
    sweep the geometric mean of its ratios (other views mix metrics, where one mean of
    ratios would mean nothing)."""
    rows = outcome.judged if outcome.clock != deterministic.REAL else outcome.rows
    index = ({(r.key, r.path): r for r in rows},
             {c["key"]: c for c in outcome.base["cells"]},
             {c["key"]: c for c in outcome.new["cells"]})
    out = []
    for sv in views.shown(outcome.base):
        view = sv.view
        rows, ratios, seed_ratios = [], [], []
        for label, entries in view.rows:
            line = []
            for col, (key, path) in zip(view.columns, entries):
                pub = views.published(sv.ref, view, label, col)
                e = _entry(outcome, index, key, path, view.scale, pub)
                line.append(e)
                if e is not None:
                    ratios.append(e.delta + 1)
                    if e.seed_change is not None:
                        seed_ratios.append(e.seed_change + 1)
            rows.append((label, line))
        if not ratios:
            continue
        vc = ViewChange(sv.part.name, view, rows)
        if view.kind == "grid" and len(ratios) > 1:
            # One test of the sweep's mean log ratio, with its interval.
            vc.geomean = _sweep_by_unit(outcome, index, [e for _, es in view.rows for e in es])
            if vc.geomean is None:
                vc.geomean = stats.sweep_log_ratio_ci(ratios)
            else:
                vc.geomean_over = outcome.unit
            if len(seed_ratios) == len(ratios):
                vc.seed_geomean = stats.geomean(seed_ratios) - 1
        out.append(vc)
    return out


def _sweep_by_unit(outcome, index, entries):
    """The sweep's mean log ratio tested over the units (rounds or boots) rather than over
    its points: the points of one round or boot share its luck, so a t interval over them
    is too narrow.  Per unit, the mean over the points of log new - log base; then the
    paired t test.  None when the comparison has no units, or a point lacks a value in
    every unit."""
    field = {"boot": "lab_boot", "round": "round"}.get(outcome.unit)
    if field is None:
        return None
    _, base_cells, new_cells = index
    sides = []
    for cells in (base_cells, new_cells):
        per_point = []
        for key, path in entries:
            cell = cells.get(key)
            if cell is None:
                return None
            units = units_of(cell, field)
            per_point.append(stats.per_unit_values(
                {k: metrics.metric_values({"samples": v}, path) for k, v in units.items()}))
        sides.append(per_point)
    common = set.intersection(*(set(u) for side in sides for u in side))
    if not common:
        return None
    order = sorted(common)
    base_units, new_units = ([stats.mean([u[k] for u in side]) for k in order]
                             for side in sides)
    return stats.paired_log_ratio(base_units, new_units)


def view_record(vc):
    """One seed view's changes as data: each entry as the table shows it (base -> new, the
    change, whether it is one, the seed's own change), and a sweep's geometric mean."""
    entries = []
    for (label, changes), (_, cells) in zip(vc.rows, vc.view.rows):
        for col, e, (key, path) in zip(vc.view.columns, changes, cells):
            if e is not None:
                entries.append({"row": label, "column": col, "key": key, "path": path,
                                "base": e.base, "new": e.new, "delta": e.delta,
                                "change": e.is_change, "seed_change": e.seed_change})
    rec = {"suite": vc.suite, "view": vc.view.id, "title": vc.view.title,
           "unit": vc.view.unit, "entries": entries, "geomean": None,
           "seed_geomean": vc.seed_geomean}
    g = vc.geomean
    if g is not None:
        rec["geomean"] = {"delta": g.delta, "ci": [g.ci[0] - 1, g.ci[1] - 1],
                          "over": vc.geomean_over, "can_claim": g.can_claim,
                          "reason": g.reason}
    return rec


def outcome_record(outcome):
    """The comparison as data, all the text shows: one entry per row, the seed views'
    changes with a sweep's geometric mean, the A/A floor's source, and the notes on what
    each side's times mean."""
    rec = {"base": outcome.base.get("id"), "new": outcome.new.get("id"), "clock": outcome.clock,
           "rows": [], "skipped": [{"key": k, "why": w} for k, w in outcome.skipped],
           "warnings": list(outcome.warnings),
           "notes": {side: deterministic.caveat_of(res) for side, res in
                     (("base", outcome.base), ("new", outcome.new))},
           "views": [view_record(vc) for vc in outcome.views],
           "floor_source": outcome.floor_source}
    for r in outcome.judged:
        j = r.j
        rec["rows"].append({"key": r.key, "path": r.path, "unit": r.unit, "primary": r.primary,
                            "base": j.base.median, "new": j.new.median, "n": [j.base.n, j.new.n],
                            "delta": j.delta, "spread_base": j.spread_base,
                            "spread_new": j.spread_new,
                            "floor": j.floor if math.isfinite(j.floor) else None,
                            "floor_pairs": j.floor_pairs, "threshold": j.threshold,
                            "verdict": j.verdict, "note": j.note})
        if r.model:
            rec["rows"][-1].update(model=True, label=r.label,
                                   diff=j.new.median - j.base.median)
    if any(r.model for r in outcome.judged):
        rec["cost_model"] = dict(outcome.cost_model or {},
                                 caveat=costmodel.caveat(outcome.cost_model))
    rec["unit"], rec["min_change"] = outcome.unit, outcome.min_change
    rec["paired_test"] = outcome.paired_test
    rec["ci_level_primary"] = outcome.level
    for r in outcome.rows:
        c = r.cmp
        rec["rows"].append({"key": r.key, "path": r.path, "unit": r.unit, "primary": r.primary,
                            "base": c.base.median, "new": c.new.median,
                            "n": [c.base.n, c.new.n], "delta": c.delta, "diff": c.diff,
                            "ci": list(c.ci), "p_holm": c.p_holm, "mde": r.mde,
                            "verdict": r.verdict})
        if isinstance(c, PairedComparison):
            rec["rows"][-1].update(pairs=c.test.n, sd_log_ratio=c.test.sd_log,
                                   test=c.test.method)
            if c.plan is not None:
                rec["rows"][-1].update(next_reps=c.plan.reps, next_boots=c.plan.units)
    if outcome.costs is not None:
        rec["costs"] = {"boot_s": outcome.costs.boot_s, "rep_s": outcome.costs.rep_s,
                        "measured": outcome.costs.measured}
    return json.loads(json.dumps(rec).replace("NaN", "null"))
