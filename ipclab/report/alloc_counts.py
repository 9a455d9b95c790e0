# SPDX-License-Identifier: MIT
"""What kernel/tests/pipe-alloc-counts prints, read in one place: one JSON line per writers x
readers cell, with the per-write figures named below. scripts/kvm-seed-sweep prints them
side by side; scripts/series-tables keeps them in a record (series_records.summarise_counts)
for the series' tables (series.render_counts).

The test runs in the guest with the host's Python and no project code, so it cannot import
this: the names here follow its docstring and its `cell()`.
"""

import json
from pathlib import Path

from ipclab import Error

COMMAND = "kernel/tests/pipe-alloc-counts"

# Every per-write figure the test prints: (short name for a column or a table's header,
# what it counts, for a caption).
METRICS = {
    "pgalloc_per_write": ("pages allocated", "pages the allocator handed out, system-wide"
                          " (/proc/vmstat pgalloc_*)"),
    "pipe_pages_per_write": ("pipe pages", "buffer pages fs/pipe.c allocated"),
    "under_mutex_per_write": ("pages under mutex", "buffer pages fs/pipe.c allocated with a"
                              " pipe->mutex held"),
    "other_pipe_pages_per_write": ("pages outside mutex", "buffer pages fs/pipe.c allocated"
                                   " with no pipe->mutex held"),
    "mutex_locks_per_write": ("mutex_lock calls", "calls of mutex_lock() in fs/pipe.c"),
    "mutex_found_held_per_write": ("found held", "calls of mutex_lock() in fs/pipe.c that"
                                   " found pipe->mutex held, spinners included"),
    "mutex_found_held_wait_ns_per_write": ("wait ns", "time in ns that the mutex_lock()"
                                           " calls that found pipe->mutex held took to get"
                                           " it, spinning included"),
    "mutex_acquisitions_per_write": ("acquisitions", "acquisitions of &pipe->mutex,"
                                     " by lock_stat"),
    "mutex_contentions_per_write": ("contentions", "contentions of &pipe->mutex, by"
                                    " lock_stat"),
    "mutex_holdtime_total_ns_per_write": ("hold ns", "time in ns that &pipe->mutex was"
                                          " held, by lock_stat"),
    "mutex_waittime_total_ns_per_write": ("lock_stat wait ns", "time in ns waited for"
                                          " &pipe->mutex, by lock_stat"),
}

# The figures the seed's sweep prints side by side, in its order.
COLUMNS = tuple((k, METRICS[k][0]) for k in (
    "under_mutex_per_write", "pipe_pages_per_write", "mutex_contentions_per_write",
    "mutex_found_held_per_write", "mutex_found_held_wait_ns_per_write"))


def cell_order(cell):
    """Sort key of a cell "WxR": by writers, then readers."""
    return tuple(int(x) for x in cell.split("x"))


def parse(text, where="output"):
    """cell "WxR" -> the JSON line the test printed for it. Lines that are not JSON objects
    (a console's, the lab's) are skipped; a JSON line that does not parse is an Error."""
    rows = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            d = json.loads(line)
        except ValueError as e:
            raise Error(f"{where}:{n}: not a JSON line ({e})") from None
        if isinstance(d, dict) and "writers" in d and "readers" in d:
            rows[f"{d['writers']}x{d['readers']}"] = d
    return rows


def read_counts(path):
    """cell "WxR" -> the JSON line pipe-alloc-counts printed for it, from a file of its
    output."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise Error(f"cannot read {path}: {e.strerror or e}") from None
    return parse(text, str(path))


def how_run(cells):
    """("per 64 KiB write", "runs of 40 and 200 writes a writer"): the write size and the
    two runs of these cells' lines, where they all say the same."""
    sizes = {c.get("write_size") for c in cells}
    writes = {tuple(c.get("writes_per_writer") or ()) for c in cells}
    size = sizes.pop() if len(sizes) == 1 else None
    a_b = writes.pop() if len(writes) == 1 else ()
    per = ("per write" if not size else f"per {size >> 10} KiB write" if size % 1024 == 0
           else f"per {size}-byte write")
    return per, (f"runs of {a_b[0]} and {a_b[1]} writes a writer" if len(a_b) == 2
                 else "two runs")


def fmt(v, sign=False, like=None, trim=False):
    """A per-write figure as the tables print it, "-" for none; a difference with its sign
    and as many places as the figure `like` it was taken from; `trim`: without trailing
    zeros (16 rather than 16.000), for a mail's narrow columns."""
    if v is None:
        return "-"
    s = "+" if sign else ""
    text = f"{v:{s}.0f}" if max(abs(v), abs(like or 0)) >= 100 else f"{v:{s}.3f}"
    return text.rstrip("0").rstrip(".") if trim and "." in text else text
