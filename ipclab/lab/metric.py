# SPDX-License-Identifier: MIT
"""The metric a bisect follows: --metric CELL[:PATH] read, the cell it names in a results
file, the path and unit followed when PATH is left out, and the whole spec checked against
the suite (and a sample the engine makes here) before anything is built."""

from __future__ import annotations

from ipclab import EXIT_FAILED, Error, deterministic, engine, metrics, results, suites
from ipclab.mode import Mode


def metric_spec(spec: str) -> tuple[str, str | None]:
    """--metric CELL[:PATH]: the cell (its key, or a unique start of it) and the metric path
    (default: the cell's instructions per operation, deterministic, else its primary)."""
    cell, _, path = spec.partition(":")
    if not cell:
        raise Error(f"--metric {spec!r}: want CELL[:PATH]")
    return cell, path or None


def find_cell(res: dict, cell: str) -> dict:
    cells = [c for c in res.get("cells", []) if not results.is_lab_cell(c)]
    exact = [c for c in cells if c["key"] == cell]
    hits = exact or [c for c in cells if c["key"].startswith(cell)]
    if len(hits) != 1:
        keys = ", ".join(c["key"] for c in (hits or cells))
        raise Error(f"--metric {cell}: {'several' if hits else 'no'} cells match"
                    f" (cells: {keys})")
    return hits[0]


def metric_path(cell: dict, path: str | None, mode: Mode) -> tuple[str, str]:
    """(path, unit) of the metric a bisect follows in a cell."""
    if path:
        unit, _ = metrics.metric_info(cell, path)
        return path, unit
    if mode.deterministic:
        paths = deterministic.op_paths(cell)
        if paths:
            return paths[0]
    found = metrics.metrics_for(cell)
    if not found:
        raise Error(f"--metric {cell['key']}: the cell has no metric to follow", EXIT_FAILED)
    unit, _ = metrics.metric_info(cell, found[0])
    return found[0], unit


def better_of(cell: dict, path: str, mode: Mode) -> str:
    """Which way the metric is better ("lower", "higher", "none"), as compare's row of it
    says: instructions per operation are better lower."""
    if mode.deterministic and path in {p for p, _ in deterministic.op_paths(cell)}:
        return "lower"
    return metrics.metric_info(cell, path)[1]


def check_metric(suite: str, spec: str, mode: Mode, probe: bool = True) -> None:
    """Before anything is built: the suite exists, CELL is one of its cells, and PATH is one
    the cell's samples have: a sample the engine makes of the cell on the host shows which
    (probe; not for cost.*, which only a deterministic guest counts)."""
    suites.check(suite)
    cell, path = metric_spec(spec)
    cells = suites.resolve(suite).cells(suites.QUICK)
    key = find_cell({"cells": [{"key": c.key} for c in cells]}, cell)["key"]
    if not path:
        return
    metrics.check_path(path)
    counted = "cost." in path
    if counted and not mode.deterministic:
        raise Error(f"--metric {spec}: cost.* is counted only in the deterministic mode")
    sample = _host_sample(next(c for c in cells if c.key == key)) \
        if probe and not counted else None
    if sample is not None and metrics.metric_value(sample, path) is None:
        raise Error(f"--metric {spec}: {key}'s samples have no {path} (metrics: "
                    f"{', '.join(sorted(sample.get('metrics', {})))})")


def _host_sample(cell) -> dict | None:
    """One sample of the cell from the engine here, or None when there is none to take."""
    try:
        eng = engine.find_engine(None)
    except Error:
        return None
    out = engine.run_cell(eng, cell)
    return out.samples[0] if out.status == "ok" and out.samples else None
