# SPDX-License-Identifier: MIT
"""The deterministic mode's decision rule: when a difference is a change.

With one boot per side and samples that repeat to a few parts in 10^4, a rank test over
identical values says nothing. A difference is a change (`judge`) when it exceeds a 95%
prediction bound built from the cell's A/A pairs (floor.py keeps them) and how far either
side's median could be off (its 95% order-statistics interval); a cell whose A/A boots are
bimodal is tested over its boots instead (`judge_boots`).
"""

import math
from dataclasses import dataclass

from ipclab import metrics, stats

# Without an A/A floor a change must exceed this many times the larger 95% half-width of
# the two medians: that is all the noise a pair of boots shows of itself, and it misses the
# boots' own differences (tests/test_judge_sim.py measures what this keeps and misses).
SAFETY = 2.0
# A median's 95% half-width above this is more than the mode is for (`show` warns) ...
TOO_NOISY = 0.01
# ... and so is a rule that cannot see a change below this: the row reads "too noisy".
MAX_THRESHOLD = 0.02
BIMODAL = "bimodal"
BIMODAL_BOOTS = 3


@dataclass
class Judgement:
    """One cell and metric of a deterministic A/B."""
    old: stats.Summary
    new: stats.Summary
    ratio: float
    spread_old: float      # relative half-width of the old median's 95% interval
    spread_new: float
    floor: float            # rms of the cell's A/A differences, NaN when none is known
    threshold: float        # |delta| beyond which this is a change
    verdict: str            # better | worse | changed | within noise | too noisy |
                            # bimodal | too few samples | no data
    floor_pairs: int = 0    # the A/A pairs behind `floor`
    note: str = ""          # what qualifies the verdict: a floor from few pairs, the modes

    @property
    def delta(self):
        return self.ratio - 1

    @property
    def is_change(self):
        return self.verdict in ("better", "worse", "changed")


def median_ci_rank(n, level=0.95):
    """k (1-based) such that [x(k), x(n+1-k)] covers the median with at least `level`, or
    0 when no interval of order statistics does: the full range covers it with probability
    1 - 2 / 2^n, under 95% up to n = 5 (75% at n = 3).

    Distribution-free: the number of samples below the median is Binomial(n, 1/2). From 6
    to 8 samples only the full range reaches 95%, so one outlier widens it to that outlier.
    """
    if n < 1 or 1 - 2 / 2 ** n < level:
        return 0
    k, tail = 1, 0.0
    while k < (n + 1) // 2:
        tail += math.comb(n, k - 1) / 2 ** n
        if 2 * (tail + math.comb(n, k) / 2 ** n) > 1 - level:
            break
        k += 1
    return k


# The fewest samples whose median has a 95% interval of order statistics.
MIN_SAMPLES = next(n for n in range(1, 64) if median_ci_rank(n))
TOO_FEW = "too few samples"


def spread(xs):
    """How far the median could be off: the larger distance from the median to the ends of
    its 95% order-statistics interval, relative to the median. NaN below MIN_SAMPLES
    samples, which cannot give such an interval."""
    if not xs:
        return math.nan
    s = sorted(xs)
    m = stats.median(s)
    k = median_ci_rank(len(s))
    if not m or not k:
        return math.nan
    return max(m - s[k - 1], s[len(s) - k] - m) / abs(m)


def judge(old_vals, new_vals, better, floor=None, level=0.95):
    """The decision rule for one cell and metric, one boot a side (docs/statistics.md).

    With an A/A floor (floor.Floor, k pairs of boots of the old side's kernel): a change when
    |delta| exceeds t(k, 0.975) times the floor's rms, a 95% prediction bound for one more
    A/A difference, or the 95% half-width of this pair's own difference of medians (their
    half-widths in quadrature), whichever is larger.  Under boot-level noise that is a 5%
    false-positive rate per row (tests/test_judge_sim.py); the note says "floor from k
    pairs" below floor.TRUST_PAIRS.  A cell whose A/A boots split into
    two modes gets no threshold from them: "bimodal" (compare then tests its boots, given 3
    a side: judge_boots).  Without a floor, SAFETY times the larger half-width, which
    counts no boot-to-boot noise (compare warns).  Either way, a threshold over
    MAX_THRESHOLD reads "too noisy", and fewer than MIN_SAMPLES samples on a side "too few
    samples".  `level` is the row's own confidence: a family of m rows judged together
    (the cost model's, per cell) passes 1 - 0.05/m, Bonferroni's.
    """
    sb, sn = stats.summarize(old_vals), stats.summarize(new_vals)
    k = floor.k if floor is not None else 0
    rms = floor.rms if k else math.nan
    if not sb.n or not sn.n or not sb.median:
        return Judgement(sb, sn, math.nan, math.nan, math.nan, rms, math.nan, "no data", k)
    ratio = sn.median / sb.median
    sp_b, sp_n = spread(old_vals), spread(new_vals)
    if min(sb.n, sn.n) < MIN_SAMPLES:
        # Below that the noise of a median is not known at 95%, so no threshold is.
        return Judgement(sb, sn, ratio, sp_b, sp_n, rms, math.nan, TOO_FEW, k)
    if floor is not None and floor.modes is not None:
        return Judgement(sb, sn, ratio, sp_b, sp_n, rms, math.nan, BIMODAL, k,
                         f"{floor.modes.text()}: boot each side {BIMODAL_BOOTS} times or"
                         " more to test it")
    if k:
        # The floor's bound, or this pair's own medians' when they are noisier than the
        # floor's boots were (a change that makes the cell noisy).
        threshold = max(floor.quantile(1 - (1 - level) / 2) * rms, math.hypot(sp_b, sp_n))
        note = "" if floor.trusted else f"floor from {k} pair{'s' if k > 1 else ''}"
    else:
        threshold = SAFETY * max(sp_b, sp_n)
        note = "no A/A floor"
    delta = ratio - 1
    if abs(delta) > threshold:
        verdict = metrics.direction_verdict(better, delta > 0)
    elif threshold > MAX_THRESHOLD:
        verdict = "too noisy"
    else:
        verdict = "within noise"
    return Judgement(sb, sn, ratio, sp_b, sp_n, rms, threshold, verdict, k, note)


def judge_boots(old_boots, new_boots, better, floor):
    """A bimodal cell with BIMODAL_BOOTS boots a side or more: boot i of each side pairs,
    each boot gives the log of its median, and the paired t test (stats.paired_log_ratio)
    at 5% decides, as the timed mode's boots are tested.  A boot in the other mode is one
    wild pair, which the t test meets with a wider interval instead of a false change."""
    pooled_b = [x for b in old_boots for x in b]
    pooled_n = [x for b in new_boots for x in b]
    sb, sn = stats.summarize(pooled_b), stats.summarize(pooled_n)
    pairs = min(len(old_boots), len(new_boots))
    t = stats.paired_log_ratio(stats.per_unit_values(old_boots[:pairs]),
                               stats.per_unit_values(new_boots[:pairs]))
    note = f"{floor.modes.text()}; paired t over {pairs} boots a side"
    j = Judgement(sb, sn, t.effect, spread(pooled_b), spread(pooled_n), floor.rms, math.nan,
                  "within noise", floor.k, note)
    if not t.can_claim:
        j.verdict, j.note = BIMODAL, f"{note}: {t.reason}"
        return j
    if t.p < stats.ALPHA:
        j.verdict = metrics.direction_verdict(better, t.effect > 1)
    return j
