# SPDX-License-Identifier: MIT
"""Issue 30: nothing replaced, nothing lost, nothing escapes. Bad paths, signals and absurd
input each get one line and an exit status, and no file is lost or replaced."""
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time

import conftest
import pytest
from conftest import FAKE_ENGINE, ROOT, fixture, sigint_default

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


# ---- 7. SIGTERM is handled as Ctrl-C is; an interrupt while starting is one line -------------


def _engines_of(mark, but=None):
    """Live processes whose environment carries `mark`, but ipclab's own: the engines one
    test started."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == but:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if mark.encode() in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def _engines_gone(mark, wait_s=10.0):
    """The engines still alive after at most `wait_s`: a process sent SIGKILL is dead at once
    but, on a loaded host, may take a moment to leave /proc; an engine that was never killed
    is still there when the wait ends (idle, they are gone within a poll or two)."""
    deadline = time.monotonic() + wait_s
    while (left := _engines_of(mark)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _start(argv, tmp_path, **env):
    return subprocess.Popen([sys.executable, "-m", "ipclab"] + argv, cwd=str(tmp_path),
                            env=dict(os.environ, PYTHONPATH=ROOT, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_default)


def test_sigterm_saves_kills_the_engine_and_exits_143(tmp_path):
    mark = f"IPCLAB_TEST_MARK={tmp_path}"
    p = _start(["run", "seed-skip-wakeups", "--reps", "2", "-o", "r.json", "--no-report",
                "--order-seed", "1", "--quiet"], tmp_path, IPCBENCH=FAKE_ENGINE,
               FAKE_HANG="pipe-context", IPCLAB_TEST_MARK=str(tmp_path))
    path = tmp_path / "r.json"
    deadline = time.monotonic() + 60
    # Stuck in the hanging workload, with a sample saved before it.
    while time.monotonic() < deadline and not (
            path.exists() and _engines_of(mark, p.pid) and
            sum(len(c["samples"]) for c in results.load(str(path))["cells"]) >= 1):
        time.sleep(0.2)
    try:
        assert _engines_of(mark, p.pid), "the hanging engine never started"
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        left = _engines_gone(mark)
    finally:
        for pid in _engines_of(mark):     # whatever a failure left, not another test's
            os.kill(pid, signal.SIGKILL)
    assert p.returncode == 143, err
    err = "".join(line + "\n" for line in err.splitlines() if not line.startswith("warning: "))
    assert one_line(err) and "terminated" in err and "--resume r.json" in err
    kept = results.load(str(path))
    assert not kept["complete"] and sum(len(c["samples"]) for c in kept["cells"]) >= 1
    assert left == []


# Ctrl-C arrives while the command line's modules load (a second or so): the interrupt is
# sent from the import of ipclab.cli, so the test does not race the interpreter's start.
INTERRUPT_WHILE_LOADING = """
import builtins, os, runpy, signal, sys
real_import = builtins.__import__
def hook(name, *args, **kwargs):
    if name == "ipclab.cli":
        os.kill(os.getpid(), signal.SIGINT)
    return real_import(name, *args, **kwargs)
builtins.__import__ = hook
sys.argv = ["ipclab", "suites"]
runpy.run_module("ipclab", run_name="__main__")
"""


def test_ctrl_c_while_starting_is_one_line_and_130(tmp_path, session_sigint):
    p = subprocess.run([sys.executable, "-c", INTERRUPT_WHILE_LOADING], cwd=str(tmp_path),
                       env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True,
                       timeout=120, preexec_fn=sigint_default)
    assert p.returncode == 130 and p.stderr == "ipclab: interrupted\n", p.stderr
    assert p.stdout == ""


# ---- 6. an absurd plan is refused before it takes memory ----------------------------------


@pytest.mark.parametrize("extra", [["--reps", "100000000"], ["--warmups", "100000000"],
                                   ["--reps", "1000", "--side", "a=--copies 1", "--side", "b=--copies 2"]])
def test_an_absurd_plan_is_refused_with_its_time_and_memory(extra, fake_engine, tmp_path,
                                                            monkeypatch, capsys):
    import resource
    monkeypatch.chdir(tmp_path)
    # The refusal must come before the plan is built: 10**8 slots took 14.5 GiB. Memory is
    # capped here so that a regression fails (MemoryError) instead of swapping the machine.
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, hard))
    try:
        rc = main(["run", "seeds", "--quiet", "--no-report", "-o", "r.json"] + extra)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    err = capsys.readouterr().err
    assert rc == 2 and one_line(err), err
    assert "GiB" in err and "engine runs" in err
    assert not os.path.exists("r.json")
    # a dry run says the same
    assert main(["run", "seeds", "--dry-run"] + extra) == 2


# ---- 8. bisect checks its metric before anything is built ---------------------------------


def _git_tree(tmp_path):
    return conftest.small_git_tree(tmp_path)


@pytest.mark.parametrize("metric,want", [
    ("pipe", "several cells match"),
    ("pipe-throughput/copies=1:metrics.nosuch", "samples have no metrics.nosuch"),
    ("pipe-throughput/copies=1:loops", "'loops' is not metrics.NAME"),
    ("pipe-throughput/copies=1:metrics.loops_per_s * x", "'x' is not a number"),
])
def test_bisect_refuses_an_ambiguous_or_bad_metric_before_building(metric, want, fake_engine,
                                                                   tmp_path, monkeypatch,
                                                                   capsys):
    from ipclab.lab import kernel
    built = []
    monkeypatch.setattr(kernel, "obtain", lambda *a, **k: built.append(a))
    tree = _git_tree(tmp_path)
    for mode in (["--dry-run"], ["--dry-run", "--timed"]):
        rc = main(["bisect", "--tree", str(tree), "HEAD~1", "HEAD", "--suite",
                   "seed-skip-wakeups", "--metric", metric, "-o", str(tmp_path / "o")] + mode)
        err = capsys.readouterr().err
        assert rc == 2 and one_line(err) and want in err, err
    assert built == [] and not (tmp_path / "o").exists()
    # what the probe takes: a path the cell's samples have, or what only a guest counts
    from ipclab.lab import bisect, vm
    bisect.check_metric("seed-skip-wakeups", "pipe-throughput/copies=1:metrics.loops_per_s",
                        vm.DETERMINISTIC)
    bisect.check_metric("seed-skip-wakeups", "pipe-throughput/copies=1:cost.atomics",
                        vm.DETERMINISTIC)


def test_bisect_takes_the_deterministic_its_help_offers(tmp_path, capsys):
    from ipclab.cli.parser import build_parser
    args = build_parser().parse_args(["bisect", "--deterministic", "--cost"])
    assert args.deterministic and not args.timed
    assert main(["bisect", "--deterministic", "--timed"]) == 2
    assert "not allowed with" in capsys.readouterr().err


# ---- 4. --tree is checked, never ignored --------------------------------------------------


def test_a_tree_that_is_not_a_kernel_git_tree_is_refused(tmp_path, monkeypatch, capsys):
    from ipclab.lab import kernel
    built = []
    monkeypatch.setattr(kernel, "obtain", lambda *a, **k: built.append(a))
    plain = tmp_path / "plain"
    (plain / "kernel").mkdir(parents=True)
    (plain / "Makefile").write_text("VERSION = 6\n")
    not_kernel = _git_tree(tmp_path)            # a git tree with a Makefile, no kernel/
    cases = [("/nonexistent", "no such directory"), (str(plain), "not the top of a git tree"),
             (str(not_kernel), "not a kernel tree")]
    for tree, want in cases:
        for argv in (["kernel", "build", "mainline", "--dry-run"],
                     ["kernel", "build", "HEAD", "--dry-run"],
                     ["ab", "HEAD~1", "HEAD", "--dry-run"],
                     ["vm", "run", "HEAD", "seeds", "--dry-run"]):
            assert main(argv + ["--tree", tree]) == 2, (argv, tree)
            err = capsys.readouterr().err
            assert one_line(err) and want in err, (argv, err)
    # `kernel list` never used its --tree: it has none now
    assert main(["kernel", "list", "--tree", str(plain)]) == 2
    assert "unrecognized arguments: --tree" in capsys.readouterr().err
    assert built == []


# ---- 9. the smaller things ------------------------------------------------------------------


def test_reading_a_fifo_is_refused_not_a_hang(tmp_path, capsys):
    os.mkfifo(tmp_path / "f.json")
    for argv in (["show", str(tmp_path / "f.json")],
                 ["compare", fixture("base.json"), str(tmp_path / "f.json")],
                 ["report", str(tmp_path / "f.json"), "-o", str(tmp_path / "rep")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert one_line(err) and "is a FIFO" in err


def test_compare_of_a_file_without_samples_is_an_error(tmp_path, capsys):
    res = results.load(fixture("base.json"))
    for c in res["cells"]:
        c["samples"], c["status"] = [], "pending"
    results.save(res, tmp_path / "empty.json")
    assert main(["compare", fixture("base.json"), str(tmp_path / "empty.json")]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "no measured samples" in err


def test_report_does_not_advise_an_option_it_lacks(tmp_path, capsys):
    res = results.load(fixture("base.json"))
    res["cells"] = res["cells"][1:]
    results.save(res, tmp_path / "fewer.json")
    assert main(["report", fixture("base.json"), str(tmp_path / "fewer.json"),
                 "-o", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "do not match" in err and "--common" not in err


@pytest.mark.parametrize("item,want", [("accel=fake", "records accel itself"),
                                       ("=v", "the key is empty"), (" =v", "the key is empty")])
def test_meta_cannot_set_what_ipclab_records(item, want, fake_engine, tmp_path, monkeypatch,
                                             capsys):
    monkeypatch.chdir(tmp_path)
    assert main(QUICK + ["-o", "r.json", "--meta", item]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and want in err and not os.path.exists("r.json")


@pytest.mark.parametrize("value", [None, float("nan"), float("inf"), -1.0])
def test_a_metric_that_is_null_nan_or_negative_is_named(value, tmp_path, capsys):
    res = results.load(fixture("base.json"))
    cell = next(c for c in res["cells"] if c["samples"])
    name = next(iter(cell["samples"][0]["metrics"]))
    cell["samples"][0]["metrics"][name]["value"] = value
    results.save(res, tmp_path / "bad.json")
    assert main(["show", str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and f"metric {name!r}" in err


def test_quiet_keeps_the_warnings(fake_engine, tmp_path, monkeypatch, capsys):
    from ipclab import envinfo
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(envinfo, "warnings", lambda env: ["something to know"])
    assert main(QUICK + ["-o", "r.json"]) == 0
    assert capsys.readouterr().err == "warning: something to know\n"


def test_a_report_into_an_old_folder_drops_the_old_plots(fake_engine, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(QUICK + ["-o", "r.json"]) == 0
    rep = tmp_path / "rep"
    rep.mkdir()
    # an earlier report's folder: ipclab recorded old.png as its own; mine.png is the user's
    assert main(["report", "r.json", "-o", str(rep)]) == 0
    manifest = rep / ".ipclab-report.json"
    rec = json.loads(manifest.read_text())
    manifest.write_text(json.dumps(dict(rec, files=rec["files"] + ["old.png"])))
    (rep / "old.png").write_bytes(b"old")
    (rep / "mine.png").write_bytes(b"mine")
    assert main(["report", "r.json", "-o", str(rep)]) == 0
    assert not (rep / "old.png").exists() and (rep / "mine.png").read_bytes() == b"mine"
    assert "old.png" not in (rep / "report.md").read_text()


# ---- 10. the compare plot says what it draws ---------------------------------------------


def test_the_compare_plot_names_its_level_direction_and_scale(tmp_path, monkeypatch):
    import dataclasses

    from ipclab import compare
    from ipclab.report import plot
    outcome = compare.compare_results(results.load(fixture("base.json")),
                                      results.load(fixture("new.json")))
    rows = [r for r in outcome.rows if r.cmp.ci and r.cmp.ratio == r.cmp.ratio]
    assert len(rows) >= 3
    # one row's interval very wide, one row's missing
    rows[0].cmp = dataclasses.replace(rows[0].cmp, ci=(0.5, 11.0))
    rows[1].cmp = dataclasses.replace(rows[1].cmp, ci=(float("nan"), float("nan")))
    drawn = {}

    def keep(fig, out_dir, name):
        drawn["ax"] = fig.axes[0]
        return name
    monkeypatch.setattr(plot, "_save", keep)
    assert plot.compare_plot(outcome, tmp_path)
    ax = drawn["ax"]
    level = f"{outcome.level:.1%}".replace(".0%", "%")
    assert level != "95%" and level in ax.get_xlabel()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert all("is better)" in t for t in labels if "throughput" in t)
    # the wide interval (+1000%) does not set the scale; its bound is written at the edge
    assert ax.get_xlim()[1] < 1000
    assert any(t.get_text() == "+1000%" for t in ax.texts)
    # the row without an interval is marked so, not drawn as an exact tick
    assert any("no interval" in t.get_text() for t in ax.texts)


def test_an_absurd_guest_plan_is_refused_before_a_build(tmp_path, monkeypatch, capsys):
    from ipclab.lab import kernel
    built = []
    monkeypatch.setattr(kernel, "obtain", lambda *a, **k: built.append(a))
    for argv in (["ab", "mainline", "mainline", "--reps", "100000000", "--dry-run"],
                 ["vm", "run", "mainline", "seeds", "--reps", "100000000", "--dry-run"],
                 ["vm", "run", "mainline", "seeds", "--warmups", "-1", "--dry-run"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert one_line(err) and ("engine runs" in err or "--warmups" in err), err
    assert built == []
