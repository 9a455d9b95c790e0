# SPDX-License-Identifier: MIT
"""`ab --executor slurm` without a cluster: fake sbatch, squeue and scancel on PATH (they log
their argv; sbatch runs nothing, and writes the job's results and log when asked to), the job's
command line as the real parser reads it, results coming back, a job that left nothing,
Ctrl-C cancelling exactly the jobs submitted, and the choice's bad input. And the test
cluster (tests/slurm_cluster.py) failing with its daemon's own log line.
The real cluster and real boots: tests/kernel/test_lab_slurm.py (make test-slurm)."""

import _thread
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ipclab import Error, results, suites
from ipclab.cli.parser import build_parser
from ipclab.lab import ab, executor, slurm, vm

REPO = Path(__file__).resolve().parents[2]

FAKE_SBATCH = r'''#!/usr/bin/env python3
import json, os, shlex, sys
from pathlib import Path
d = Path(os.environ["FAKE_SLURM"])
with open(d / "calls", "a") as f:
    f.write(json.dumps(sys.argv) + "\n")
n = int((d / "next").read_text()) if (d / "next").exists() else 100
(d / "next").write_text(str(n + 1))
# the script: `exec COMMAND`, and for an array a here document of its table (one line)
head, _, table = sys.argv[sys.argv.index("--wrap") + 1].partition("\n")
cmd = shlex.split(head.split(" <<")[0])
if os.environ.get("FAKE_LOG"):
    Path(sys.argv[sys.argv.index("--output") + 1]).write_text(os.environ["FAKE_LOG"] + "\n")
# FAKE_RECORD: a file the job of a command with -o RECORD (census) writes there
if os.environ.get("FAKE_RECORD") and "-o" in cmd and "--record" not in cmd:
    Path(cmd[cmd.index("-o") + 1]).write_text(Path(os.environ["FAKE_RECORD"]).read_text())
# an array's tasks: the table's commands (slurm.Slurm.submit_array)
tasks = [t["argv"] for t in json.loads(table.split("\n")[0])] if "--array" in sys.argv \
    else [cmd]
# FAKE_WRITE=independent: a job behind a --dependency never runs (its build failed)
for task in tasks:
    if os.environ.get("FAKE_WRITE") and "--record" in task and not (
            os.environ["FAKE_WRITE"] == "independent" and "--dependency" in sys.argv):
        out, rec = task[task.index("-o") + 1], task[task.index("--record") + 1]
        Path(out).write_text((d / "results.json").read_text())
        Path(rec).write_text((d / "record.json").read_text())
print(f"{n};cluster")
'''
FAKE_SQUEUE = r'''#!/usr/bin/env python3
import json, os, sys
from pathlib import Path
d = Path(os.environ["FAKE_SLURM"])
with open(d / "calls", "a") as f:
    f.write(json.dumps(sys.argv) + "\n")
# FAKE_STATES: a JSON list, one entry per squeue call (the last one repeats), each a map of
# job id to "STATE REASON"; else every job is FAKE_STATE.
script = json.loads(os.environ.get("FAKE_STATES", "null"))
if script:
    poll = int((d / "poll").read_text()) if (d / "poll").exists() else 0
    (d / "poll").write_text(str(poll + 1))
    now = script[min(poll, len(script) - 1)]
for job in sys.argv[sys.argv.index("--jobs") + 1].split(","):
    print(job, now[job] if script else os.environ.get("FAKE_STATE", "COMPLETED") + " None")
'''
FAKE_SCANCEL = r'''#!/usr/bin/env python3
import json, os, sys
from pathlib import Path
d = Path(os.environ["FAKE_SLURM"])
with open(d / "calls", "a") as f:
    f.write(json.dumps(sys.argv) + "\n")
'''

META = {"variant": "mainline-write-cost", "key": "0123456789abcdef0123", "release": "7.3.4",
        "patches": [{"name": "lab-write-cost.patch", "sha256": "ab"}], "source": "src"}
CELL = "pipe-throughput/copies=1"


@pytest.fixture
def fake(tmp_path, monkeypatch):
    d = tmp_path / "fake"
    bin_dir = d / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in (("sbatch", FAKE_SBATCH), ("squeue", FAKE_SQUEUE),
                       ("scancel", FAKE_SCANCEL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM", str(d))
    for v in ("FAKE_WRITE", "FAKE_LOG", "FAKE_RECORD"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.delenv("FAKE_STATE", raising=False)
    monkeypatch.delenv("FAKE_STATES", raising=False)
    monkeypatch.delenv(executor.ENV, raising=False)
    return d


def calls(d):
    p = d / "calls"
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


def opts(clock=vm.DETERMINISTIC, **kw):
    job = vm.SuiteJob("icount-check", suites.QUICK, 6, None, None, (CELL,))
    return executor.BootOpts("tcg", job, clock, **kw)


def here(o):
    """What ab gives the executor: here no local boot, its failed results, no report."""
    return executor.Here(lambda p: pytest.fail("booted locally"),
                         lambda p, b, run_id: ab.no_results(o.job, b, p.meta, run_id),
                         lambda b: None)


def run_boots(planned, o, poll_s=0.01):
    return slurm.Slurm(poll_s=poll_s).run_boots(planned, o, here(o))


def boots(tmp_path, n=2):
    out = tmp_path / "ab"
    out.mkdir(exist_ok=True)
    return [executor.SuiteBoot(f"boot 1/1 of {s}", {**META, "variant": f"v{s}"},
                               out / f"{s}-v{s}-boot1.json") for s in "AB"[:n]]


def wrapped(argv):
    """The command the job runs, as its shell splits --wrap's string (an array's: its first
    line, before the here document of its table)."""
    cmd = shlex.split(argv[argv.index("--wrap") + 1].split("\n")[0].split(" <<")[0])
    assert cmd[0] == "exec"
    return cmd[1:]


def task_commands(argv):
    """The commands of a job array's tasks (ipclab.lab.array_task's table), in order."""
    assert wrapped(argv)[1:] == ["-m", "ipclab.lab.array_task"]
    return [t["argv"] for t in json.loads(argv[argv.index("--wrap") + 1].split("\n")[1])]


def test_sbatch_argv_passes_slurms_options_and_runs_vm_run_of_this_checkout(tmp_path):
    s = slurm.Slurm(partition="lab", account="kernel", time_limit="1:00:00")
    b = boots(tmp_path)[0]
    argv = s.sbatch_argv(b, opts(cpus=1, thp="never", timeout=600))
    assert argv[:2] == ["sbatch", "--parsable"]
    flags = dict(zip(argv, argv[1:]))
    assert flags["--partition"] == "lab" and flags["--account"] == "kernel"
    assert flags["--time"] == "1:00:00" and flags["--chdir"] == str(REPO)
    # One single-threaded QEMU per deterministic boot: one core, shared node.
    assert flags["--cpus-per-task"] == "1" and "--exclusive" not in argv
    # The job boots locally: its ipclab must not submit again.
    assert flags["--export"] == "ALL,IPCLAB_EXECUTOR=local"
    cmd = wrapped(argv)
    assert cmd[:3] == [sys.executable, "-m", "ipclab"]
    a = build_parser().parse_args(cmd[3:])
    assert (a.vm_cmd, a.variant, a.suite, a.built) == ("run", "vA", "icount-check", META["key"])
    assert a.output == b.out.resolve() and a.deterministic and a.reps == 6
    assert a.cell == [CELL] and a.cpus == 1 and a.thp == "never" and a.timeout == 600
    assert a.record.parent == b.out.resolve().parent / "slurm" and not a.cost


def test_timed_boots_get_a_node_each_and_no_slurm_options_unless_given(tmp_path):
    argv = slurm.Slurm().sbatch_argv(boots(tmp_path)[0], opts(vm.TIMED, memory="cache"))
    assert "--exclusive" in argv
    assert argv[argv.index("--cpus-per-task") + 1] == str(vm.DEFAULT_CPUS)
    assert not {"--partition", "--account", "--time"} & set(argv)
    a = build_parser().parse_args(wrapped(argv)[3:])
    assert not a.deterministic and a.cost


def write_job_files(d, tmp_path):
    """What the fake job leaves: a tagged results file and its boot's record."""
    cell = suites.Cell(CELL, "pipe-throughput", [], suite="icount-check")
    res = results.new("r", "icount-check", "quick", [cell], 6, None, None,
                      meta={"variant": "vA", "kernel": "7.3.4"})
    res["cells"][0]["status"] = "ok"
    (d / "results.json").write_text(json.dumps(res))
    boot = vm.Boot("vA", "7.3.4", "tcg", tmp_path / "shared", True, 0, None, [], "",
                   {"boot_total_s": 50.0}, {"nproc": 1}, {"mode": "deterministic"})
    (d / "record.json").write_text(json.dumps(boot.record()))
    return res, boot


def test_results_come_back_where_a_local_boot_writes_them(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_WRITE", "1")
    res, boot = write_job_files(fake, tmp_path)
    planned = boots(tmp_path)
    done = run_boots(planned, opts())
    assert [r["cells"] for r, _ in done] == [res["cells"]] * 2
    assert [b.record() for _, b in done] == [boot.record()] * 2
    for b in planned:
        assert results.load(b.out)["cells"] == res["cells"]
    # One job array of both before the first wait: deterministic boots run side by side.
    names = [c[0].rsplit("/", 1)[-1] for c in calls(fake)]
    assert names[:2] == ["sbatch", "squeue"] and "scancel" not in names
    sbatch = calls(fake)[0]
    assert sbatch[sbatch.index("--array") + 1] == "0-1"
    assert [build_parser().parse_args(c[3:]).output for c in task_commands(sbatch)] == \
        [b.out.resolve() for b in planned]
    # The results directory holds what a local ab leaves; the job's files are in slurm/.
    assert sorted(p.name for p in planned[0].out.parent.iterdir()) == \
        ["A-vA-boot1.json", "B-vB-boot1.json", "slurm"]


def test_a_boots_path_that_is_no_regular_file_is_one_line_and_nothing_is_submitted(
        fake, tmp_path):
    planned = boots(tmp_path)
    planned[1].out.mkdir()      # where B's results go: a folder, never removed
    with pytest.raises(Error) as e:
        run_boots(planned, opts())
    assert "is a directory" in str(e.value) and "\n" not in str(e.value)
    assert calls(fake) == [] and planned[1].out.is_dir()


def test_timed_boots_are_submitted_one_after_another(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_WRITE", "1")
    write_job_files(fake, tmp_path)
    run_boots(boots(tmp_path), opts(vm.TIMED))
    names = [c[0].rsplit("/", 1)[-1] for c in calls(fake)]
    assert names == ["sbatch", "squeue", "sbatch", "squeue"]


def test_a_job_that_left_nothing_is_a_failed_boot_that_says_which_job(fake, tmp_path,
                                                                       monkeypatch):
    monkeypatch.setenv("FAKE_STATE", "TIMEOUT")
    planned = boots(tmp_path, 1)
    log = slurm.Slurm.files(planned[0])["log"]
    log.parent.mkdir(parents=True)
    log.write_text("slurmstepd: error: *** JOB 100 CANCELLED DUE TO TIME LIMIT ***\n")
    # An earlier run's files at the same paths are not this job's.
    write_job_files(fake, tmp_path)
    planned[0].out.write_text((fake / "results.json").read_text())
    slurm.Slurm.files(planned[0])["record"].write_text((fake / "record.json").read_text())
    [(res, b)] = run_boots(planned, opts())
    assert not b.ok and "slurm job 100_0 timeout" in b.reason and "TIME LIMIT" in b.reason
    [cell] = res["cells"]
    assert cell["status"] == "failed" and "slurm job 100_0 timeout" in cell["error"]
    assert results.load(planned[0].out)["cells"][0]["status"] == "failed"


def test_progress_says_what_the_jobs_do_and_each_boot_is_reported_as_it_ends(
        fake, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_WRITE", "1")
    write_job_files(fake, tmp_path)
    monkeypatch.setenv("FAKE_STATES", json.dumps([
        {"100_0": "PENDING Resources", "100_1": "PENDING Resources"},
        {"100_0": "RUNNING None", "100_1": "PENDING Priority"},
        {"100_0": "COMPLETED None", "100_1": "RUNNING None"},
        {"100_1": "COMPLETED None"}]))
    planned, o = boots(tmp_path), opts()
    events = []
    h = executor.Here(lambda p: pytest.fail("booted locally"),
                      lambda p, b, run_id: ab.no_results(o.job, b, p.meta, run_id),
                      lambda b: events.append("reported"))
    real_log = slurm.log
    monkeypatch.setattr(slurm, "log", lambda m: (events.append(m), real_log(m)))
    slurm.Slurm(poll_s=0.01).run_boots(planned, o, h)
    lines = [e for e in events if isinstance(e, str) and e.startswith("ab: slurm:")]
    assert [ln.split("; ETA")[0] for ln in lines[:3]] == ["ab: slurm: 2 pending (Resources), 0 running, 0 of 2 ended",
                         "ab: slurm: 1 pending (Priority), 1 running, 0 of 2 ended",
                         "ab: slurm: 0 pending, 1 running, 1 of 2 ended"]
    # A's boot is reported when its job ends, before B's job has ended
    assert events.index("reported") < events.index(lines[2]) and events.count("reported") == 2
    assert "ab: slurm:" in capsys.readouterr().err


def test_the_eta_comes_from_how_long_the_ended_jobs_ran():
    now = [0.0]
    w = slurm.Watch(4, clock=lambda: now[0])
    for j in ("1", "2"):
        w.saw(j, "RUNNING", "None")
    now[0] = 60.0
    w.ended("1")
    w.ended("2")
    for j in ("3", "4"):
        w.saw(j, "PENDING", "Resources")
    assert w.line(["3", "4"]).endswith("2 pending (Resources), 0 running, 2 of 4 ended; "
                                       "ETA ~2m00s")
    w.saw("3", "RUNNING", "None")
    w.saw("4", "RUNNING", "None")
    assert w.line(["3", "4"]).endswith("ETA ~1m00s")


def test_a_job_slurm_will_never_start_cancels_the_run_in_one_line(fake, tmp_path,
                                                                  monkeypatch):
    # if the run waited on instead, the jobs end after 50 polls and the test fails, not hangs
    monkeypatch.setenv("FAKE_STATES", json.dumps(
        [{"100_0": "PENDING Resources", "100_1": "PENDING PartitionTimeLimit"}] * 50
        + [{"100_0": "COMPLETED None", "100_1": "COMPLETED None"}]))
    with pytest.raises(Error) as e:
        run_boots(boots(tmp_path), opts())
    assert e.value.code == 2 and "\n" not in str(e.value)
    assert "slurm job 100_1 cannot start" in str(e.value) and "PartitionTimeLimit" in str(e.value)
    cancels = [c[1:] for c in calls(fake) if c[0].endswith("scancel")]
    assert cancels == [["100_0", "100_1"]]


def test_ctrl_c_cancels_the_jobs_it_submitted_and_nothing_else(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_STATE", "RUNNING")
    # interrupt_main() does nothing where SIGINT is ignored (make test as a background job,
    # CI): Python's own handler for the test's length. The watchdog ends the jobs if the
    # interrupt never lands, so that the test fails instead of polling forever.
    # The interrupt comes once both jobs are submitted and polled (the first squeue call),
    # not after a guessed delay: under load, a timer fired while sbatch still ran.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    stop = threading.Event()

    def ctrl_c_once_polled():
        while not stop.is_set():
            try:
                polled = any(c[0].endswith("squeue") for c in calls(fake))
            except ValueError:          # a line the fake is still writing
                polled = False
            if polled:
                _thread.interrupt_main()
                return
            stop.wait(0.02)
    watcher = threading.Thread(target=ctrl_c_once_polled)
    watchdog = threading.Timer(60.0, os.environ.__setitem__, ("FAKE_STATE", "COMPLETED"))
    watcher.start()
    watchdog.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_boots(boots(tmp_path), opts(), poll_s=0.05)
    finally:
        stop.set()
        watcher.join()
        watchdog.cancel()
        signal.signal(signal.SIGINT, before)
    cancels = [c[1:] for c in calls(fake) if c[0].endswith("scancel")]
    assert cancels == [["100_0", "100_1"]]


def test_the_choice_local_by_default_env_then_flag(monkeypatch, fake):
    assert executor.choose().name == "local"
    monkeypatch.setenv(executor.ENV, "slurm")
    assert executor.choose().name == "slurm"
    assert executor.choose("local").name == "local"
    with pytest.raises(Error) as e:
        executor.choose("local", partition="p")
    assert e.value.code == 2 and "--executor slurm" in str(e.value)
    monkeypatch.setenv(executor.ENV, "pbs")
    with pytest.raises(Error) as e:
        executor.choose()
    assert e.value.code == 2 and "IPCLAB_EXECUTOR pbs" in str(e.value)


def cli(*argv, env=None):
    return subprocess.run([sys.executable, "-m", "ipclab", *argv], cwd=REPO, text=True,
                          capture_output=True, timeout=120, env=env)


def test_bad_executor_input_is_one_line_and_exit_2(tmp_path):
    r = cli("ab", "mainline", "mainline-write-cost", "--executor", "kubernetes")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "unknown executor" in r.stderr
    # Slurm's commands missing: said before anything is built.
    env = {**os.environ, "PATH": str(tmp_path), "IPCLAB_EXECUTOR": "slurm"}
    r = cli("ab", "mainline", "mainline-write-cost", env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "sbatch, squeue, scancel not found" in r.stderr


def test_vm_run_built_names_a_build_the_cache_lacks_in_one_line(tmp_path):
    env = {**os.environ, "IPCLAB_CACHE": str(tmp_path / "cache")}
    r = cli("vm", "run", "mainline", "icount-check", "--built", "feedfacefeedfacefeed",
            "--deterministic", env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "--built feedfacefeedfacefeed: no such build" in r.stderr


def test_vm_run_boots_a_suite_as_a_job_and_nothing_else(fake, tmp_path, monkeypatch):
    for extra in (["icount-check", "--kmemleak"], ["--conformance"], ["--", "true"],
                  ["icount-check", "--fail-page-alloc", "1"]):
        r = cli("vm", "run", "mainline", "--executor", "slurm", *extra)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, (extra, r.stderr)
        assert "--executor slurm boots a SUITE as a job" in r.stderr
    assert calls(fake) == []
    # Slurm as the environment's default: those run here, and say so.
    r = cli("vm", "run", "mainline", "--dry-run", "--", "true",
            env={**os.environ, executor.ENV: "slurm"})
    assert r.returncode == 0 and "whatever IPCLAB_EXECUTOR says" in r.stderr, r.stderr
    assert calls(fake) == []
    # A SUITE: one job, whose results and boot record are what `vm run` reports.
    monkeypatch.setenv("FAKE_WRITE", "1")
    res, boot = write_job_files(fake, tmp_path)
    o = opts()
    run = ab.vm_suite({**META, "variant": "vA"}, o.job, tmp_path / "vm.json", clock=o.clock,
                      record=tmp_path / "boot.json", executor=slurm.Slurm(poll_s=0.01))
    assert run.results["cells"] == res["cells"] and run.boot.record() == boot.record()
    assert json.loads((tmp_path / "boot.json").read_text()) == boot.record()
    [sbatch] = [c for c in calls(fake) if c[0].endswith("sbatch")]
    [task] = task_commands(sbatch)
    assert build_parser().parse_args(task[3:]).output == tmp_path / "vm.json"


# --------------------------------------------------------------------------- test cluster

FAKE_DAEMON = r'''#!/bin/sh
# slurmd -C as Slurm prints it; munged failing as it does, into its --log-file.
case "$1" in -C) echo "NodeName=fake CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=1000"; exit 0;; esac
for a in "$@"; do case "$a" in --log-file=*) log=${a#--log-file=};; esac; done
[ -n "$log" ] && echo "munged: Error: Failed to check keyfile: fake permissions" >> "$log"
exit 1
'''


def test_the_test_cluster_fails_with_its_daemons_own_log_line(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO / "tests"))
    try:
        import slurm_cluster
    finally:
        sys.path.remove(str(REPO / "tests"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("munged", "slurmd", "slurmctld", "sinfo", "sbatch", "squeue", "scancel"):
        (bin_dir / name).write_text(FAKE_DAEMON)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    c = slurm_cluster.Cluster(tmp_path / "cluster", start_timeout=10)
    (tmp_path / "cluster").mkdir()
    with pytest.raises(slurm_cluster.ClusterError) as e:
        c.start()
    assert "munged exited (1)" in str(e.value)
    assert "Failed to check keyfile: fake permissions" in str(e.value)
    assert "NodeName=fake" in (tmp_path / "cluster" / "slurm.conf").read_text()
    assert not c.procs
