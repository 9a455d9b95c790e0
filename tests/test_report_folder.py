# SPDX-License-Identifier: MIT
"""Issue 42, the report side: `report -o DIR` keeps every file ipclab did not write, and a
plot never follows a link (one line, exit 2, no file touched)."""
import os
import shutil

from conftest import fixture

from ipclab.cli import main


def one_line(err):
    err = "".join(l + "\n" for l in err.splitlines() if not l.startswith("warning: "))
    return err.count("\n") == 1 and "Traceback" not in err


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
