# SPDX-License-Identifier: MIT
"""Issue 42, the run side: a results file is data, never code. What `run --resume` runs is
rebuilt from this checkout's suites and the command line, and a file that asks for anything
else is refused (one line, exit 2, no file touched)."""

import json
from types import SimpleNamespace

import pytest
from conftest import FAKE_ENGINE

from ipclab import peers, proc, results
from ipclab.cli import main

ONE = ["run", "seeds", "--cell", "token-ring/procs=64", "--reps", "2", "--warmups", "0",
       "--quiet", "--no-report"]


def one_line(err):
    return err.count("\n") == 1 and "Traceback" not in err


def _interrupted(path, edit):
    """The run at path, made interrupted, with `edit(cell)` applied to its one cell."""
    res = results.load(path)
    res["complete"] = False
    cell = res["cells"][0]
    cell["samples"], cell["status"] = [], "pending"
    edit(cell)
    results.save(res, path)


def _peer_argv(cell):
    cell.update(key="peer/perf-sched-pipe", workload="peer:perf-sched-pipe",
                args=["sh", "-c", "touch PWNED"])


def _engine_args(cell):
    cell["args"] = cell["args"] + ["--procs", "4096"]


def _key(cell):
    cell["key"] = "token-ring/procs=65"


@pytest.mark.parametrize("edit", [_peer_argv, _engine_args, _key])
def test_resume_runs_only_what_the_suites_define(edit, fake_engine, tmp_path, monkeypatch,
                                                 capsys):
    """Case 1: a peer's argv edited to a shell command, an engine cell's arguments or key
    edited: refused, nothing run, the file as it was."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(peers, "missing", lambda tool: None)
    assert main(ONE + ["-o", "r.json"]) == 0
    _interrupted("r.json", edit)
    before = (tmp_path / "r.json").read_text()
    capsys.readouterr()
    assert main(["run", "--resume", "r.json", "--quiet", "--no-report"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "not a cell of" in err, err
    assert not (tmp_path / "PWNED").exists()
    assert (tmp_path / "r.json").read_text() == before


def test_resume_of_a_true_plan_still_runs(fake_engine, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(ONE + ["-o", "r.json"]) == 0
    _interrupted("r.json", lambda cell: None)
    assert main(["run", "--resume", "r.json", "--quiet", "--no-report"]) == 0
    assert results.load("r.json")["complete"]


@pytest.mark.parametrize("order", [0, 1])
def test_an_empty_side_is_the_default_engine_in_either_order(order, fake_engine, tmp_path,
                                                             monkeypatch, capsys):
    """Case 4: `--side old=ENGINE --side new=` ran ENGINE on both sides (an A/A labelled
    A/B); the empty side is the default engine whatever the order, and the dry run says so."""
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "other-ipcbench"
    other.write_bytes(open(FAKE_ENGINE, "rb").read())
    other.chmod(0o755)
    sides = [f"old={other}", "new="]
    if order:
        sides.reverse()
    capsys.readouterr()
    assert main(["run", "seeds", "--cell", "token-ring/procs=64", "--dry-run",
                 "--side", sides[0], "--side", sides[1]]) == 0
    lines = [l for l in capsys.readouterr().out.splitlines() if not l.startswith("#")]
    engines = {l.split(": ", 1)[0]: l.split(": ", 1)[1].split()[0] for l in lines}
    assert engines == {"old": str(other), "new": FAKE_ENGINE}
    monkeypatch.setenv("IPCBENCH", FAKE_ENGINE)     # the run above set it to the first side's
    assert main(["run", "seeds", "--cell", "token-ring/procs=64", "--reps", "3",
                 "--warmups", "0", "--quiet", "--no-report", "-o", "ab",
                 "--side", sides[0], "--side", sides[1]]) == 0
    ran = {s["name"]: s["engine"] for s in results.load("ab.old.json")["pair"]["sides"]}
    assert ran == {"old": str(other), "new": FAKE_ENGINE}


def test_duplicate_cell_keys_are_refused(fake_engine, tmp_path, monkeypatch, capsys):
    """Case 10: two cells of one key in one results file."""
    monkeypatch.chdir(tmp_path)
    assert main(ONE + ["-o", "r.json"]) == 0
    res = results.load("r.json")
    res["cells"].append(dict(res["cells"][0]))
    results.save(res, "r.json")
    capsys.readouterr()
    assert main(["show", "r.json"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "token-ring/procs=64" in err and "twice" in err, err


def test_census_dry_run_exits_0_and_shows_the_selftests_build(capsys):
    """Case 12: `census mainline --dry-run` always exited 1 (the source tree it reads the
    mqueue selftests from is not opened in a dry run)."""
    assert main(["census", "mainline", "--dry-run"]) == 0
    out = capsys.readouterr()
    assert "SELFTESTS=" in out.out + out.err


def test_profile_never_replaces_a_file_that_is_not_a_profile(fake_engine, tmp_path,
                                                              monkeypatch, capsys):
    """Case 11: `run --profile FILE` overwrote whatever FILE held; refused before the run."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("my notes\n")
    capsys.readouterr()
    assert main(ONE + ["-o", "r.json", "--profile", "notes.txt"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "notes.txt" in err and "not a profile" in err, err
    assert (tmp_path / "notes.txt").read_text() == "my notes\n"
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("kind", ["file", "relative", "under a file"])
def test_a_bad_ipclab_cache_is_named_at_the_start(kind, tmp_path, monkeypatch, capsys):
    """Case 13: IPCLAB_CACHE naming a file, a relative path (the guest and the builds run
    elsewhere) or a path under a file failed deep down, or not at all in a dry run."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f").write_text("")
    monkeypatch.setenv("IPCLAB_CACHE", {"file": str(tmp_path / "f"), "relative": "cache",
                                        "under a file": str(tmp_path / "f" / "c")}[kind])
    assert main(["kernel", "build", "lts", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "IPCLAB_CACHE" in err, err


def test_resume_keeps_the_cap_on_planned_runs(fake_engine, tmp_path, monkeypatch, capsys):
    """Case 8: a hand-edited plan.reps skipped the cap a new run has (memory without bound)."""
    monkeypatch.chdir(tmp_path)
    assert main(ONE + ["-o", "r.json"]) == 0

    def grow(cell):
        pass
    _interrupted("r.json", grow)
    res = results.load("r.json")
    res["plan"]["reps"] = 10 ** 9
    results.save(res, "r.json")
    before = (tmp_path / "r.json").read_text()
    capsys.readouterr()
    assert main(["run", "--resume", "r.json", "--quiet", "--no-report"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "at most" in err, err
    assert (tmp_path / "r.json").read_text() == before


def test_resume_refuses_an_engine_changed_since(fake_engine, tmp_path, monkeypatch, capsys):
    """Case 8: a one-engine resume did not check the engine's checksum (two builds mixed)."""
    monkeypatch.chdir(tmp_path)
    eng = tmp_path / "ipcbench"
    eng.write_bytes(open(FAKE_ENGINE, "rb").read())
    eng.chmod(0o755)
    assert main(ONE + ["-o", "r.json", "--engine", str(eng)]) == 0
    _interrupted("r.json", lambda cell: None)
    with open(eng, "a") as f:
        f.write("# rebuilt\n")
    before = (tmp_path / "r.json").read_text()
    capsys.readouterr()
    assert main(["run", "--resume", "r.json", "--quiet", "--no-report",
                 "--engine", str(eng)]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "rebuilt or replaced" in err, err
    assert (tmp_path / "r.json").read_text() == before


def _held(path):
    """True when another process holds the flock on path."""
    import fcntl
    if not path.exists():
        return False
    with open(path) as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def test_a_second_writer_of_one_results_file_is_refused(fake_engine, tmp_path, monkeypatch,
                                                        capsys):
    """Case 7: two resumes of one file, or a run and a resume, each rewrote it from their own
    copy and lost the other's samples. The second writer is refused while the first runs."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from conftest import ROOT
    monkeypatch.chdir(tmp_path)
    assert main(ONE + ["-o", "r.json"]) == 0
    _interrupted("r.json", lambda cell: None)
    first = subprocess.Popen(
        [sys.executable, "-m", "ipclab", "run", "--resume", "r.json", "--quiet", "--no-report"],
        cwd=str(tmp_path), env=dict(os.environ, PYTHONPATH=ROOT, IPCBENCH=FAKE_ENGINE,
                                    FAKE_HANG="token-ring"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _held(tmp_path / ".r.json.lock"):
            time.sleep(0.1)
        assert first.poll() is None, first.communicate()
        capsys.readouterr()
        assert main(["run", "--resume", "r.json", "--quiet", "--no-report"]) == 2
        err = capsys.readouterr().err
        assert one_line(err) and "in use" in err, (err, first.poll())
        assert main(ONE + ["-o", "r.json", "--force"]) == 2
        assert "in use" in capsys.readouterr().err
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)


@pytest.mark.parametrize("out", ["", "-"])
def test_an_empty_or_dash_output_is_refused(out, fake_engine, tmp_path, monkeypatch, capsys):
    """Low: `-o ''` ran to the default path, `-o -` wrote a file named '-'."""
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(ONE + ["-o", out]) == 2
    assert one_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


def test_a_run_into_a_new_results_folder_works(fake_engine, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(ONE) == 0
    assert len(list((tmp_path / "results").glob("*.json"))) == 1


# Issue 42, low: an engine that is not an ipcbench is bad input, as a missing one is.
@pytest.mark.parametrize("engine", ["/bin/false", "/bin/true"])
def test_an_engine_that_is_not_ipcbench_is_one_line_and_exit_2(engine, tmp_path, monkeypatch,
                                                               capsys):
    monkeypatch.chdir(tmp_path)
    # run puts its engine in the environment (its guests' and peers' processes read it):
    # the test's own setting is undone after it, run's with it.
    monkeypatch.setenv("IPCBENCH", engine)
    assert main(["run", "pipe-context", "--reps", "1", "--warmups", "0", "--quiet",
                 "--no-report", "--engine", engine, "-o", "r.json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and engine in err and "Traceback" not in err


# Issue 42, lows: `ab --cpus 999` is refused before a build; `ab BASE --patch X` is BASE
# against BASE with X.
@pytest.mark.parametrize("argv", [["ab", "mainline", "mainline", "--cpus", "999"],
                                  ["ab", "mainline", "mainline", "--cpus", "256"],
                                  ["vm", "run", "mainline", "icount-check", "--cpus", "513",
                                   "--arch", "arm64"]])
def test_too_many_vcpus_are_refused_before_anything_is_built(argv, monkeypatch, capsys):
    from ipclab.lab import variants
    monkeypatch.setattr(variants, "resolve", lambda *a, **k: pytest.fail("resolved a kernel"))
    assert main(argv + ["--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "QEMU boots at most" in err


def test_ab_base_with_patch_is_base_against_base_with_the_patch(monkeypatch, tmp_path):
    from ipclab.cli import lab as cli_lab
    from ipclab.lab import variants
    got = []
    monkeypatch.setattr(variants, "resolve",
                        lambda name, tree, patches=(), **k: got.append((name, tuple(patches))))
    args = SimpleNamespace(kernel=[], patch=["fix.patch"], tree=None, config=None, arch=None,
                           cpus=None)
    cli_lab._kernels(args, ["mainline", None], 2)
    assert got == [("mainline", ()), ("mainline", ("fix.patch",))]
    args.patch = []
    with pytest.raises(Exception, match="want OLD and NEW"):
        cli_lab._kernels(args, ["mainline", None], 2)


def test_a_paired_resume_runs_no_engine_only_the_file_names(fake_engine, tmp_path, monkeypatch,
                                                            capsys):
    """Case 1 on a run with two sides: each side's engine path is in the file; an edited
    one (with its checksum edited to match) is refused unless the command line names it."""
    monkeypatch.chdir(tmp_path)
    assert main(["run", "mq-latency", "--reps", "3", "-o", "r", "--no-report", "--quiet",
                 "--side", "x=", "--side", "y=--seed 2"]) == 0
    evil = tmp_path / "evil"
    evil.write_text(f"#!/bin/sh\ntouch {tmp_path}/PWNED\nexec {fake_engine} \"$@\"\n")
    evil.chmod(0o755)
    for name in ("r.x.json", "r.y.json"):
        res = json.load(open(name))
        res["cells"][0]["samples"] = res["cells"][0]["samples"][:1]
        res["complete"] = False
        res["pair"]["sides"][0]["engine"] = str(evil)
        res["pair"]["sides"][0]["engine_sha256"] = proc.sha256_file(str(evil))
        json.dump(res, open(name, "w"))
    capsys.readouterr()
    assert main(["run", "--resume", "r.y.json", "--quiet", "--no-report"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "--side x=ENGINE" in err, err
    assert not (tmp_path / "PWNED").exists()
    for bad in (["--side", "z=/bin/true"], ["--side", "x=--seed 3"]):
        assert main(["run", "--resume", "r.y.json", "--quiet", "--no-report", *bad]) == 2
        err = capsys.readouterr().err
        assert one_line(err) and "names a side's engine only" in err, err
    # Named on the command line, it is the user's choice, and it runs.
    assert main(["run", "--resume", "r.y.json", "--quiet", "--no-report",
                 "--side", f"x={evil}"]) == 0
    assert (tmp_path / "PWNED").exists()
