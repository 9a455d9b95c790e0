# SPDX-License-Identifier: MIT
"""Number and table formatting shared by show, compare and report."""

import csv
import io
import math


def num(v):
    """A figure with about three significant digits, thousands kept whole."""
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "-"
    a = abs(v)
    if a >= 1000:
        return f"{v:.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    if a == 0:
        return "0"
    return f"{v:#.3g}"


def pct(x, signed=True, decimals=1):
    if x is None or not math.isfinite(x):
        return "-"
    sign = "+" if signed else ""
    return f"{x * 100:{sign}.{decimals}f}%"


def count(v):
    """An instruction count per operation: to a tenth, since deterministic runs repeat to that."""
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "-"
    return f"{v:.1f}"


def table(header, rows, align=None):
    """Plain-text table: columns padded, numbers right-aligned by default."""
    cols = len(header)
    widths = [len(h) for h in header]
    for r in rows:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))
    align = align or (["<"] + [">"] * (cols - 1))
    out = []
    for r in [header] + rows:
        cells = []
        for i, c in enumerate(r):
            cells.append(c.ljust(widths[i]) if align[i] == "<" else c.rjust(widths[i]))
        out.append("  " + "  ".join(cells).rstrip())
    return "\n".join(out)


def md_table(header, rows):
    esc = lambda s: s.replace("|", "\\|")
    out = ["| " + " | ".join(esc(h) for h in header) + " |",
           "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


# A pair in a record's row becomes two columns; any other list is joined as the tables
# print it ("1119 -> 1354").
CSV_PAIRS = {"n": ("n_old", "n_new"), "ci": ("ci_low", "ci_high")}


def csv_table(rows):
    """Rows of a record (views.record, compare.outcome_record) as CSV: a header, then one
    line per row, numbers unrounded, an empty field where a row has no value."""
    flat = []
    for r in rows:
        f = {}
        # A nested object (a comparison row's rule, its null_reasons) becomes "rule.kind"...
        items = [(f"{k}.{kk}", vv) if isinstance(v, dict) else (k, v)
                 for k, v in r.items() for kk, vv in (v.items() if isinstance(v, dict)
                                                      else [(None, v)])]
        for k, v in items:
            if isinstance(v, (list, tuple)) and k in CSV_PAIRS and len(v) == 2:
                f.update(zip(CSV_PAIRS[k], v))
            elif isinstance(v, (list, tuple)):
                f[k] = " -> ".join(str(x) for x in v)
            elif isinstance(v, bool):
                f[k] = "true" if v else "false"
            elif isinstance(v, float) and not math.isfinite(v):
                f[k] = None
            else:
                f[k] = v
        flat.append(f)
    columns = list(dict.fromkeys(k for f in flat for k in f))
    buf = io.StringIO()
    w = csv.DictWriter(buf, columns, lineterminator="\n")
    w.writeheader()
    w.writerows(flat)
    return buf.getvalue()


def per_op(v):
    """A count per operation: two decimals while small, since +1 atomic must read as 1.00."""
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "-"
    return f"{v:.2f}" if abs(v) < 100 else f"{v:.1f}"


def per_op_change(v):
    """per_op() of a difference, with its sign."""
    if v is None or not math.isfinite(v):
        return "-"
    return ("+" if v >= 0 else "") + per_op(v)
