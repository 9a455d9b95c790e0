# SPDX-License-Identifier: MIT
"""End-to-end: tiny real runs of bench/ipcbench through the CLI.

`make test` builds the engine first; run alone, these tests skip when
bench/ipcbench has not been built.  They check plumbing only (exit codes,
files, tables), never speed.
"""
import os

import pytest
from conftest import REAL_ENGINE

from ipclab import metrics, results, suites
from ipclab.cli import main

pytestmark = pytest.mark.skipif(not os.access(REAL_ENGINE, os.X_OK),
                                reason="bench/ipcbench not built (make engine)")


@pytest.fixture
def real(monkeypatch, tmp_path):
    monkeypatch.setenv("IPCBENCH", REAL_ENGINE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_pipe_sweep_tiny_real_run(real, capsys):
    assert main(["run", "pipe-sweep", "--reps", "2", "--quiet", "-o", "r.json", "--no-report",
                 "--", "--writers", "1", "--readers", "2", "--duration", "0.1"]) == 0
    res = results.load("r.json")
    (cell,) = res["cells"]
    assert cell["status"] == "ok", cell["error"]
    assert len(results.measured(cell)) == 2
    assert all(v > 0 for v in metrics.metric_values(cell, "metrics.throughput"))
    assert metrics.metric_values(cell, "latency.write.p99")
    assert res["env"].get("kernel")
    assert res["meta"]["accel"] in ("native", "kvm", "tcg")
    assert "throughput MB/s" in capsys.readouterr().out


def test_token_ring_and_compare_real(real, capsys):
    for name in ("a.json", "b.json"):
        assert main(["run", "token-ring", "--reps", "3", "--warmups", "0", "--quiet", "-o",
                     name, "--no-report", "--", "--procs", "8", "--transfers", "2000"]) == 0
    capsys.readouterr()
    assert main(["compare", "a.json", "b.json"]) == 0
    out = capsys.readouterr().out
    assert "cs_per_transfer" in out
    assert "cells (Mann-Whitney U, Holm" in out   # the summary line
    assert "warning: only 3 repetitions" in out


def test_every_seed_cell_is_accepted_by_the_engine(real):
    """One sample of each quick cell, shortened, so the suites match the engine's options."""
    from ipclab import engine
    seen = set()
    samples = {}
    for cell in suites.SEEDS.cells(suites.QUICK):
        shape = (cell.workload, tuple(a for a in cell.args if a.startswith("--")))
        if shape in seen and cell.workload != "fastpipe":
            continue
        seen.add(shape)
        args = list(cell.args)
        if "--duration" in args:
            args[args.index("--duration") + 1] = "0.05"
        if "--transfers" in args:
            args[args.index("--transfers") + 1] = "500"
        short = suites.Cell(cell.key, cell.workload, args, cell.suite, 0.1)
        out = engine.run_cell(REAL_ENGINE, short)
        assert out.status in ("ok", "skipped"), (cell.key, out.error)
        if out.status == "ok":
            assert out.samples[0]["workload"] == cell.workload
            samples[cell.key] = out.samples[0]
    # Every number a seed-shaped table shows is in the engine's output.
    for suite in suites.SEED_SUITES:
        for view in suite.views:
            for _, entries in view.rows:
                for key, path in entries:
                    if key in samples:
                        assert metrics.metric_value(samples[key], path) is not None, (key, path)


def test_mqueue_cell_reports_the_view_metrics(real):
    from ipclab import engine
    cell = suites.Cell("mq", "mq-latency", ["--priorities", "random", "--duration", "0.05"])
    out = engine.run_cell(REAL_ENGINE, cell)
    if out.status == "skipped":
        pytest.skip(out.error)
    assert out.status == "ok", out.error
    for view in suites.MQUEUE_CACHE.views:
        for _, entries in view.rows:
            for _, path in entries:
                assert metrics.metric_value(out.samples[0], path) is not None, path
