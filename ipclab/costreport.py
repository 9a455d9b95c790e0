# SPDX-License-Identifier: MIT
"""Presentation of the cost model (ipclab/costmodel.py): its rows in a deterministic
comparison, and where the costs went by function in a profile. Computes nothing."""

import math

from ipclab import costmodel, fmt, profile


def _n(v):
    """A count per operation: two decimals while small, since +1 atomic must read as 1.00."""
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "-"
    return f"{v:.2f}" if abs(v) < 100 else f"{v:.1f}"


def _signed(v):
    if v is None or not math.isfinite(v):
        return "-"
    return ("+" if v >= 0 else "") + _n(v)


def render_rows(outcome, out):
    """The cost-model rows of a deterministic comparison, with the model's caveat."""
    rows = [r for r in outcome.judged if r.model]
    if not rows:
        return
    model = outcome.cost_model or {}
    out.write("Cost model, per operation (secondary rows: the instruction rule and the cells'"
              " A/A floors, a cell's rows sharing its 5% level; counted by QEMU's plugin over"
              " each sample's measured section)\n")
    arm64 = costmodel.is_arm64(r.path.split()[0].removeprefix("cost.") for r in rows)
    out.write(f"note: {costmodel.caveat(outcome.cost_model, arm64)}\n")
    if model.get("memory") == "off":
        out.write("note: no memory model in this run (--cost runs it): no loads, stores,"
                  " misses or est. cycles\n")
    header = ["cell", "count", "base", "new", "diff", "delta", "\u00b1 A", "\u00b1 B", "floor",
              "verdict", "n"]
    table = []
    for r in rows:
        j = r.j
        table.append([r.key, f"{r.label} {r.unit}", _n(j.base.median), _n(j.new.median),
                      _signed(j.new.median - j.base.median), fmt.pct(j.delta, True, 3),
                      fmt.pct(j.spread_base, False, 3), fmt.pct(j.spread_new, False, 3),
                      f"{fmt.pct(j.floor, False, 3)} ({j.floor_pairs})" if j.floor_pairs else "-",
                      j.verdict, f"{int(j.base.n)}/{int(j.new.n)}"])
    out.write(fmt.table(header, table, ["<", "<"] + [">"] * 7 + ["<", ">"]) + "\n\n")


SHORT = {"insns": "insn", "atomics": "atomics", "fences": "fences", "irqflags": "irqflag",
         "dmb_ish": "dmb ish", "dmb_ishld": "dmb ishld", "dmb_ishst": "dmb ishst",
         "dmb_other": "dmb other", "dsb": "dsb", "isb": "isb", "acquire": "acquire",
         "release": "release",
         "loads": "loads", "stores": "stores", "l1_misses": "L1d miss", "ll_misses": "LL miss",
         "est_cycles": "est. cycles"}


def render_profile(base, new, out):
    """Where the costs went: per cell, each count per operation by kernel function (user
    space as one row), the functions that moved most."""
    d = profile.cost_diff(base, new)
    if not d:
        return
    out.write("Where the costs went: the cost model's counts per operation by kernel function,"
              " new - base (user space as one row); the functions that moved most in est."
              f" cycles, and every one whose atomics, fences or irq-flag changes moved.\n"
              f"note: {costmodel.caveat(base.get('cost_model'), costmodel.is_arm64(d[0][1]))}\n")
    for key, names, rows, (tb, tn) in d:
        out.write(f"{key}: all functions, per operation: "
                  + ", ".join(f"{SHORT[k]} {_n(tb[k])} -> {_n(tn[k])}" for k in names) + "\n")
        table = [["  " + sym] + [_signed(dv[k]) for k in names] for sym, dv in rows]
        out.write(fmt.table(["  function"] + [SHORT[k] for k in names], table) + "\n")
    out.write("\n")
