# SPDX-License-Identifier: MIT
"""Issue 30: nothing replaced, nothing lost, nothing escapes. Bad paths, signals and absurd
input each get one line and an exit status, and no file is lost or replaced."""
import os
import stat

import pytest

from conftest import fixture

from ipclab import proc, results
from ipclab.cli import main

QUICK = ["run", "pipe-context", "--reps", "1", "--warmups", "0", "--quiet", "--no-report"]


def one_line(err):
    return err.count("\n") == 1 and "Traceback" not in err


# ---- 1. -o never replaces what is not a regular file ---------------------------------------


def _make(kind, path, tmp_path):
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        os.mkdir(path)
    else:
        target = tmp_path / "target.json"
        target.write_text("mine\n")
        os.symlink(target, path)


@pytest.mark.parametrize("kind,test", [("fifo", stat.S_ISFIFO), ("dir", stat.S_ISDIR),
                                       ("symlink", stat.S_ISLNK)])
def test_output_never_replaces_what_is_not_a_regular_file(kind, test, fake_engine, tmp_path,
                                                          monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _make(kind, tmp_path / "out", tmp_path)
    assert main(QUICK + ["-o", "out"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "out: is a" in err
    assert test(os.lstat(tmp_path / "out").st_mode)
    # nothing half-written is left beside it either
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_atomic_write_refuses_a_fifo(tmp_path):
    os.mkfifo(tmp_path / "f")
    with pytest.raises(Exception, match="FIFO"):
        proc.write_text_atomic(tmp_path / "f", "x")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "f").st_mode)


def test_output_errors_name_the_output_not_a_temp_file(fake_engine, tmp_path, monkeypatch,
                                                       capsys):
    monkeypatch.chdir(tmp_path)
    # A long name the file system takes, which left no room for the temp file's name.
    fine = "r" * 245 + ".json"
    assert main(QUICK + ["-o", fine]) == 0
    assert results.load(fine)["complete"]
    capsys.readouterr()
    too_long = "r" * 260 + ".json"
    assert main(QUICK + ["-o", too_long]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and ".tmp" not in err and too_long in err


# ---- 2. a run is never replaced silently ---------------------------------------------------


def test_a_complete_run_is_not_overwritten(fake_engine, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(QUICK + ["-o", "c3.json"]) == 0
    before = (tmp_path / "c3.json").read_text()
    capsys.readouterr()
    assert main(QUICK + ["-o", "c3.json"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "complete run" in err and "--force" in err
    assert (tmp_path / "c3.json").read_text() == before
    assert main(QUICK + ["-o", "c3.json", "--force"]) == 0
    assert results.load("c3.json")["complete"]


def test_an_interrupted_run_is_not_overwritten(fake_engine, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(QUICK + ["-o", "i.json"]) == 0
    res = results.load("i.json")
    res["complete"] = False
    res["cells"][0]["samples"] = []
    res["cells"][0]["status"] = "pending"
    results.save(res, "i.json")
    before = (tmp_path / "i.json").read_text()
    capsys.readouterr()
    assert main(QUICK + ["-o", "i.json"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "interrupted run" in err and "--resume i.json" in err
    assert (tmp_path / "i.json").read_text() == before
    # nor a file that is not a results file
    (tmp_path / "notes.txt").write_text("mine\n")
    assert main(QUICK + ["-o", "notes.txt"]) == 2
    assert (tmp_path / "notes.txt").read_text() == "mine\n"
    # nor by a resume told to write elsewhere
    assert main(["run", "--resume", "i.json", "-o", "notes.txt", "--quiet", "--no-report"]) == 2
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


# ---- 3. a results id never escapes its folder ----------------------------------------------


@pytest.mark.parametrize("field,value", [("id", "../../../tmp/evil"), ("id", ".."),
                                         ("id", "a/b"), ("pair", "../x.json")])
def test_a_results_id_is_one_plain_name(field, value, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    res = results.load(fixture("base.json"))
    if field == "pair":
        res["pair"] = {"id": "p", "side": "a", "sides": [], "files": [value, "p.b.json"]}
    else:
        res["id"] = value
    (tmp_path / "deep" / "er").mkdir(parents=True)
    path = tmp_path / "deep" / "er" / "evil.json"
    results.save(res, path)
    before = set(tmp_path.rglob("*"))
    for argv in (["report", str(path)], ["show", str(path)],
                 ["compare", fixture("base.json"), str(path)]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert one_line(err) and "not a plain name" in err
    assert set(tmp_path.rglob("*")) == before


# ---- 5. --resume takes no option it would ignore -------------------------------------------


def _interrupted(path):
    res = results.load(path)
    res["complete"] = False
    res["cells"][0]["samples"] = []
    res["cells"][0]["status"] = "pending"
    results.save(res, path)


@pytest.mark.parametrize("extra", [["--reps", "5"], ["--warmups", "2"], ["--full"],
                                   ["--quick"], ["seeds"], ["--order-seed", "3"],
                                   ["--cell", "pipe"], ["--side", "a=", "--side", "b="],
                                   ["--profile", "p.json"], ["--force"], ["--", "--copies", "2"]])
def test_resume_refuses_what_it_would_ignore(extra, fake_engine, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(QUICK + ["-o", "r.json"]) == 0
    _interrupted("r.json")
    before = (tmp_path / "r.json").read_text()
    capsys.readouterr()
    assert main(["run", "--resume", "r.json", "--quiet", "--no-report"] + extra) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "drop" in err
    assert (tmp_path / "r.json").read_text() == before
    # what it does take: --meta, --quiet, --no-report
    assert main(["run", "--resume", "r.json", "--quiet", "--no-report", "--meta", "k=v"]) == 0
    assert results.load("r.json")["complete"]


def test_resume_of_a_complete_run_says_so(fake_engine, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(QUICK + ["-o", "r.json"]) == 0
    before = (tmp_path / "r.json").read_text()
    capsys.readouterr()
    assert main(["run", "--resume", "r.json", "--quiet", "--no-report"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "already complete" in err
    assert (tmp_path / "r.json").read_text() == before
