# SPDX-License-Identifier: MIT
"""The deterministic mode's clock: what its numbers mean.

The kernel lab's `--deterministic` boots the guest under single-threaded QEMU TCG with
`-icount shift=0`: the guest clock advances one nanosecond per guest instruction. So inside
such a guest every time the engine measures is an instruction count, and a rate is per 10^9
guest instructions. This module owns that reading:

- the honest unit: each workload's guest instructions per operation (`op_paths`), taken
  from the task clock of all its processes (user and kernel, interrupts included) over its
  operations, and the seed views restated in it (`view_for`).
"""

from dataclasses import replace

from ipclab import metrics


REAL = "real"
# What a workload counts its operations in: (path in a sample, units per operation, what one
# operation is).
OPERATIONS = {
    "pipe-throughput": ("metrics.loops", 1, "write+read loop"),
    "pipe-context": ("metrics.round_trips", 1, "round trip"),
    "pipe-sweep": ("metrics.writes", 1, "write"),
    "token-ring": ("params.transfers", 1, "transfer"),
    "fastpipe": ("metrics.bytes_timed", 1048576, "MiB"),
}
# Guest instructions per operation: the task clock of all the workload's processes over its
# operations. (metric path, what one operation is)
OP_COST = {wl: (f"counters.task_clock_ns / {ops}" + (f" * {size}" if size != 1 else ""), op)
           for wl, (ops, size, op) in OPERATIONS.items()}
OP_PATHS = {path for path, _ in OP_COST.values()}
# Workloads that already time each operation themselves: their ns are instructions.
OWN_COST = {
    # Labelled by the call measured: the "full" phase keeps its queue between half and full,
    # so its sends find room and its receives find messages (bench/src/mq_latency.c).
    "mq-latency": [("metrics.empty_send_ns", "send into an empty queue"),
                   ("metrics.empty_recv_ns", "receive of a queue's only message"),
                   ("metrics.full_send_ns", "send into a half to nearly full queue"),
                   ("metrics.full_recv_ns", "receive from a full to half full queue")],
}
TIME_UNITS = ("ns", "us", "ms", "s")


def operations(sample, workload):
    """How many operations one engine sample did, or None."""
    if workload in OPERATIONS:
        path, size, _ = OPERATIONS[workload]
        v = metrics.metric_value(sample, path)
        return v / size if v else None
    if workload in OWN_COST:
        msgs = [metrics.metric_value(sample, f"metrics.{k}_messages") for k in ("empty", "full")]
        return sum(m for m in msgs if m) or None
    return None


def op_paths(cell):
    """[(metric path, unit)] of a cell's per-operation instruction counts, primary first."""
    wl = cell.get("workload")
    if wl in OWN_COST:
        return [(p, "insn/message") for p, _ in OWN_COST[wl]]
    if wl in OP_COST:
        path, op = OP_COST[wl]
        return [(path, "insn/" + op)]
    return []


def view_for(view, cells):
    """A seed view restated for a deterministic run, or None if nothing in it survives.

    A rate becomes the workload's instructions per operation; a time stays, as the guest
    instructions it counted; a scaled figure (the UnixBench index) has no meaning here
    and is dropped.
    """
    rows = []
    changed = False
    for label, entries in view.rows:
        new_entries = []
        for key, path in entries:
            cell = cells.get(key)
            new_path = path
            if "*" in path and path.split("*")[0].strip() == "primary":
                new_path = None
            elif cell is not None:
                unit, _ = metrics.metric_info(cell, path)
                if unit.endswith("/s") and cell.get("workload") in OP_COST:
                    new_path = OP_COST[cell["workload"]][0]
                    changed = True
                elif unit.endswith("/s"):
                    new_path = None
            new_entries.append((key, new_path))
        if any(p is None for _, p in new_entries):
            continue
        if changed and new_entries != list(entries):
            label = _per_op_label(label, cells, new_entries)
        rows.append((label, new_entries))
    if not rows:
        return None
    title = view.title + " [icount: guest instructions, per operation where the seed gave a rate]"
    return replace(view, title=title, rows=rows, unit="insn", scale=1.0 if changed else view.scale)


def _per_op_label(label, cells, entries):
    cell = cells.get(entries[0][0])
    op = OP_COST.get((cell or {}).get("workload"), (None, ""))[1]
    base = label.split("(")[0].strip()
    return f"{base} (insn/{op})" if op else base


def unit_in_icount(unit):
    """A unit restated for an icount clock: times count instructions, rates are per 10^9."""
    if unit in TIME_UNITS:
        return "insn" if unit == "ns" else f"{unit} of insn (1 ns = 1 insn)"
    if unit.endswith("/s"):
        return unit[:-2] + " per 1e9 insn"
    return unit
