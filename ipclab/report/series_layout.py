# SPDX-License-Identifier: MIT
"""How the patch series' tables are laid out in a mail (ipclab/report/series.py): fixed-width
columns under checkpatch's line limit, percentages and medians as the mails print them, and
the words a mail uses for the lab's configs."""

from ipclab import Error

WIDTH = 75      # checkpatch's limit for a commit message's lines


def kernel_in(record, variant, table):
    for k in record["kernels"]:
        if k.get("name", k["variant"]) == variant:
            return k
    raise Error(f"{table.record}: no kernel {variant!r} for table {table.name}")


def num(x, places=1):
    return "n/a" if x is None else f"{x:.{places}f}"


def pct(x):
    return "n/a" if x is None else f"{x * 100:+.2f}%"


def layout(header, rows, align):
    """Fixed-width lines, two spaces in front. `align` gives each column's "<" or ">"; a
    header entry spans the columns up to the next one that is not None."""
    widths = [max([len(r[i]) for r in rows] + [len(header[i] or "")
                                                 if i + 1 == len(header) or header[i + 1]
                                                 is not None else 0])
              for i in range(len(align))]
    lines = []
    for r in rows:
        cells = [c.ljust(w) if a == "<" else c.rjust(w) for c, w, a in zip(r, widths, align)]
        lines.append(("  " + "  ".join(cells)).rstrip())
    head, i = "", 0
    while i < len(header):
        j = i + 1
        while j < len(header) and header[j] is None:
            j += 1
        span = sum(widths[i:j]) + 2 * (j - i - 1)
        text = header[i] or ""
        head += (text.rjust(span) if align[i] == ">" else text.ljust(span)) + "  "
        i = j
    return [("  " + head).rstrip()] + lines


# How a mail names the lab's configs (ipclab/lab/variants.py, FLAVOURS).
CONFIG_NAMES = {"tiny": "tinyconfig plus what the guest needs",
                "production": "Debian's cloud-amd64 config plus what the guest needs",
                "debian-cloud-amd64": "Debian's cloud-amd64 config"}


def wrap(text, width=WIDTH - 3):
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    return lines + [line]


def config_words(config):
    """How a mail names a record's config."""
    return CONFIG_NAMES.get(config, f"{config} config")
