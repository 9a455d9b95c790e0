# SPDX-License-Identifier: MIT
"""The cells two results files are compared by: their pairs (same key, same arguments),
the mode (and clock) both were measured in, the pairs a failed or skipped side rules out, and a
cell's samples by unit (boot or round)."""

from ipclab import EXIT_FAILED, Error, results
from ipclab.mode import Mode


def match_cells(old, new, common=False, names=("OLD", "NEW"), hint_common=True):
    """Pairs of cells with the same key; Error explaining any mismatch (hint_common: the
    command has --common to offer)."""
    # The lab's cell of a boot that left no results is evidence, not a measurement: the
    # other boots of that side are compared without it.
    bk = {c["key"]: c for c in old["cells"] if not results.is_lab_cell(c)}
    nk = {c["key"]: c for c in new["cells"] if not results.is_lab_cell(c)}
    for name, side, kept in ((names[0], old, bk), (names[1], new, nk)):
        if not kept and side["cells"]:
            why = side["cells"][0].get("error", "").splitlines()
            raise Error(f"{name}: no boot left results to compare"
                        + (f" ({why[0][:200]})" if why else ""), EXIT_FAILED)
    only_b = [k for k in bk if k not in nk]
    only_n = [k for k in nk if k not in bk]
    if (only_b or only_n) and not common:
        parts = []
        for label, keys in ((names[0], only_b), (names[1], only_n)):
            if keys:
                more = ", ..." if len(keys) > 3 else ""
                parts.append(f"{len(keys)} only in {label} ({', '.join(keys[:3])}{more})")
        raise Error(f"cells do not match: {'; '.join(parts)}; compare runs of the same suite"
                    " and mode" + (", or pass --common to compare the shared cells only"
                                   if hint_common else ""))
    pairs = []
    for k, b in bk.items():
        if k not in nk:
            continue
        n = nk[k]
        # The sides of one run differ by their --side arguments on purpose.
        if list(b.get("args", [])) != list(n.get("args", [])) and not common and \
                not results.sides_of_one_run(old, new):
            args_b, args_n = " ".join(b.get("args", [])), " ".join(n.get("args", []))
            raise Error(f"cell {k} was run with different engine arguments: {args_b} vs {args_n}")
        pairs.append((b, n))
    if not pairs:
        raise Error(f"no cells in common between {names[0]} and {names[1]}")
    return pairs


def check_clocks(old, new, names=("OLD", "NEW")):
    """The mode both files were measured in (Mode.of: its clock); Error if they differ."""
    mb, mn = Mode.of(old), Mode.of(new)
    if mb != mn:
        raise Error(f"{names[0]} was measured with clock {mb.clock!r} and {names[1]} with"
                    f" {mn.clock!r}: a"
                    " time from one is not a time from the other, so they are not compared;"
                    " measure both sides in the same mode")
    return mb


def not_comparable(b, n, out):
    """True, with the reason noted in out.skipped, when a failed or skipped side rules a
    pair of cells out."""
    if b.get("status") in ("failed", "skipped") or n.get("status") in ("failed", "skipped"):
        why = b.get("error") or n.get("error") or "no samples"
        out.skipped.append((b["key"], f"{b.get('status')}/{n.get('status')}: {why}"))
        return True
    return False


def units_of(cell, field):
    """{unit number: [samples]} of a cell whose samples carry `field` ("lab_boot": the boot
    the lab pooled them from; "round": the round of a run with two sides), or {}."""
    by = {}
    for smp in results.measured(cell):
        if isinstance(smp.get(field), int):
            by.setdefault(smp[field], []).append(smp)
    return by
