"""Issue 42, the report's side: `report -o DIR` loses none of the user's files, plots are
written like every other file (never through a link, never half), and a full disk leaves
no empty plot behind."""

import builtins
import errno
import io
import json
import subprocess
import sys

import pytest

from conftest import ROOT, fixture

from ipclab.cli import main

QUICK = ["run", "pipe-context", "--reps", "1", "--warmups", "0", "--quiet", "--no-report"]


def _one_line(err):
    return err.count("\n") == 1 and "Traceback" not in err


# ---- 2. a folder of the user's is not a report folder -------------------------------------


def test_report_refuses_a_folder_with_files_but_no_report_of_ours(tmp_path, capsys):
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "notes.txt").write_text("mine\n")
    assert main(["report", fixture("base.json"), "-o", str(rep)]) == 2
    err = capsys.readouterr().err
    assert _one_line(err) and "--force" in err
    assert sorted(p.name for p in rep.iterdir()) == ["notes.txt"]
    # asked to, it writes beside them
    assert main(["report", fixture("base.json"), "-o", str(rep), "--force"]) == 0
    assert (rep / "notes.txt").read_text() == "mine\n" and (rep / "report.md").exists()


def test_report_keeps_the_plots_a_foreign_report_md_links(tmp_path, capsys):
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "report.md").write_text("# my notes\n\n![a plot of mine](mine.png)\n")
    (rep / "mine.png").write_bytes(b"mine")
    assert main(["report", fixture("base.json"), "-o", str(rep)]) == 2
    assert (rep / "report.md").read_text().startswith("# my notes")
    assert main(["report", fixture("base.json"), "-o", str(rep), "--force"]) == 0
    assert (rep / "mine.png").read_bytes() == b"mine"


def test_a_report_into_its_own_old_folder_drops_only_its_old_plots(tmp_path):
    rep = tmp_path / "rep"
    assert main(["report", fixture("base.json"), fixture("new.json"), "-o", str(rep)]) == 0
    before = {p.name for p in rep.glob("*.png")}
    (rep / "mine.png").write_bytes(b"mine")
    assert main(["report", fixture("base.json"), "-o", str(rep)]) == 0
    after = {p.name for p in rep.glob("*.png")}
    shown = (rep / "report.md").read_text()
    assert after - {"mine.png"} < before      # the comparison's plot is gone
    assert all(name in shown for name in after - {"mine.png"})
    assert (rep / "mine.png").read_bytes() == b"mine"


# ---- 3. a plot is never written through a link --------------------------------------------


def test_a_plot_never_follows_a_symlink(tmp_path, capsys):
    rep = tmp_path / "rep"
    assert main(["report", fixture("base.json"), "-o", str(rep)]) == 0
    png = sorted(rep.glob("*.png"))[0]
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    png.unlink()
    png.symlink_to(victim)
    assert main(["report", fixture("base.json"), "-o", str(rep)]) == 2
    assert _one_line(capsys.readouterr().err)
    assert victim.read_text() == "precious\n" and png.is_symlink()


# ---- Low: a full disk leaves no empty plot ------------------------------------------------


def test_a_full_disk_leaves_no_empty_plot(tmp_path, monkeypatch, capsys):
    rep = tmp_path / "rep"
    assert main(["report", fixture("base.json"), "-o", str(rep)]) == 0
    old = {p.name: p.read_bytes() for p in rep.iterdir()}
    real_open = builtins.open

    class Full:
        def __init__(self, f):
            self.f = f

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def opener(file, mode="r", *args, **kwargs):
        f = real_open(file, mode, *args, **kwargs)
        # the safe write opens its temp file by descriptor (O_EXCL|O_NOFOLLOW)
        if "w" in mode and "b" in mode and (isinstance(file, int) or str(rep) in str(file)):
            return Full(f)
        return f
    monkeypatch.setattr(builtins, "open", opener)
    rc = main(["report", fixture("base.json"), "-o", str(rep)])
    monkeypatch.undo()
    assert rc == 2 and _one_line(capsys.readouterr().err)
    # the earlier report stays whole: no plot cut to 0 bytes, no temp file left
    assert {p.name: p.read_bytes() for p in rep.iterdir()} == old


def test_a_bisect_log_is_not_written_through_a_link(tmp_path):
    from ipclab import Error
    from ipclab.lab import bisect as b
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / b.LOG_NAME).symlink_to(victim)
    from ipclab.lab import vm
    p = b.Params("/tree", "a" * 40, "b" * 40, "seed-skip-wakeups", "pipe-throughput", None,
                 vm.DETERMINISTIC, 2)
    with pytest.raises(Error):
        b.BisectLog(tmp_path / b.LOG_NAME).start(p)
    assert victim.read_text() == "precious\n"


# ---- 15. outside the virtualenv -----------------------------------------------------------


def test_outside_the_virtualenv_one_line_points_to_make_deps(tmp_path):
    # -S: no site-packages, so numpy and the rest are missing as in a bare python3
    p = subprocess.run([sys.executable, "-S", "-m", "ipclab", "show", fixture("base.json")],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert _one_line(p.stderr) and "make deps" in p.stderr


# ---- 16. no interval for a peer from too few values ---------------------------------------


def test_a_peer_interval_needs_the_documented_n(tmp_path, capsys):
    from test_peers import peers_run

    from ipclab import results, stats
    for n, shown in ((stats.MIN_REPS - 1, False), (stats.MIN_REPS, True)):
        p = tmp_path / f"p{n}.json"
        results.save(peers_run(n=n), p)
        assert main(["show", str(p), "--json"]) == 0
        (pair,) = json.loads(capsys.readouterr().out)["pairs"]
        assert (pair["ci"][0] is not None) == shown, (n, pair["ci"])
    assert main(["show", str(tmp_path / f"p{stats.MIN_REPS - 1}.json")]) == 0
    line = [l for l in capsys.readouterr().out.splitlines() if "perf-sched-pipe" in l][0]
    assert "[" not in line.split("0.800")[-1]


# ---- Low: what the compare output and the options say -------------------------------------


def test_min_change_says_it_is_a_percentage(capsys):
    assert main(["compare", fixture("base.json"), fixture("new.json"), "--min-change",
                 "100"]) == 2
    err = capsys.readouterr().err
    assert "percentage" in err and "2%" in err


def test_no_primaries_prints_no_alpha_over_zero():
    import dataclasses

    from ipclab import compare, results
    from ipclab.report.compare import render_compare
    outcome = compare.compare_results(results.load(fixture("base.json")),
                                      results.load(fixture("new.json")))
    buf = io.StringIO()
    render_compare(dataclasses.replace(outcome, family=0), buf)
    assert "/0" not in buf.getvalue()


# ---- 14. compare says what the two files are ----------------------------------------------


def test_compare_warns_of_another_cpu_kernel_or_accel(tmp_path, capsys):
    from ipclab import results
    new = results.load(fixture("new.json"))
    new["env"].update(cpu="Intel Xeon", kernel="6.6.1")
    new["meta"]["accel"] = "kvm"
    p = tmp_path / "other.json"
    results.save(new, p)
    assert main(["compare", fixture("base.json"), str(p)]) == 0
    out = capsys.readouterr().out
    assert "different machines or kernels" in out
    assert all(x in out for x in ("AMD EPYC vs Intel Xeon", "6.12.117 vs 6.6.1",
                                  "native vs kvm"))
    assert main(["compare", fixture("base.json"), fixture("new.json")]) == 0
    assert "different machines" not in capsys.readouterr().out


def test_compare_of_a_file_with_itself_says_so(capsys):
    assert main(["compare", fixture("base.json"), fixture("base.json")]) == 0
    out = capsys.readouterr().out
    assert "same run" in out and "the two files are separate runs" not in out


# ---- Low: the compare plot's title and its words -------------------------------------------


def test_the_compare_plot_title_fits_and_its_intervals_say_bonferroni(tmp_path, monkeypatch):
    from ipclab import compare, results
    from ipclab.report import plot
    base, new = results.load(fixture("base.json")), results.load(fixture("new.json"))
    base["id"], new["id"] = "b" * 90, "n" * 90
    outcome = compare.compare_results(base, new)
    kept = {}

    def keep(fig, out_dir, name):
        fig.tight_layout()
        kept["fig"] = fig
        return name
    monkeypatch.setattr(plot, "_save", keep)
    assert plot.compare_plot(outcome, tmp_path)
    fig = kept["fig"]
    ax = fig.axes[0]
    box = ax.title.get_window_extent(fig.canvas.get_renderer())
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width, (box, fig.bbox)
    # the primaries' intervals are Bonferroni-wide (docs/statistics.md); Holm is the p's
    assert "Bonferroni" in ax.get_xlabel() and "Holm" not in ax.get_xlabel()
