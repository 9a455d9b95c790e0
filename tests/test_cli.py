# SPDX-License-Identifier: MIT
"""End-to-end CLI tests against the fake engine (tests/fixtures/fake-ipcbench)."""
import json
import os
import subprocess
import sys

import pytest
from conftest import FAKE_ENGINE, ROOT, fixture, sigint_default

from ipclab import results
from ipclab.cli import main


def run_cli(*argv, env=None, cwd=None):
    e = dict(os.environ, PYTHONPATH=ROOT, **(env or {}))
    return subprocess.run([sys.executable, "-m", "ipclab"] + list(argv), capture_output=True,
                          text=True, env=e, cwd=cwd, timeout=300)


def test_run_workload_writes_results_and_report(fake_engine, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rc = main(["run", "fastpipe", "--reps", "3", "--quiet", "-o", "r.json", "--meta", "k=v",
               "--", "--write", "vmsplice"])
    assert rc == 0
    res = results.load("r.json")
    assert res["complete"]
    assert res["meta"]["k"] == "v"
    assert res["meta"]["accel"] == "native"
    assert res["plan"]["reps"] == 3 and res["plan"]["warmups"] == 1
    (cell,) = res["cells"]
    assert cell["args"] == ["--write", "vmsplice"]
    assert len(cell["samples"]) == 4
    assert [s.get("warmup") for s in cell["samples"]].count(True) == 1
    out = capsys.readouterr().out
    assert "results: r.json" in out
    assert "report:" in out
    rep = out.split("report:")[1].split()[0]
    assert os.path.exists(rep)


def test_run_suite_tables_in_seed_shape(fake_engine, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "seed-pipe-prealloc", "--reps", "2", "--quiet", "-o", "r.json",
                 "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "Throughput in MB/s" in out
    assert "readers=10" in out
    assert "(1119 -> 1354)" in out
    assert "warning: only 2 repetitions" in out
    res = results.load("r.json")
    assert len(res["cells"]) == 9
    assert all(len(results.measured(c)) == 2 for c in res["cells"])


def test_order_is_interleaved_and_randomized(fake_engine, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "seed-skip-wakeups", "--reps", "3", "--quiet", "-o", "r.json",
                 "--no-report", "--order-seed", "5"]) == 0
    res = results.load("r.json")
    # Samples carry their end time; every cell's samples span the whole run
    # rather than running back to back.
    from ipclab import schedule
    slots = schedule.build(4, 3, 1, 5)
    rounds = [[s.cell for s in slots if s.round == r] for r in range(4)]
    assert all(sorted(r) == [0, 1, 2, 3] for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1


def test_resume_continues_an_interrupted_run(fake_engine, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "seed-fast-pipes", "--reps", "3", "--quiet", "-o", "r.json",
                 "--no-report"]) == 0
    res = json.load(open("r.json"))
    # Pretend the run stopped: drop samples from some cells.
    res["cells"][0]["samples"] = res["cells"][0]["samples"][:1]
    res["cells"][1]["samples"] = []
    res["cells"][1]["status"] = "pending"
    res["complete"] = False
    json.dump(res, open("r.json", "w"))
    assert "incomplete" in (main(["show", "r.json"]) or capsys.readouterr().out)
    assert main(["run", "--resume", "r.json", "--quiet", "--no-report"]) == 0
    res = results.load("r.json")
    assert res["complete"]
    assert [len(c["samples"]) for c in res["cells"]] == [4] * 6


def test_skipped_and_failed_cells_are_recorded(fake_engine, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FAKE_EXIT", "mq-latency=77")
    assert main(["run", "seed-mqueue-cache", "--reps", "2", "--quiet", "-o", "r.json",
                 "--no-report"]) == 0
    res = results.load("r.json")
    assert {c["status"] for c in res["cells"]} == {"skipped"}
    assert "fake exit 77" in res["cells"][0]["error"]
    assert "skipped" in capsys.readouterr().out
    monkeypatch.setenv("FAKE_EXIT", "token-ring=1")
    # the results are kept, and the exit status tells a script that a cell has no numbers
    assert main(["run", "seed-exclusive-waits", "--reps", "2", "--quiet", "-o", "f.json",
                 "--no-report"]) == 1
    (cell,) = results.load("f.json")["cells"]
    assert cell["status"] == "failed" and "exit 1" in cell["error"]


def test_dry_run_prints_argv(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IPCBENCH", "/nonexistent/ipcbench")
    assert main(["run", "seed-fast-pipes", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("# seed-fast-pipes, quick mode: 6 cells")
    assert lines[1].startswith("/nonexistent/ipcbench fastpipe --write write --read read")
    assert "--json" in lines[1]
    assert not os.path.exists("results")


def test_suites_and_env(capsys):
    assert main(["suites"]) == 0
    out = capsys.readouterr().out
    for s in ("seed-pipe-prealloc", "seed-exclusive-waits", "seed-skip-wakeups",
              "seed-fast-pipes", "seed-mqueue-cache", "seeds"):
        assert s + ":" in out
    assert "pipe-sweep/w=5,r=10" in out
    assert main(["env", "--json"]) == 0
    env = json.loads(capsys.readouterr().out)
    assert env["env"]["nproc"] >= 1
    assert isinstance(env["warnings"], list)


def test_env_warnings_advise():
    from ipclab import envinfo
    w = envinfo.warnings({"governor": "powersave", "thp": "always", "dev_mqueue": False,
                          "virtualization": "kvm", "accel": "tcg", "nproc": 2,
                          "stress_ng": True})
    text = "\n".join(w)
    assert "performance" in text and "madvise" in text and "mount -t mqueue" in text
    assert "VM (kvm)" in text and "emulated" in text


BAD = [
    (["show", "/nonexistent.json"], "no such results file"),
    (["show", fixture("gen_results.py")], "corrupt results file"),
    (["compare", fixture("base.json"), "/nonexistent.json"], "no such results file"),
    (["run", "no-such-suite"], "unknown suite or workload"),
    (["report", "/nonexistent.json"], "no such results file"),
]


@pytest.mark.parametrize("argv,msg", BAD)
def test_bad_input_one_line_exit_2(argv, msg):
    p = run_cli(*argv)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert msg in p.stderr
    assert p.stderr.count("\n") == 1


def test_bad_input_corrupt_and_mismatch(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "ipclab-results/1", "cells": [')
    p = run_cli("show", str(bad))
    assert p.returncode == 2 and "invalid JSON" in p.stderr and "Traceback" not in p.stderr
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"schema": "other/1"}')
    p = run_cli("compare", str(wrong), fixture("base.json"))
    assert p.returncode == 2 and "not an ipclab results file" in p.stderr
    new = json.load(open(fixture("new.json")))
    new["cells"] = new["cells"][1:]
    short = tmp_path / "short.json"
    short.write_text(json.dumps(new))
    p = run_cli("compare", fixture("base.json"), str(short))
    assert p.returncode == 2
    assert "cells do not match: 1 only in OLD (pipe-sweep/w=1,r=1)" in p.stderr
    assert p.stderr.count("\n") == 1


def test_missing_engine_one_line_exit_2(tmp_path):
    p = run_cli("run", "seed-fast-pipes", env={"IPCBENCH": str(tmp_path / "nope")},
                cwd=str(tmp_path))
    assert p.returncode == 2
    assert "engine not found" in p.stderr and "make engine" in p.stderr
    assert p.stderr.count("\n") == 1


def test_compare_cli_matches_library(capsys):
    assert main(["compare", fixture("base.json"), fixture("new.json")]) == 0
    out = capsys.readouterr().out
    # One primary metric per cell is tested (issue 12): the three shifted sweep cells.
    assert "Changed: 10 cells (Mann-Whitney U, Holm, alpha 0.05): 3 better," in out


def test_report_cli(tmp_path, capsys):
    assert main(["report", fixture("base.json"), fixture("new.json"), "-o",
                 str(tmp_path / "rep")]) == 0
    md = capsys.readouterr().out.strip()
    assert md == str(tmp_path / "rep" / "report.md")
    assert "## Compare: base -> new" in open(md).read()


def test_progress_bar_on_stderr_and_quiet(fake_engine, tmp_path):
    p = run_cli("run", "pipe-context", "--reps", "2", "-o", "r.json", "--no-report",
                env={"IPCBENCH": FAKE_ENGINE}, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "ETA" in p.stderr and "3/3" in p.stderr
    p = run_cli("run", "pipe-context", "--reps", "2", "-o", "q.json", "--no-report",
                "--quiet", env={"IPCBENCH": FAKE_ENGINE}, cwd=str(tmp_path))
    # --quiet drops the bar and the banner; the environment's warnings stay
    assert p.returncode == 0
    assert all(line.startswith("warning: ") for line in p.stderr.splitlines()), p.stderr


def test_lab_register_hook_is_optional():
    from ipclab.cli.parser import build_parser
    parser = build_parser()
    assert parser.prog == "ipclab"


def test_ctrl_c_keeps_samples_and_resume_finishes(tmp_path):
    import signal
    import time
    env = dict(os.environ, PYTHONPATH=ROOT, IPCBENCH=FAKE_ENGINE, FAKE_HANG="pipe-context")
    p = subprocess.Popen([sys.executable, "-m", "ipclab", "run", "seed-skip-wakeups", "--reps",
                          "2", "-o", "r.json", "--no-report", "--order-seed", "1"],
                         cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=sigint_default)
    path = tmp_path / "r.json"
    # Wait until the run is stuck in the hanging workload with samples saved.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and sum(len(c["samples"]) for c in
                                 results.load(str(path))["cells"]) >= 1:
            break
        time.sleep(0.2)
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "interrupted" in err and "--resume" in err
    assert "Traceback" not in err
    kept = results.load(str(path))
    assert not kept["complete"]
    assert sum(len(c["samples"]) for c in kept["cells"]) >= 1
    r = run_cli("run", "--resume", "r.json", "--quiet", "--no-report",
                env={"IPCBENCH": FAKE_ENGINE}, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    done = results.load(str(path))
    assert done["complete"]
    assert all(len(results.measured(c)) == 2 for c in done["cells"])


def test_hung_engine_is_killed_by_the_watchdog(monkeypatch):
    import time
    from ipclab import engine, suites
    monkeypatch.setenv("FAKE_HANG", "fastpipe")
    monkeypatch.setattr(engine, "WATCHDOG_GRACE_S", 1)
    cell = suites.Cell("fastpipe/x", "fastpipe", [], timeout_s=1)
    t = time.monotonic()
    out = engine.run_cell(FAKE_ENGINE, cell)
    assert out.status == "failed" and "timed out" in out.error
    # The watchdog's timeout and grace are 1 s each: ~2 s idle. 10x that is the bound, since
    # a load stretches it and an engine never killed would hang to the suite's own timeout.
    assert time.monotonic() - t < 20


def test_watchdogs_stretch_under_emulation(monkeypatch):
    from ipclab import engine, suites
    cell = suites.Cell("x", "fastpipe", [], timeout_s=10)
    monkeypatch.delenv("IPCLAB_TIMEOUT_FACTOR", raising=False)
    monkeypatch.setenv("IPCBENCH_ACCEL", "native")
    assert engine.argv_for("e", cell)[-2:] == ["--timeout", "10"]
    monkeypatch.setenv("IPCBENCH_ACCEL", "tcg")
    assert engine.argv_for("e", cell)[-2:] == ["--timeout", "400"]
    monkeypatch.setenv("IPCLAB_TIMEOUT_FACTOR", "3")
    assert engine.argv_for("e", cell)[-2:] == ["--timeout", "30"]


def test_unwritable_output_is_one_line_exit_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    p = run_cli("run", "fastpipe", "-o", str(blocker / "r.json"),
                env={"IPCBENCH": FAKE_ENGINE}, cwd=str(tmp_path))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.count("\n") == 1
    p = run_cli("report", fixture("base.json"), "-o", str(blocker / "rep"), cwd=str(tmp_path))
    assert p.returncode == 2 and "Traceback" not in p.stderr
