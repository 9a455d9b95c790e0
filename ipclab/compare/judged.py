# SPDX-License-Identifier: MIT
"""A comparison under a deterministic clock: each cell's rows judged by the rule
(ipclab/deterministic/rule.py) against the A/A floor of the old side's kernel, the cost model's
rows beside them, and the warnings on missing or short floors and differing cost models."""

from dataclasses import replace

from ipclab import deterministic, metrics, results
from ipclab.compare.cells import not_comparable, units_of
from ipclab.compare.outcome import JudgedRow
from ipclab.deterministic import cost, floor


def deterministic_rows(cell):
    """[(path, unit, better, primary)] a deterministic comparison judges for a cell: its
    instructions per operation (primary), then the metrics compare tests (secondary)."""
    rows = [(p, unit, "lower", True) for p, unit in deterministic.op_paths(cell)]
    seen = {p for p, _, _, _ in rows}
    for p in metrics.metrics_for(cell):
        if p not in seen:
            unit, better = metrics.metric_info(cell, p)
            rows.append((p, deterministic.unit_in_icount(unit), better, False))
    return rows


def judge_values(xb, xn, better, fl, boots):
    """One row by the rule: each side's values, judged against the A/A floor `fl` (or none);
    a cell the floor shows bimodal is tested over its boots instead, given BIMODAL_BOOTS a
    side (`boots()`: each side's values by boot)."""
    j = deterministic.judge(xb, xn, better, fl)
    if j.verdict == deterministic.BIMODAL:
        boots_b, boots_n = boots()
        if min(len(boots_b), len(boots_n)) >= deterministic.BIMODAL_BOOTS:
            j = deterministic.judge_boots(boots_b, boots_n, better, fl)
    return j


def fill_judged(out, pairs, floor_file):
    """Fill `out` (a comparison under a deterministic clock) with its judged rows: per cell
    its instructions per operation (primary) and the metrics compare tests, then the cost
    model's rows, each by the rule against the A/A floor of the old side's kernel (the floor
    file parsed once); the warnings on floors and cost models."""
    clock, cpus, kbase = out.clock, results.guest_cpus(out.old), results.kernel_base(out.old)
    # The floor file is parsed once: its floors for this kernel and its bases for the warning.
    floor_data = floor.read_or_empty(floor_file)
    floors, entry = out.mode.floors(cpus, kbase, floor_data)
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
            j = judge_values(xb, xn, better, fl, lambda: (
                [metrics.metric_values({"samples": v}, path)
                 for _, v in sorted(units_of(c, "lab_boot").items())] for c in (b, n)))
            if not primary:
                # A verdict per row at the rule's level would multiply the false positives
                # by the metrics of a cell: only the primaries get one, as in the timed mode.
                j = replace(j, verdict="")
            out.judged.append(JudgedRow(b["key"], path, label, unit, primary, j))
        costs = cost.row_paths(b)
        for path, name, unit in costs:
            xb, xn = metrics.metric_values(b, path), metrics.metric_values(n, path)
            if not xb or not xn:
                continue
            out.judged.append(JudgedRow(
                b["key"], path, cost.ROW_LABEL[name], unit, False,
                cost.judge_counts(xb, xn, floors.get(floor.key(b["key"], path)), len(costs)),
                model=True))
    models = [results.cost_model(r) for r in (out.old, out.new)]
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
            " for it, which misses boot-to-boot noise; measure one with `ipclab ab K K"
            " --suite SUITE --deterministic --boots 8` and scripts/icount-floor")
    short = sorted({r.j.floor_pairs for r in prim if 0 < r.j.floor_pairs < floor.TRUST_PAIRS})
    if short:
        out.warnings.append(f"the A/A floor of some cells comes from {short[0]}"
                            f"{'-' + str(short[-1]) if len(short) > 1 else ''} pairs, fewer"
                            f" than the {floor.TRUST_PAIRS} it is trusted from: their"
                            " thresholds are wide and a rare mode may not have been seen")
