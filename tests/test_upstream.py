# SPDX-License-Identifier: MIT
"""Upstream's own benchmarks (ipclab/upstream.py): built from the kernel's source and run
as cells, their output read in their own units.

tests/fixtures/upstream/pipe_bench-w2-r5-d1.out is real output: pipe_bench built by
upstream.build from the lab's 7.3.4 tree and run on this host as `pipe_bench -w 2 -r 5 -d 1`
(stdout only; its stderr was "pid=N")."""
from pathlib import Path

import pytest
from conftest import FIXTURES

from ipclab import Error, runner, suites, upstream
from ipclab.lab import source

PIPE_OUT = Path(FIXTURES, "upstream", "pipe_bench-w2-r5-d1.out")
PIPE_BENCH = upstream.PROGRAMS["pipe_bench"]
MQ_PERF = upstream.PROGRAMS["mq_perf_tests"]


def values(m):
    return {k: v["value"] for k, v in m.items()}


def test_pipe_bench_output_is_read_in_its_own_units():
    m = upstream.read_pipe_bench(PIPE_OUT.read_text())
    assert values(m) == {"throughput": 3557.12, "writes": 56914.0, "writes_per_s": 56914.0,
                         "lat_avg_ns": 35336.0, "lat_p50_ns_upper": 8191.0,
                         "lat_p99_ns_upper": 524287.0, "lat_max_ns": 20087089.0}
    assert m["throughput"]["unit"] == "MB/s" and m["lat_avg_ns"]["unit"] == "ns"


def test_pipe_bench_output_it_cannot_read_is_a_parse_error():
    text = PIPE_OUT.read_text()
    with pytest.raises(upstream.ParseError, match="2 config blocks"):
        upstream.read_pipe_bench("---\n" + text + "---\n" + text)     # a whole sweep
    with pytest.raises(upstream.ParseError, match="no write"):
        upstream.read_pipe_bench(text.replace("total=56914", "total=0"))
    with pytest.raises(upstream.ParseError, match="lat_max_ns"):
        upstream.read_pipe_bench(text.replace("lat_max_ns", "lat_mx"))


# Not a capture: mq_perf_tests cannot run on this host (setrlimit needs CAP_SYS_RESOURCE).
# The lines are its printf formats (mq_perf_tests.c, perf_test_thread) with made-up numbers.
MQ_FORMATS = "".join(
    f"\n\tTest #{t}: Time send/recv message, ...\n\t\t(100 iterations)\n"
    f"\t\tSend msg:\t\t\t0.{i}s total time\n\t\t\t\t\t\t{100 + i} nsec/msg\n"
    f"\t\tRecv msg:\t\t\t0.{i}s total time\n\t\t\t\t\t\t{200 + i} nsec/msg\n"
    for i, t in enumerate(("1", "2a", "2b", "2c", "2d")))


def test_mq_perf_tests_figures_are_ns_per_call_per_test():
    m = values(upstream.read_mq_perf(MQ_FORMATS))
    assert m["empty_send_ns"] == 100 and m["empty_recv_ns"] == 200
    assert m["full_random_send_ns"] == 104 and m["full_random_recv_ns"] == 204
    assert len(m) == 10
    with pytest.raises(upstream.ParseError, match="full_random"):
        upstream.read_mq_perf(MQ_FORMATS.split("Test #2d")[0])


def test_defines_replace_one_define_each_and_leave_the_argv():
    defs, argv = upstream._defines(["TEST1_LOOPS=10", "TEST2_LOOPS=5", "-p", "/q"])
    assert defs == [("TEST1_LOOPS", "10"), ("TEST2_LOOPS", "5")] and argv == ["-p", "/q"]
    text = "#define TEST1_LOOPS 10000000\n#define TEST2_LOOPS 100000\n"
    assert upstream._with_defines(text, defs, "x") == \
        "#define TEST1_LOOPS 10\n#define TEST2_LOOPS 5\n"
    with pytest.raises(Error, match="TEST3_LOOPS"):
        upstream._with_defines(text, [("TEST3_LOOPS", "1")], "x")


def test_the_default_tree_is_the_labs(monkeypatch):
    monkeypatch.delenv("IPCLAB_KERNEL_TREE", raising=False)
    assert upstream.default_tree() == source.open_source(None, create=False).tree


def test_a_missing_source_skips_the_cell(tmp_path):
    cell = suites.UPSTREAM_PIPE.cells(suites.QUICK)[0]
    out = upstream.run_cell(cell, tree=tmp_path)
    assert out.status == "skipped" and "pipe_bench.c" in out.error and "kernel fetch" in out.error


def test_the_suites_cells():
    quick = suites.UPSTREAM_PIPE.cells(suites.QUICK)
    full = suites.UPSTREAM_PIPE.cells(suites.FULL)
    assert [c.key for c in quick][:2] == ["pipe_bench/w=1,r=1", "pipe_bench/w=1,r=5"]
    assert len(quick) == 9 and len(full) == 18
    assert sum("--memory-pressure" in c.args for c in full) == 9
    assert all(upstream.is_upstream(c) for c in quick + full)
    assert suites.UPSTREAM_MQUEUE.cells(suites.FULL)[0].args == []      # its real size
    assert [c.workload for c in suites.SUITES["upstream"].cells(suites.QUICK)][-1] == \
        "peer:perf-sched-pipe"


def _tree():
    tree = upstream.default_tree()
    if not (tree / PIPE_BENCH.path).is_file():
        pytest.skip(f"no kernel source at {tree} (make lab-deps fetches it)")
    return tree


def test_pipe_bench_builds_from_the_source_and_runs_one_cell(tmp_path, monkeypatch):
    tree = _tree()
    monkeypatch.setattr(upstream, "cache_dir", lambda: tmp_path)
    cell = suites.Cell("pipe_bench/w=1,r=1", PIPE_BENCH.workload, ["-w", "1", "-r", "1",
                                                                   "-d", "1"], est_s=1.2)
    out = runner.run_cell("unused-engine", cell)
    assert out.status == "ok", out.error
    smp = out.samples[0]
    assert smp["metrics"]["throughput"]["value"] > 0
    assert "writers=1 readers=1" in smp["raw"]["stdout"]
    assert smp["latency"]["write"]["mean"] == smp["metrics"]["lat_avg_ns"]["value"]
    assert len(list(tmp_path.glob("pipe_bench-*/pipe_bench"))) == 1
    # The second run takes the cached binary.
    before = list(tmp_path.glob("pipe_bench-*/pipe_bench"))[0].stat().st_mtime_ns
    assert runner.run_cell("unused-engine", cell).status == "ok"
    assert list(tmp_path.glob("pipe_bench-*/pipe_bench"))[0].stat().st_mtime_ns == before


def test_mq_perf_tests_builds_and_runs_or_says_why_not(tmp_path, monkeypatch):
    tree = _tree()
    monkeypatch.setattr(upstream, "cache_dir", lambda: tmp_path)
    cell = suites.Cell("mq", MQ_PERF.workload, ["TEST1_LOOPS=1000", "TEST2_LOOPS=100"])
    out = upstream.run_cell(cell, tree=tree)
    if out.status == "skipped":        # a host that refuses its setrlimit (this one does)
        assert "CAP_SYS_RESOURCE" in out.error
    else:
        assert out.status == "ok", out.error
        assert "(1000 iterations)" in out.samples[0]["raw"]["stdout"]
    assert len(list(tmp_path.glob("mq_perf_tests-*/mq_perf_tests"))) == 1


def test_the_beside_view_puts_both_engines_in_one_unit():
    from ipclab import metrics
    keys = {c.key for c in suites.PIPE_BESIDE.cells(suites.QUICK)}
    (view,) = suites.PIPE_BESIDE.views_for({})
    assert len(view.rows) == 9
    for _, cols in view.rows:
        assert {k for k, _ in cols} <= keys
    smp = {"metrics": upstream.read_pipe_bench(PIPE_OUT.read_text())}
    theirs = view.rows[0][1][0][1]
    # 3557.12 MiB/s as pipe_bench prints it is 3729.91 MB/s as ipcbench counts.
    assert metrics.metric_value(smp, theirs) == pytest.approx(3557.12 * 1.048576)
