# SPDX-License-Identifier: MIT
"""A comparison of one metric given as its values by boot rather than as two results files:
`bisect` compares GOOD's values with each step's here.  The outcome has that one primary
row, judged by the rule `compare` judges a cell's primary with under the same clock (the
deterministic rule against the A/A floor, tested over the boots when the floor is bimodal;
the timed paired test over the boots at `min_change`), so its record (record.build) says of
that row what `compare` would."""

from ipclab.compare.judged import judge_values
from ipclab.compare.outcome import MIN_CHANGE, JudgedRow, Outcome, Row
from ipclab.compare.timed import judge_rows, paired_values
from ipclab import stats


def compare_values(key, path, unit, better, old_boots, new_boots, *, mode,
                   floor=None, min_change=MIN_CHANGE, paired_test="auto", ids=(None, None)):
    """The outcome of `new_boots` against `old_boots` (each a list of boots, each a list of
    the metric's values) for cell `key`'s metric `path`: in the deterministic `mode`
    (ipclab/mode.py) judged against `floor` (floor.Floor, or None), in the timed mode
    tested with the boot as the unit (2 boots a side or more; else the sample).  `better`
    is the metric's direction ("lower" or "higher"), which names a change better or worse;
    `ids` name the two sides in the record."""
    old_boots = [list(b) for b in old_boots if b]
    new_boots = [list(b) for b in new_boots if b]
    out = Outcome(old={"id": ids[0], "env": {"clock": mode.clock}},
                  new={"id": ids[1], "env": {"clock": mode.clock}}, mode=mode,
                  min_change=min_change, paired_test=paired_test)
    label = path.rsplit(".", 1)[-1]
    xb = [x for b in old_boots for x in b]
    xn = [x for b in new_boots for x in b]
    if mode.deterministic:
        j = judge_values(xb, xn, better, floor, lambda: (old_boots, new_boots))
        out.judged.append(JudgedRow(key, path, label, unit, True, j))
        return out
    out.family, out.level = 1, 1 - stats.ALPHA
    seed = stats.stable_seed(key + path)
    if min(len(old_boots), len(new_boots)) >= 2:
        out.unit = "boot"
        c = paired_values("boot", dict(enumerate(old_boots, 1)),
                          dict(enumerate(new_boots, 1)), out.level, 1, paired_test, seed)
    elif xb and xn:
        c = stats.compare_samples(xb, xn, seed=seed, level=out.level)
    else:
        c = None
    if c is not None:
        out.rows.append(Row(key, "", "", path, label, unit, better, c))
        judge_rows(out)
    else:
        out.skipped.append((key, "no measured samples"))
    return out
