# SPDX-License-Identifier: MIT
"""Compare two results files: old -> new, per cell and metric.  Computes only, once:
the outcome is data (outcome.py), which record.py turns into the one versioned record
(`outcome_record`) whose verdicts every reader prints.

For every cell in both files (cells.py) and every metric compare tests: the medians, delta %,
a 95% CI and a p-value, Holm-corrected across the cells' primaries (timed.py).  Under a
deterministic clock each row is judged against the noise instead (judged.py), and the
lab's cost-model counts per operation are secondary rows under the same rule.  The seed views
(writers x readers, the ladder, ...) get their entries' changes too, with the seed's own
published change beside them (views.py).  One metric given as values by boot (bisect's
steps) is compared by the same rules in values.py.
"""

from ipclab import Error, stats
from ipclab.compare.cells import check_clocks, match_cells, units_of
from ipclab.compare.judged import deterministic_rows, fill_judged
from ipclab.compare.outcome import MIN_CHANGE, Outcome
from ipclab.compare.record import build as outcome_record
from ipclab.compare.timed import fill_tested, measured_step_times, verdict
from ipclab.compare.values import compare_values
from ipclab.compare.views import view_changes
from ipclab.deterministic import floor

__all__ = ["MIN_CHANGE", "Outcome", "check_clocks", "compare_results", "compare_values",
           "deterministic_rows",
           "match_cells", "measured_step_times", "outcome_record", "units_of", "verdict"]


def compare_results(old, new, common=False, names=("OLD", "NEW"), floor_file=None,
                    min_change=MIN_CHANGE, paired_test="auto"):
    """The outcome of new against old.  `paired_test` is the test of paired units (rounds
    or boots): "auto" (stats.choose_paired_test), "t" or "wilcoxon"."""
    if paired_test not in stats.PAIRED_TESTS:
        raise Error(f"unknown paired test {paired_test!r}: one of"
                    f" {', '.join(stats.PAIRED_TESTS)}")
    out = Outcome(old=old, new=new, min_change=min_change, paired_test=paired_test)
    out.mode = check_clocks(old, new, names)
    pairs = match_cells(old, new, common, names)
    if out.mode.deterministic:
        fill_judged(out, pairs, floor_file or floor.FLOOR_FILE)
    else:
        fill_tested(out, pairs)
    out.views = view_changes(out)
    return out
