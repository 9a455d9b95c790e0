# SPDX-License-Identifier: MIT
"""The seed views' changes in a comparison: each entry old -> new with its change and the
seed's own published change, and a sweep's geometric mean of ratios, tested over its units
(rounds or boots) when it has them."""

from ipclab import metrics, stats, views
from ipclab.compare.cells import units_of
from ipclab.compare.outcome import EntryChange, ViewChange


def _entry(outcome, index, key, path, scale, pub):
    """One view entry's change, or None when either side has no values for it. index: the
    outcome's rows by (key, path), and each side's cells by key (view_changes builds it)."""
    rows, old_cells, new_cells = index
    r = rows.get((key, path))
    if outcome.mode.deterministic:
        if r is None:
            return None
        j = r.j
        return EntryChange(j.old.median, j.new.median, j.delta, j.is_change)
    if r is not None:
        c, sig = r.cmp, r.cmp.significant
    else:
        # A view may name a path compare does not test (a derived one): its change is
        # shown, untested.
        b, n = old_cells.get(key), new_cells.get(key)
        xb = metrics.metric_values(b, path) if b else []
        xn = metrics.metric_values(n, path) if n else []
        if not xb or not xn:
            return None
        c, sig = stats.compare_samples(xb, xn, seed=stats.stable_seed(key + path)), False
    seed = pub[-1] / pub[-2] - 1 if isinstance(pub, list) and len(pub) >= 2 and pub[-2] \
        else None
    return EntryChange(c.old.median * scale, c.new.median * scale, c.delta, sig, seed)


def view_changes(outcome):
    """[ViewChange] for the seed views of the old file: each entry's change, and for a
    sweep the geometric mean of its ratios (other views mix metrics, where one mean of
    ratios would mean nothing)."""
    rows = outcome.judged if outcome.mode.deterministic else outcome.rows
    index = ({(r.key, r.path): r for r in rows},
             {c["key"]: c for c in outcome.old["cells"]},
             {c["key"]: c for c in outcome.new["cells"]})
    out = []
    for sv in views.shown(outcome.old):
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
    is too narrow.  Per unit, the mean over the points of log new - log old; then the
    paired t test.  None when the comparison has no units, or a point lacks a value in
    every unit."""
    field = {"boot": "lab_boot", "round": "round"}.get(outcome.unit)
    if field is None:
        return None
    _, old_cells, new_cells = index
    sides = []
    for cells in (old_cells, new_cells):
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
    old_units, new_units = ([stats.mean([u[k] for u in side]) for k in order]
                             for side in sides)
    return stats.paired_log_ratio(old_units, new_units)
