# SPDX-License-Identifier: MIT
"""A comparison under real time: each cell and metric tested, the unit of the test decided
(sample, boot or round), the family's Holm correction, the primaries' MDE, verdict and
(with boots as the unit) the next run's design, and the warnings on too few or too noisy
repetitions."""

import math
from dataclasses import dataclass

from ipclab import metrics, power, results, stats
from ipclab.compare.cells import not_comparable, units_of
from ipclab.compare.outcome import PairedComparison, Row


def fill_tested(out, pairs):
    """Fill `out` (a timed comparison) with its tested rows: per cell and metric a test of
    the unit `_unit` finds (sample, boot or round), Holm over the cells' primaries, each
    primary's MDE, verdict and (boots) the next run's design, and the warnings."""
    out.unit = _unit(out.old, out.new, pairs)
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
                                   out.paired_test, stats.stable_seed(b["key"] + path)) \
                if field else _sample_comparison(b, n, path, level)
            if c is None:
                continue
            unit, better = metrics.metric_info(b, path)
            label = metrics.metric_label(b, path).split(".", 1)[-1]
            out.rows.append(Row(b["key"], b.get("suite", ""), b.get("workload", ""), path,
                                label, unit, better, c, primary=i == 0))
    judge_rows(out)
    out.warnings = quality_warnings(out.rows) + host_warnings(out.old, out.new)
    if out.unit == "sample" and out.rows and not same_run(out.old, out.new):
        out.warnings.append("unpaired: the two files are separate runs, so whatever drifted"
                            " between them (load, thermal state, a reboot) is part of every"
                            " difference; measure both sides in one run (`run --side`) or one `ab`")


def judge_rows(out):
    """The tested rows of `out` judged: Holm over the primaries, then each row's MDE, each
    primary's verdict and (boots) the next run's design."""
    stats.apply_holm([r.cmp for r in out.rows if r.primary])
    if out.unit == "boot":
        out.step_times = measured_step_times(out.old, out.new)
    for r in out.rows:
        r.mde = _mde(r.cmp, stats.ALPHA / max(1, out.family) if r.primary else stats.ALPHA)
        if out.unit == "boot" and r.primary:
            r.cmp.plan = _plan(r, out)
        r.verdict = verdict(r, out.min_change) if r.primary else ""


def same_run(old, new):
    """True when both files hold the one run (same id, same start): a file against itself."""
    return old.get("id") is not None and (old.get("id"), old.get("created")) == \
        (new.get("id"), new.get("created"))


def host_warnings(old, new):
    """What differs between the machines the two runs were taken on (as pyperf warns from
    its metadata): a difference there is part of every row's."""
    if same_run(old, new):
        return [f"both files are the same run ({old.get('id')}): this compares it with"
                " itself, not two separate runs"]
    if results.sides_of_one_run(old, new):
        return []
    eb, en = old.get("env"), new.get("env")
    eb, en = (eb if isinstance(eb, dict) else {}), (en if isinstance(en, dict) else {})
    diff = [f"{what} {a} vs {b}" for what, a, b in (
        ("CPU", eb.get("cpu"), en.get("cpu")), ("kernel", eb.get("kernel"), en.get("kernel")),
        ("accel", results.accel(old, None), results.accel(new, None)))
        if a is not None and b is not None and a != b]
    if not diff:
        return []
    return ["the runs were taken on different machines or kernels (" + "; ".join(diff) +
            "): every difference includes theirs"]


def _unit(old, new, pairs):
    """What the tests treat as independent.  A round, when the two files are the sides of
    one run: A and B ran alternately, so a round's pair shares whatever the machine was
    doing then.  A boot, when each side has two boots or more for every cell: samples of
    one boot share that boot's luck.  Otherwise the sample."""
    if results.sides_of_one_run(old, new):
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
    return paired_values(unit, vb, vn, level, family, paired_test, seed)


def paired_values(unit, vb, vn, level, family, paired_test, seed):
    """The PairedComparison of one metric's values by unit on each side ({unit number:
    [values]}); None when a side has none."""
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
    components = stats.variance_components([v for v in vb.values() if v],
                                      [v for v in vn.values() if v]) \
        if unit == "boot" else None
    return PairedComparison(unit, stats.summarize(meds_b), stats.summarize(meds_n), test,
                            components, reps)


@dataclass
class StepTimes:
    """How long a boot and a repetition take, for the next run's design: seconds."""
    boot_s: float           # a boot beyond the samples it takes (median over every boot)
    rep_s: dict             # {cell key: seconds per sample (median)}
    measured: bool          # False: nothing measured them, and a boot is taken as 60 reps


def measured_step_times(old, new):
    """Step times from the boots' own records (meta.lab: each boot's wall time from vng's start
    to the guest's end) and the samples' own times (elapsed_s, the engine's wall time of a
    sample, warmups included): a boot's time is its wall time less its samples'."""
    boot_s, rep_s = [], {}
    for res in (old, new):
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
        return StepTimes(60.0, {}, False)
    return StepTimes(stats.median(boot_s), reps, True)


def _plan(row, out):
    """The next run's design for a primary row with boots as the unit, at the family's
    level, with the step times measured (or a boot as 60 repetitions when nothing measured
    them)."""
    p = row.cmp.components
    # No design targets a change of 0 (--min-change 0): it would need boots without end.
    if not (math.isfinite(p.cv_between) and math.isfinite(p.cv_within)) or \
            not out.min_change > 0:
        return None
    times = out.step_times
    rep = times.rep_s.get(row.key) if times.measured else None
    boot, rep = (times.boot_s, rep) if rep else (60.0, 1.0)
    return power.plan_next_run(p.cv_between, p.cv_within, out.min_change, boot, rep,
                               alpha=stats.ALPHA / max(1, out.family))


def _mde(c, alpha):
    """The smallest relative change this comparison could have found (power 0.8) at
    `alpha`: a primary's is alpha / family, the level Holm's first step asks of it, so it
    is what the row needs to be found when nothing else in the family is."""
    if isinstance(c, PairedComparison):
        if c.components is None or c.test.method == "wilcoxon":
            # Rounds side by side: the noise left is that of the ratios themselves.
            return power.paired_mde(c.test.scale_log, c.test.n, alpha, test=c.test.method)
        p = c.components
        if not (math.isfinite(p.cv_between) and math.isfinite(p.cv_within)):
            return math.nan
        return power.minimum_detectable_effect(p.cv_between, p.cv_within, c.reps, c.test.n,
                                               alpha)
    cvs = [x for x in (c.old.cv, c.new.cv) if math.isfinite(x)]
    if not cvs or min(c.old.n, c.new.n) < 3:
        return math.nan
    return power.minimum_detectable_effect(max(cvs), 0.0, 1, min(c.old.n, c.new.n), alpha,
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


def _reps(c):
    """Repetitions behind one value: samples per side, per boot when boots are the unit (too
    few boots is the paired test's to say), or the pairs of rounds."""
    if isinstance(c, PairedComparison):
        return c.reps if c.unit == "boot" else c.test.n
    return min(c.old.n, c.new.n)


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
    return max(c.old.cv, c.new.cv)
