# SPDX-License-Identifier: MIT
"""Upstream's own benchmarks (ipclab/upstream.py): pipe_bench built from a kernel tree,
never from a copy of ours, run as cells, its output read into samples and kept whole.

The fixtures are pipe_bench's own output, from `ipclab run upstream-pipe --cell
pipe_bench/w=2,r=5` on the project VM (host kernel; the raw output each sample keeps)."""

import shutil

import pytest
from conftest import fixture, from_lab_source

from ipclab import peers, results, runner, suites, upstream
from ipclab.cli import main


def text(name):
    with open(fixture(f"upstream/{name}")) as f:
        return f.read()


def test_pipe_bench_output_is_read_in_its_own_units():
    m = upstream.read_pipe_bench(text("pipe_bench-w2-r5.txt"))
    assert m["throughput"] == {"value": 2485.88, "unit": "MB/s", "better": "higher"}
    assert m["writes"]["value"] == 39774 and m["writes_per_s"]["value"] == 39774
    assert m["write_lat_avg_ns"]["value"] == 50440
    assert m["write_lat_p50_upper_ns"]["value"] == 8191
    assert m["write_lat_p99_upper_ns"]["value"] == 1048575
    assert m["write_lat_max_ns"] == {"value": 36125811, "unit": "ns", "better": "lower"}


@pytest.mark.parametrize("mangle,why", [
    (lambda t: t + "---\n" + t, "not one configuration"),
    (lambda t: t.replace("writes: total", "writes total"), "no `writes:` line"),
    (lambda t: t.replace("lat_p99_ns_upper", "p99"), "lat_p99_ns_upper"),
])
def test_output_it_does_not_know_is_a_parse_error(mangle, why):
    with pytest.raises(peers.ParseError, match=why):
        upstream.read_pipe_bench(mangle(text("pipe_bench-w2-r5.txt")))


def test_the_suite_is_pipe_bench_s_own_sweep_with_and_without_pressure():
    cells = suites.SUITES["upstream-pipe"].cells(suites.QUICK)
    assert len(cells) == 18 and all(upstream.is_upstream(c) for c in cells)
    plain = [c for c in cells if "--memory-pressure" not in c.args]
    assert [c.args[:4] for c in plain] == [["-w", str(w), "-r", str(r)]
                                           for w in (1, 2, 5) for r in (1, 5, 10)]
    assert {c.key for c in cells} - {c.key for c in plain} == \
        {c.key + ",pressure" for c in plain}


def test_a_side_s_engine_arguments_are_not_pipe_bench_s():
    spec = runner.SideSpec("a", "/bin/true", ("--duration", "3"))
    cell = suites.SUITES["upstream-pipe"].cells(suites.QUICK)[0]
    assert runner.side_cells([cell], spec) == [cell]


def test_without_a_kernel_tree_its_cells_are_skipped_with_the_reason(fake_engine, tmp_path,
                                                                     monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IPCLAB_KERNEL_SRC", str(tmp_path / "no-tree"))
    assert main(["run", "upstream-pipe", "--cell", "pipe_bench/w=1,r=1", "--reps", "1",
                 "--warmups", "0", "--quiet", "--no-report", "-o", "r.json"]) == 0
    cell, = results.load("r.json")["cells"]
    assert cell["status"] == "skipped" and "pipe_bench.c is not in" in cell["error"]


def _tree_with_pipe_bench():
    def find():
        tree = upstream.source_tree(upstream.PIPE_BENCH)
        return tree if tree and upstream.PIPE_BENCH.source(tree).is_file() else None
    return from_lab_source(find)


def test_a_binary_is_built_once_per_source_text(tmp_path, monkeypatch):
    real = _tree_with_pipe_bench()
    if real is None:
        pytest.skip("no kernel source with pipe_bench.c (make lab-deps)")
    tree = tmp_path / "linux"
    src = upstream.PIPE_BENCH.source(tree)
    src.parent.mkdir(parents=True)
    shutil.copy(upstream.PIPE_BENCH.source(real), src)
    monkeypatch.setenv("IPCLAB_KERNEL_SRC", str(tree))
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    first = upstream.build(upstream.PIPE_BENCH)
    assert upstream.build(upstream.PIPE_BENCH) == first
    src.write_text(src.read_text() + "\n/* another text */\n")
    assert upstream.build(upstream.PIPE_BENCH) != first


def test_pipe_bench_runs_from_the_kernel_source_and_its_output_is_kept(tmp_path, monkeypatch):
    if _tree_with_pipe_bench() is None:
        pytest.skip("no kernel source with pipe_bench.c (make lab-deps)")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "upstream-pipe", "--cell", "pipe_bench/w=1,r=1", "--reps", "1",
                 "--warmups", "0", "--quiet", "--no-report", "-o", "r.json"]) == 0
    cell, = results.load("r.json")["cells"]
    assert cell["status"] == "ok", cell.get("error")
    sample, = cell["samples"]
    assert sample["metrics"]["throughput"]["value"] > 0
    assert sample["notes"]["output"].startswith("config: writers=1 readers=1 msgsize=65536")
    assert sample["notes"]["source"].endswith("tools/testing/selftests/pipe/pipe_bench.c")


# Issue 42, case 6: an exact key is one cell, a pattern says it is one, '' is refused.
def test_a_key_selects_one_cell_and_a_glob_several(fake_engine, tmp_path, monkeypatch,
                                                   capsys):
    cells = suites.SUITES["upstream-pipe"].cells(suites.QUICK)
    assert [c.key for c in suites.select(cells, ["pipe_bench/w=1,r=1"])] == \
        ["pipe_bench/w=1,r=1"]
    assert len(suites.select(cells, ["pipe_bench/w=1,*"])) == 6
    monkeypatch.chdir(tmp_path)
    for bad in ("", "pipe_bench/w=1"):
        assert main(["run", "upstream-pipe", "--cell", bad, "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--cell" in err


def test_a_guest_runs_what_the_host_staged_without_the_tree_or_the_cache(tmp_path, monkeypatch):
    if _tree_with_pipe_bench() is None:
        pytest.skip("no kernel source with pipe_bench.c (make lab-deps)")
    cell = suites.select(suites.SUITES["upstream-pipe"].cells(suites.QUICK),
                         ["pipe_bench/w=1,r=1"])[0]
    upstream.stage([cell], tmp_path)
    assert (tmp_path / "upstream" / "pipe_bench").is_file()
    # The guest: neither the kernel tree nor the cache is there, only its shared directory.
    monkeypatch.setenv("IPCLAB_KERNEL_SRC", str(tmp_path / "no-tree"))
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "no-cache"))
    monkeypatch.setenv("IPCLAB_SHARED", str(tmp_path))
    run = upstream.run_cell(cell)
    assert run.status == "ok", run.error
    assert run.samples[0]["notes"]["source"].endswith("selftests/pipe/pipe_bench.c")
    monkeypatch.delenv("IPCLAB_SHARED")
    assert upstream.run_cell(cell).status == "skipped"
