# SPDX-License-Identifier: MIT
"""Where the instructions (or the time), and the cost model's counts, went: two profiles
side by side, the functions that moved most."""

import math

from ipclab import fmt, profile
from ipclab.deterministic import cost


def render_profile_diff(old, new, out, unit="insn"):
    """Where the instructions (or the time) went: the functions that moved most."""
    d = profile.diff(old, new)
    if not d:
        return
    if old.get("event") == "insncount":
        out.write("Where the instructions went: exact guest instructions per operation, by"
                  " kernel function (all of user space as one row), counted by QEMU outside"
                  " the guest; the functions that moved most\n")
    else:
        what = "instructions" if unit == "insn" else "time"
        period = int(old.get("period", profile.PERIOD))
        per = "guest instructions" if unit == "insn" else "ns"
        out.write(f"Where the {what} went: perf cpu-clock samples every {period} {per}, per"
                  " operation; the functions that moved most (noise: 2 standard errors from"
                  " sampling)\n")
    for key, rows, tb, tn in d:
        delta = fmt.pct(tn / tb - 1 if tb else math.nan, True, 2)
        out.write(f"{key}: all functions {fmt.count(tb)} -> {fmt.count(tn)} ({delta})\n")
        exact = old.get("event") == "insncount"
        table = [["  " + sym, fmt.count(vb), fmt.count(vn), f"{dv:+.1f}"]
                 + ([] if exact else [fmt.count(noise)]) for sym, vb, vn, dv, noise in rows]
        out.write(fmt.table(["  function", "old", "new", "delta"] + ([] if exact else ["noise"]),
                            table, ["<", ">", ">", ">", ">"][:len(table[0]) if table else 4])
                  + "\n")
    out.write("\n")
    render_cost_profile(old, new, out)


SHORT = {"insns": "insn", "atomics": "atomics", "fences": "fences", "irqflags": "irqflag",
         "dmb_ish": "dmb ish", "dmb_ishld": "dmb ishld", "dmb_ishst": "dmb ishst",
         "dmb_other": "dmb other", "dsb": "dsb", "isb": "isb", "acquire": "acquire",
         "release": "release",
         "loads": "loads", "stores": "stores", "l1_misses": "L1d miss", "ll_misses": "LL miss",
         "est_cycles": "est. cycles"}


def render_cost_profile(old, new, out):
    """Where the costs went: per cell, each count per operation by kernel function (user
    space as one row), the functions that moved most."""
    d = profile.cost_diff(old, new)
    if not d:
        return
    out.write("Where the costs went: the cost model's counts per operation by kernel function,"
              " new - old (user space as one row); the functions that moved most in est."
              f" cycles, and every one whose atomics, fences or irq-flag changes moved.\n"
              f"note: {cost.caveat(old.get('cost_model'), cost.is_arm64(d[0][1]))}\n")
    for key, names, rows, (tb, tn) in d:
        out.write(f"{key}: all functions, per operation: "
                  + ", ".join(f"{SHORT[k]} {fmt.per_op(tb[k])} -> {fmt.per_op(tn[k])}" for k in names) + "\n")
        table = [["  " + sym] + [fmt.per_op_change(dv[k]) for k in names] for sym, dv in rows]
        out.write(fmt.table(["  function"] + [SHORT[k] for k in names], table) + "\n")
    out.write("\n")
