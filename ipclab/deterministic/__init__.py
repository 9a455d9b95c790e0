# SPDX-License-Identifier: MIT
"""The deterministic mode (the kernel lab's `--deterministic`: guest time is guest
instructions): clock.py says what its numbers mean, rule.py when a difference is a change,
floor.py keeps the A/A floor the rule takes its noise from, and cost.py is the cost model
(the QEMU plugin's counts and the estimated cycles). The clock's and the rule's names are
the package's."""

from ipclab.deterministic.clock import (OP_COST, OP_PATHS, OPERATIONS, OWN_COST, REAL,
                                        TIME_UNITS, op_paths, operations,
                                        unit_in_icount, view_for)
from ipclab.deterministic.rule import (BIMODAL, BIMODAL_BOOTS, MAX_THRESHOLD, MIN_SAMPLES,
                                       SAFETY, TOO_FEW, TOO_NOISY, Judgement, judge,
                                       judge_boots, median_ci_rank, spread)

__all__ = ["OP_COST", "OP_PATHS", "OPERATIONS", "OWN_COST", "REAL", "TIME_UNITS", "op_paths",
           "operations", "unit_in_icount", "view_for", "BIMODAL", "BIMODAL_BOOTS", "MAX_THRESHOLD",
           "MIN_SAMPLES", "SAFETY", "TOO_FEW", "TOO_NOISY", "Judgement", "judge", "judge_boots",
           "median_ci_rank", "spread"]
