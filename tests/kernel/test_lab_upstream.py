# SPDX-License-Identifier: MIT
"""Kernel tier: upstream's pipe_bench and mq_perf_tests, built on the host from the base's own
source, run in a guest (pipe_bench on two vCPUs, timed TCG: both run at once) and their
figures come back as samples, with their own output kept beside them. A functional check:
timed TCG figures are emulation's.
"""

import json

import pytest

from ipclab import upstream

from .conftest import PLAIN, TEST_BASE, ipclab, missing_prereq

pytestmark = [
    pytest.mark.skipif(missing_prereq() is not None, reason=str(missing_prereq())),
    pytest.mark.skipif(TEST_BASE != "mainline", reason="pipe_bench.c is in 7.3's tree, not 6.12's"),
]

CELLS = ("pipe_bench/w=1,r=1", "pipe_bench/w=2,r=1")


def test_pipe_bench_runs_in_a_guest_of_two_vcpus(tmp_path):
    r = ipclab("kernel", "build", PLAIN, timeout=3600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = tmp_path / "ub.json"
    args = [a for c in CELLS for a in ("--cell", c)]
    r = ipclab("vm", "run", PLAIN, "upstream-pipe", *args, "--cpus", "2", "--reps", "1",
               "--warmups", "0", "-o", str(out), timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res["meta"]["lab"]["guest"]["nproc"] == 2
    assert [c["key"] for c in res["cells"]] == list(CELLS)
    for cell in res["cells"]:
        assert cell["status"] == "ok", cell.get("error")
        sample, = cell["samples"]
        assert sample["metrics"]["throughput"]["value"] > 0
        assert sample["notes"]["output"].startswith("config: writers=")


def test_mq_perf_tests_runs_in_a_guest_and_reads_every_test(tmp_path):
    # The project VM refuses its setrlimit(RLIMIT_MSGQUEUE); a guest's root does not.
    r = ipclab("kernel", "build", PLAIN, timeout=3600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = tmp_path / "mq.json"
    r = ipclab("vm", "run", PLAIN, "upstream-mqueue", "--cpus", "1", "--reps", "1",
               "-o", str(out), timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cell, = json.loads(out.read_text())["cells"]
    assert cell["key"] == upstream.MQ_PERF_TESTS_TENTH.name and cell["status"] == "ok", cell
    sample, = cell["samples"]
    want = {f"{t}_{op}_ns" for t in upstream.MQ_TESTS.values() for op in ("send", "recv")}
    assert set(sample["metrics"]) >= want
    assert all(sample["metrics"][m]["value"] > 0 for m in want)
    assert "Test #2d" in sample["notes"]["output"]
