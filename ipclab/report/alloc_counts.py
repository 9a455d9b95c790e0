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
    "mutex_locks_per_write": ("mutex_lock calls", "fs/pipe.c's mutex_lock() calls"),
    "mutex_found_held_per_write": ("found held", "fs/pipe.c's mutex_lock() calls that found"
                                   " pipe->mutex held, spinners included"),
    "mutex_found_held_wait_ns_per_write": ("wait ns", "ns those mutex_lock() calls that"
                                           " found pipe->mutex held took to get it,"
                                           " spinning included"),
    "mutex_acquisitions_per_write": ("acquisitions", "lock_stat's acquisitions of"
                                     " &pipe->mutex"),
    "mutex_contentions_per_write": ("contentions", "lock_stat's contentions of &pipe->mutex"),
    "mutex_holdtime_total_ns_per_write": ("hold ns", "ns &pipe->mutex was held, by lock_stat"),
    "mutex_waittime_total_ns_per_write": ("lock_stat wait ns", "ns waited for &pipe->mutex,"
                                          " by lock_stat"),
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


def fmt(v):
    """A per-write figure as the tables print it: "-" for none."""
    return "-" if v is None else f"{v:.3f}" if abs(v) < 100 else f"{v:.0f}"
