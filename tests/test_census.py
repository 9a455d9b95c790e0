# SPDX-License-Identifier: MIT
"""The census without a VM: the guest's rows read back, the table, the sites that rarely
find a sleeper, which kernel a census builds, and the command line's errors."""

import json
import subprocess
import sys

import pytest

from ipclab import Error
from ipclab.cli import main
from ipclab.lab import census, vm

ROW = {"workload": "ping", "rc": 0, "nproc": 1,
       "pipe": {"read-wr": {"calls": 0, "sleepers": 0},
                "write-rd": {"calls": 10002, "sleepers": 9989}},
       "mqueue": {"send-poll": {"calls": 5, "sleepers": 0}}}


def test_parse_keeps_the_rows_and_nothing_else():
    text = "\n".join(["warning: something", json.dumps(ROW), "{not json",
                      json.dumps({"no": "workload"}), "[1, 2]",
                      "  " + json.dumps({**ROW, "workload": "two", "rc": 1}) + "  ", ""])
    rows = vm.CensusJob.parse(text)
    assert [r["workload"] for r in rows] == ["ping", "two"]
    assert rows[0]["pipe"]["write-rd"] == {"calls": 10002, "sleepers": 9989}


def test_table_gives_sleepers_over_calls_per_site():
    rows = [ROW, {**ROW, "workload": "broken", "rc": "timeout"}]
    lines = census.table(rows).splitlines()
    head = lines[0].split()
    assert head[0] == "workload" and head[1:] == [s for k in census.SITES.values() for s in k]
    cells = dict(zip(head, lines[1].split()))
    assert cells["write-rd"] == "9989/10002"
    assert cells["read-wr"] == "-"            # reached 0 times
    assert cells["write-next-wr"] == "?"      # not in this kernel's counters
    assert cells["send-poll"] == "0/5"
    assert lines[2].startswith("broken (rc timeout)")


def test_rarely_names_the_sites_where_most_calls_find_nobody():
    assert census.rarely([ROW]) == [("ping", "send-poll", 0, 5)]
    assert census.rarely([ROW], below=1.0) == [("ping", "write-rd", 9989, 10002),
                                               ("ping", "send-poll", 0, 5)]


def test_counters_spec_adds_the_overlay_once():
    assert census.counters_spec("mainline") == "mainline+wakeup-counters"
    assert census.counters_spec("mainline-series+lockstat") == \
        "mainline-series+lockstat+wakeup-counters"
    assert census.counters_spec("mainline+wakeup-counters") == "mainline+wakeup-counters"


def test_the_driver_lists_seeds_and_real_workloads():
    names = census.workload_names()
    for w in ("pipe-context", "token-ring-jobserver", "make-jobserver", "hackbench-pipe",
              "mqueue-selftests", "pipe1", "shell-pipeline", "io-uring-full-pipe",
              "sleeping-reader", "self-loop"):
        assert w in names
    assert census.select(["pipe1", "pipe1", "self-loop"]) == ["pipe1", "self-loop"]
    assert census.select([]) == names
    with pytest.raises(Error, match="unknown workload 'nope'") as e:
        census.select(["nope"])
    assert e.value.code == 2


def test_the_driver_refuses_a_kernel_without_counters():
    r = subprocess.run([sys.executable, str(census.DRIVER), "self-loop"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "boot the wakeup-counters variant" in r.stderr


@pytest.mark.parametrize("argv, message", [
    (["census", "lts"], "base lts has none"),
    (["census", "mainline", "--workload", "nope"], "unknown workload 'nope'"),
    (["census", "nosuch"], "unknown variant 'nosuch'"),
    (["census", "mainline", "--", "x"], "census takes nothing after --"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_dry_run_boots_the_counters_overlay_and_runs_the_driver(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path))
    assert main(["census", "mainline-series", "--deterministic", "--cpus", "2",
                 "--workload", "self-loop", "--dry-run"]) == 0
    err = capsys.readouterr().err.splitlines()
    applied = [l.rsplit("/", 1)[1] for l in err if "would run: patch" in l]
    # v4 sends no patch that changes write-sleep-rd's lines: the plain piece applies.
    assert "lab-wakeup-counters--write-sleep-rd.patch" in applied
    assert "lab-wakeup-counters--write-rd.patch" in applied
    vng = next(l for l in err if "would run:" in l and "vng" in l)
    assert "--cpus 2" in vng and "icount" in vng
    job = json.loads(next(l for l in err if "guest job:" in l).split("guest job: ", 1)[1])
    assert job["argv"][1:] == [str(census.DRIVER), "self-loop"]
