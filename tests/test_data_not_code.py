# SPDX-License-Identifier: MIT
"""Issue 42: a results file is data, never code; no file of the user's is lost. Each case
is refused with one line on stderr and exit 2, with no file touched."""
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import FAKE_ENGINE, fixture  # noqa: F401 (fake_engine fixture sets IPCBENCH to it)

from ipclab import peers
from ipclab.cli import main


def one_line(err):
    err = "".join(l + "\n" for l in err.splitlines() if not l.startswith("warning: "))
    return err.count("\n") == 1 and "Traceback" not in err


def _interrupted(path, cells=None):
    """Make the run at `path` look interrupted: its first cell loses its last sample."""
    res = json.load(open(path))
    if cells:
        res["cells"] = cells(res["cells"])
    res["cells"][0]["samples"] = res["cells"][0]["samples"][:-1]
    res["complete"] = False
    json.dump(res, open(path, "w"))
    return res


# ---- 1. resume runs only what this checkout's suites and the command line define --------


def _peers_run(tmp_path, monkeypatch):
    # The peer programs are not installed here: their cells are skipped, ours run.
    monkeypatch.setattr(peers.shutil, "which", lambda name: None)
    assert main(["run", "peers", "--reps", "2", "--warmups", "0", "-o", "p.json", "--quiet",
                 "--no-report"]) == 0


def _hostile_peer(cells):
    for c in cells:
        if peers.is_peer(c):
            c["args"] = ["sh", "-c", "touch PWNED"]
            c["status"], c["error"] = "ok", ""
    return cells


@pytest.mark.parametrize("edit", [
    _hostile_peer,
    # an engine cell whose workload is a known one but whose key is not the suite's
    lambda cells: [dict(c, key=c["key"] + "x") for c in cells],
    # the engine's arguments edited
    lambda cells: [dict(c, args=["--copies", "9"]) if not peers.is_peer(c) else c
                   for c in cells],
])
def test_resume_runs_only_what_the_suites_define(edit, fake_engine, tmp_path, monkeypatch,
                                                   capsys):
    monkeypatch.chdir(tmp_path)
    _peers_run(tmp_path, monkeypatch)
    monkeypatch.setattr(peers.shutil, "which", lambda name: "/bin/" + name)
    _interrupted("p.json", edit)
    before = open("p.json").read()
    capsys.readouterr()
    assert main(["run", "--resume", "p.json", "--quiet", "--no-report"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "p.json" in err, err
    assert not os.path.exists("PWNED")
    assert open("p.json").read() == before


def test_a_pair_resumes_only_the_engines_the_command_line_names(fake_engine, tmp_path,
                                                                 monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    evil = tmp_path / "evil"
    evil.write_text("#!/bin/sh\ntouch PWNED\nexec %s \"$@\"\n" % FAKE_ENGINE)
    evil.chmod(0o755)
    assert main(["run", "mq-latency", "--reps", "2", "-o", "r", "--no-report", "--quiet",
                 "--side", "x=", "--side", "y="]) == 0
    os.remove("PWNED") if os.path.exists("PWNED") else None
    from ipclab import proc
    for name in ("r.x.json", "r.y.json"):
        res = _interrupted(name)
        for s in res["pair"]["sides"]:
            s["engine"], s["engine_sha256"] = str(evil), proc.sha256_file(str(evil))
        res["pair"]["sides"] = res["pair"]["sides"]
        json.dump(res, open(name, "w"))
    before = open("r.y.json").read()
    capsys.readouterr()
    assert main(["run", "--resume", "r.y.json", "--quiet", "--no-report"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "--side" in err, err
    assert not os.path.exists("PWNED")
    assert open("r.y.json").read() == before
    # Named on the command line, the same engines resume.
    assert main(["run", "--resume", "r.y.json", "--quiet", "--no-report",
                 "--side", f"x={evil}", "--side", f"y={evil}"]) == 0
    assert os.path.exists("PWNED")


# ---- 2. report -o DIR replaces only ipclab's own report ----------------------------------

QUICK = ["run", "pipe-context", "--reps", "1", "--warmups", "0", "--quiet", "--no-report"]


def test_report_refuses_a_folder_that_holds_no_report_of_ours(fake_engine, tmp_path,
                                                               monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(QUICK + ["-o", "r.json"]) == 0
    rep = tmp_path / "rep"
    rep.mkdir()
    # the user's own notes and the picture they link to
    (rep / "report.md").write_text("# my notes\n\n![a photo](photo.png)\n")
    (rep / "photo.png").write_bytes(b"photo")
    capsys.readouterr()
    assert main(["report", "r.json", "-o", str(rep)]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "--force" in err, err
    assert (rep / "report.md").read_text() == "# my notes\n\n![a photo](photo.png)\n"
    assert sorted(p.name for p in rep.iterdir()) == ["photo.png", "report.md"]
    # --force replaces report.md, and still deletes no file ipclab did not write
    assert main(["report", "r.json", "-o", str(rep), "--force"]) == 0
    assert (rep / "photo.png").read_bytes() == b"photo"
    assert "ipclab report" in (rep / "report.md").read_text()
    # the folder now holds ipclab's report: a new report replaces it without --force
    assert main(["report", "r.json", "-o", str(rep)]) == 0
    assert (rep / "photo.png").read_bytes() == b"photo"


# ---- 3. plots never follow a link ---------------------------------------------------------


def test_a_plot_never_follows_a_symlink(fake_engine, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copy(fixture("base.json"), "r.json")
    assert main(["report", "r.json", "-o", "first"]) == 0
    plots = [p.name for p in (tmp_path / "first").iterdir() if p.suffix == ".png"]
    assert plots
    rep = tmp_path / "rep"
    rep.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.symlink(victim, rep / plots[0])
    capsys.readouterr()
    rc = main(["report", "r.json", "-o", str(rep), "--force"])
    err = capsys.readouterr().err
    assert victim.read_text() == "precious\n"
    assert rc == 2 and one_line(err) and "symbolic link" in err, err


# ---- 4. an empty side runs the default engine, whatever the order ------------------------


@pytest.mark.parametrize("order", ["engine first", "empty first"])
def test_an_empty_side_runs_the_default_engine(order, fake_engine, tmp_path, monkeypatch,
                                               capsys):
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "other-ipcbench"
    shutil.copy(FAKE_ENGINE, other)
    sides = [f"old={other}", "new="]
    if order == "empty first":
        sides.reverse()
    argv = ["run", "mq-latency", "--reps", "2", "--quiet", "--no-report", "-o", "r"]
    for s in sides:
        argv += ["--side", s]
    assert main(argv + ["--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(l.startswith(f"old: {other} ") for l in lines), lines
    assert any(l.startswith(f"new: {FAKE_ENGINE} ") for l in lines), lines
    monkeypatch.setenv("IPCBENCH", FAKE_ENGINE)     # as a new process starts
    assert main(argv) == 0
    engines = {s["name"]: s["engine"] for s in json.load(open("r.new.json"))["pair"]["sides"]}
    assert engines == {"old": str(other.resolve()), "new": str(Path(FAKE_ENGINE).resolve())}


# ---- 5. one cell key, one cell ------------------------------------------------------------


def test_duplicate_cell_keys_are_refused(tmp_path, capsys):
    res = json.load(open(fixture("base.json")))
    res["cells"].append(dict(res["cells"][0]))
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(res))
    for argv in (["show", str(path)], ["report", str(path), "-o", str(tmp_path / "rep")]):
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert one_line(err) and "twice" in err and res["cells"][0]["key"] in err, err
    assert not (tmp_path / "rep").exists()


# ---- 7. resume validates the plan as a new run does ---------------------------------------


def _edited(name, change):
    res = json.load(open(name))
    change(res)
    json.dump(res, open(name, "w"))


def test_resume_keeps_the_cap_on_planned_runs(fake_engine, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(QUICK + ["-o", "r.json"]) == 0
    _interrupted("r.json")
    _edited("r.json", lambda r: r["plan"].update(reps=10 ** 9))
    before = open("r.json").read()
    capsys.readouterr()
    assert main(["run", "--resume", "r.json", "--quiet", "--no-report"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "at most" in err, err
    assert open("r.json").read() == before


def test_a_one_engine_resume_checks_the_engine(fake_engine, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(QUICK + ["-o", "r.json"]) == 0
    _interrupted("r.json")
    rebuilt = tmp_path / "ipcbench"
    rebuilt.write_text(open(FAKE_ENGINE).read() + "# rebuilt\n")
    rebuilt.chmod(0o755)
    before = open("r.json").read()
    capsys.readouterr()
    assert main(["run", "--resume", "r.json", "--quiet", "--no-report", "--engine",
                 str(rebuilt)]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "not the engine" in err, err
    assert open("r.json").read() == before
    # the engine it started with carries on
    assert main(["run", "--resume", "r.json", "--quiet", "--no-report"]) == 0


# ---- 8. census --dry-run prints its plan and exits 0 --------------------------------------


def test_census_dry_run_exits_0(capsys):
    rc = main(["census", "mainline", "--dry-run"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "make" in out + err
