# SPDX-License-Identifier: MIT
"""The order of samples: warmup rounds, then repetitions interleaved.

Every round runs each cell once, in an order shuffled per round from the
plan's order_seed, so slow drifts of the machine (a build starting, thermal
state) spread over all cells instead of landing on one.  A run with two sides
runs each slot on both, back to back, the side that goes first alternating
from round to round (AB, BA, AB, ...), so that a drift and the advantage of
going second both cancel in the pairs.  The schedule is a pure function of
(cells, reps, warmups, order_seed): --resume rebuilds it and skips what the
results file already holds.
"""

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Slot:
    round: int          # 0-based; rounds < warmups are warmups
    cell: int           # index into the cell list
    warmup: bool


def build(ncells, reps, warmups, order_seed):
    slots = []
    for rnd in range(warmups + reps):
        order = list(range(ncells))
        random.Random(f"{int(order_seed)}:{int(rnd)}").shuffle(order)
        slots += [Slot(rnd, i, rnd < warmups) for i in order]
    return slots


def side_order(round_, sides):
    """The order in which a slot of round round_ runs on each of `sides` sides."""
    order = list(range(sides))
    return order if round_ % 2 == 0 else order[::-1]


def remaining(slots, done_warmups, done_reps):
    """Slots still to run, given per-cell counts of samples already kept.

    Per cell, the first done_warmups[i] warmup slots and the first
    done_reps[i] measured slots are considered done.
    """
    seen_w = [0] * len(done_warmups)
    seen_r = [0] * len(done_reps)
    todo = []
    for s in slots:
        if s.warmup:
            seen_w[s.cell] += 1
            if seen_w[s.cell] > done_warmups[s.cell]:
                todo.append(s)
        else:
            seen_r[s.cell] += 1
            if seen_r[s.cell] > done_reps[s.cell]:
                todo.append(s)
    return todo
