# SPDX-License-Identifier: MIT
"""The comparison record: the one owner of what a comparison says, as versioned data.

`build(outcome)` gives one dict: its `schema` (SCHEMA; ipclab/schemas/ holds the JSON Schema
of each version), every row with its verdict, the rule that gave it and that rule's
thresholds, each seed view's verdict, and the comparison's overall verdict with its counts.
The record is strict JSON by construction: a value that is not finite is written as null
and its reason is given beside it, in the object's `null_reasons` ({field: why}).  `dumps`
refuses NaN and infinity, so a value that slipped through raises rather than writing
invalid JSON.  `compare --json/--csv`, `ab` (compare.json and its exit status) and the
reports read the verdicts from here, and `bisect` decides each step from one
(lab/bisect.py).

Versions of "ipclab-comparison":
  1  the first: schema, rules, null_reasons, view verdicts, overall verdict.
  2  the reference side is `old` (it was `base`, a word that also names the lab's kernel
     bases): the record's `old`, each row's and view entry's `old`, a row's `spread_old`;
     `costs` (a boot's and a repetition's seconds) is `step_times`, "cost" being the cost
     model's word.
"""

import json
import math

from ipclab import stats
from ipclab.compare.outcome import PairedComparison
from ipclab.deterministic import cost, rule as det_rule
from ipclab.mode import caveat_of

SCHEMA = "ipclab-comparison/2"
SCHEMA_FILE = "comparison-2.schema.json"

# A row's verdict falls into one of these for the overall tally.
BETTER, WORSE, CHANGED, NO_CHANGE, INCONCLUSIVE = \
    "better", "worse", "changed", "no change", "inconclusive"


def verdict_class(verdict):
    """What one row's verdict counts as overall: a change one way or the other, a change of
    unknown direction, no change beyond the threshold, or nothing decided."""
    if verdict in (BETTER, WORSE, CHANGED):
        return verdict
    if verdict.startswith("within") or verdict.startswith("changed, below"):
        return NO_CHANGE
    return INCONCLUSIVE


def overall(verdicts, bound):
    """The comparison's verdict from its primary rows' verdicts, with the counts: "better"
    or "worse" when every change goes that way, "mixed" when changes go both ways (or one
    cannot say which way), "no change beyond <bound>" when every row is within it, and
    "inconclusive" otherwise (no change found, some rows undecided).  `bound` is what a row
    within it is within: "±2%" (timed) or "the noise" (deterministic)."""
    counts = {k: 0 for k in (BETTER, WORSE, CHANGED, NO_CHANGE, INCONCLUSIVE)}
    for v in verdicts:
        counts[verdict_class(v)] += 1
    if counts[CHANGED] or (counts[BETTER] and counts[WORSE]):
        v = MIXED
    elif counts[BETTER]:
        v = BETTER
    elif counts[WORSE]:
        v = WORSE
    elif counts[NO_CHANGE] and not counts[INCONCLUSIVE]:
        v = f"no change beyond {bound}"
    else:
        v = INCONCLUSIVE
    return {"verdict": v, "counts": counts, "rows": len(verdicts)}


# `ab`'s exit status from the record's overall verdict (`exit_status`). 1 and 2 keep their
# meaning for every command (a boot failed, bad input), so a verdict takes codes of its own.
MIXED = "mixed"
EXIT_NO_CHANGE, EXIT_BETTER, EXIT_WORSE, EXIT_MIXED, EXIT_INCONCLUSIVE = 0, 3, 4, 5, 6
EXIT_STATUSES = {NO_CHANGE: EXIT_NO_CHANGE, BETTER: EXIT_BETTER, WORSE: EXIT_WORSE,
                 MIXED: EXIT_MIXED, INCONCLUSIVE: EXIT_INCONCLUSIVE}


def exit_status(rec):
    """The exit status a comparison record's overall verdict means: 0 no change beyond the
    threshold, 3 better, 4 worse, 5 mixed, 6 inconclusive (EXIT_STATUSES)."""
    v = rec["overall"]["verdict"]
    return EXIT_STATUSES[NO_CHANGE if v.startswith(NO_CHANGE) else v]


def _timed_rule(outcome, r):
    c = r.cmp
    if isinstance(c, PairedComparison):
        test = f"paired {c.test.method} on log ratios ({c.unit}s)"
    else:
        test = "Mann-Whitney U"
    if not r.primary:
        return {"kind": "timed", "test": test, "correction": None, "alpha": stats.ALPHA,
                "family": 1, "min_change": None, "judged": False}
    return {"kind": "timed", "test": test, "correction": "holm", "alpha": stats.ALPHA,
            "family": outcome.family, "min_change": outcome.min_change, "judged": True}


def _deterministic_rule(j):
    if j.floor_pairs:
        basis = "A/A floor: t(k, 0.975) x rms of the A/A differences, or the pair's own" \
                " 95% half-width, whichever is larger"
    else:
        basis = f"no A/A floor: {det_rule.SAFETY:g} x the larger 95% half-width of the medians"
    return {"kind": "deterministic", "basis": basis, "floor": j.floor,
            "floor_pairs": j.floor_pairs, "threshold": j.threshold,
            "max_threshold": det_rule.MAX_THRESHOLD, "min_samples": det_rule.MIN_SAMPLES,
            "judged": True}


def view_record(vc, row_verdicts, bound):
    """One seed view's changes as data: each entry as the table shows it (old -> new, the
    change, whether it is one, the seed's own change, its row's verdict), a sweep's
    geometric mean, and the view's verdict over its entries' rows."""
    entries = []
    for (label, changes), (_, cells) in zip(vc.rows, vc.view.rows):
        for col, e, (key, path) in zip(vc.view.columns, changes, cells):
            if e is not None:
                entries.append({"row": label, "column": col, "key": key, "path": path,
                                "old": e.old, "new": e.new, "delta": e.delta,
                                "change": e.is_change, "seed_change": e.seed_change,
                                "verdict": row_verdicts.get((key, path))})
    rec = {"suite": vc.suite, "view": vc.view.id, "title": vc.view.title,
           "unit": vc.view.unit, "entries": entries, "geomean": None,
           "seed_geomean": vc.seed_geomean,
           "overall": overall([e["verdict"] for e in entries if e["verdict"]], bound)}
    g = vc.geomean
    if g is not None:
        rec["geomean"] = {"delta": g.delta, "ci": [g.ci[0] - 1, g.ci[1] - 1],
                          "over": vc.geomean_over, "can_claim": g.can_claim,
                          "reason": g.reason}
    return rec


def _row_head(r, old, new):
    """What every row starts with: which cell and metric, and each side's median and n."""
    return {"key": r.key, "path": r.path, "unit": r.unit, "primary": r.primary,
            "old": old.median, "new": new.median, "n": [old.n, new.n]}


def _judged_rows(outcome):
    for r in outcome.judged:
        j = r.j
        row = {**_row_head(r, j.old, j.new), "delta": j.delta, "spread_old": j.spread_old,
               "spread_new": j.spread_new, "floor": j.floor, "floor_pairs": j.floor_pairs,
               "threshold": j.threshold,
               "verdict": j.verdict, "note": j.note, "rule": _deterministic_rule(j)}
        if r.model:
            row.update(model=True, label=r.label, diff=j.new.median - j.old.median)
        yield row


def _tested_rows(outcome):
    for r in outcome.rows:
        c = r.cmp
        row = {**_row_head(r, c.old, c.new), "delta": c.delta, "diff": c.diff,
               "ci": list(c.ci), "p_holm": c.p_holm, "mde": r.mde,
               "verdict": r.verdict if r.primary else "",
               "rule": _timed_rule(outcome, r)}
        if isinstance(c, PairedComparison):
            row.update(pairs=c.test.n, sd_log_ratio=c.test.sd_log, test=c.test.method)
            if c.plan is not None:
                row.update(next_reps=c.plan.reps, next_boots=c.plan.units)
        yield row


def _why(obj, key, value):
    """Why a field is not a finite number, from what the object beside it says."""
    if math.isinf(value):
        return "infinite"
    if key in ("delta", "ratio", "diff") and obj.get("old") in (0, 0.0):
        return "old median is 0"
    if obj.get("verdict") == "no data" or obj.get("n") == [0, 0]:
        return "no data"
    if key == "p_holm" and obj.get("primary") is False:
        return "secondary row: not in the tested family"
    if key == "floor" or (key == "floor_pairs" and not value):
        return "no A/A floor for this cell"
    if key in ("threshold", "spread_old", "spread_new") and obj.get("verdict") in (
            det_rule.TOO_FEW, det_rule.BIMODAL):
        return f"no threshold: {obj.get('verdict')}"
    return "undefined for these samples (too few, or a value that is not positive)"


def strict(value, owner=None, key=None):
    """A copy of `value` in which each float that is not finite is None; a dict gets
    `null_reasons` for the fields that became None in it (a list's entries are named
    "field[i]")."""
    if isinstance(value, dict):
        out, reasons = {}, {}
        for k, v in value.items():
            if isinstance(v, float) and not math.isfinite(v):
                out[k], reasons[k] = None, _why(value, k, v)
            elif isinstance(v, (list, tuple)) and any(
                    isinstance(x, float) and not math.isfinite(x) for x in v):
                out[k] = [None if isinstance(x, float) and not math.isfinite(x) else strict(x)
                          for x in v]
                reasons[k] = _why(value, k, next(x for x in v if isinstance(x, float)
                                                  and not math.isfinite(x)))
            else:
                out[k] = strict(v)
        if reasons:
            out["null_reasons"] = dict(out.get("null_reasons") or {}, **reasons)
        return out
    if isinstance(value, (list, tuple)):
        return [strict(x) for x in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def build(outcome):
    """The comparison as one record: all the text shows, every verdict with its rule, and
    the overall verdict."""
    rows = list(_judged_rows(outcome)) + list(_tested_rows(outcome))
    judged = [r for r in rows if r["primary"] and not r.get("model") and r["verdict"]]
    row_verdicts = {(r["key"], r["path"]): r["verdict"] for r in judged}
    bound = "the noise" if outcome.mode.deterministic else f"±{outcome.min_change * 100:g}%"
    rec = {"schema": SCHEMA, "old": outcome.old.get("id"), "new": outcome.new.get("id"),
           "clock": outcome.clock,
           "mode": outcome.mode.name,
           "overall": overall([r["verdict"] for r in judged], bound),
           "rows": rows, "skipped": [{"key": k, "why": w} for k, w in outcome.skipped],
           "warnings": list(outcome.warnings),
           "notes": {side: caveat_of(res) for side, res in
                     (("old", outcome.old), ("new", outcome.new))},
           "views": [view_record(vc, row_verdicts, bound)
                     for vc in outcome.views],
           "floor_source": outcome.floor_source,
           "unit": outcome.unit, "min_change": outcome.min_change,
           "paired_test": outcome.paired_test, "ci_level_primary": outcome.level,
           "family": outcome.family}
    if any(r.model for r in outcome.judged):
        rec["cost_model"] = dict(outcome.cost_model or {},
                                 caveat=cost.caveat(outcome.cost_model))
    if outcome.step_times is not None:
        t = outcome.step_times
        rec["step_times"] = {"boot_s": t.boot_s, "rep_s": t.rep_s, "measured": t.measured}
    rec = strict(rec)
    dumps(rec)      # a value strict() missed raises here, not in a reader
    return rec


def dumps(rec, **kw):
    """The record as strict JSON: NaN or infinity raise ValueError."""
    return json.dumps(rec, allow_nan=False, **kw)


def schema_path():
    from importlib import resources
    return resources.files("ipclab") / "schemas" / SCHEMA_FILE


def row_verdicts(outcome, rec=None):
    """Each row object of `outcome` (a JudgedRow or a Row) -> its verdict as the record says
    it, for the readers that print rows from the outcome: the record's rows are the
    outcome's judged rows, then its tested rows, in order."""
    rec = rec if rec is not None else build(outcome)
    return {id(r): row["verdict"] for r, row in
            zip(list(outcome.judged) + list(outcome.rows), rec["rows"])}
