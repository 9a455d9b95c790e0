# SPDX-License-Identifier: MIT
"""The lab's builds and its census as Slurm jobs. An image the cache lacks is a job of its
own (one per image): deterministic boots wait for it in Slurm's queue (afterok, and a failed
build cancels them), timed ones are submitted once it ended; a failed build fails its boots
with the build's own last log line and keeps the other side's; the job's `kernel build`
resolves the very variant the submitting side resolved. Deterministic boots are job arrays,
one per build they wait for, whose tasks run their own entry of a table that the job's script
holds (array_task).
`census --executor slurm` is one job
of this checkout's own `census`, whose record comes back and is printed as a local one.
Fake Slurm commands as in test_slurm_executor.py; the cache lookups are faked, nothing is
compiled or booted."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ipclab import Error
from ipclab.cli.parser import build_parser
from ipclab.lab import bisect, census, executor, kernel, slurm, variants, vm

from test_slurm_executor import (META, calls, fake, opts, here, wrapped,  # noqa: F401
                                 write_job_files)

REPO = Path(__file__).resolve().parents[2]
KEYS = {"mainline": "1" * 20, "mainline-write-cost": "2" * 20,
        "mainline+wakeup-counters": "3" * 20}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The lab's cache, faked: mainline-write-cost is built, mainline is not; a test adds
    to the set it returns what a build job filed (kernel.cached finds it, kernel.find asked
    before did not)."""
    monkeypatch.setattr(slurm, "cache_root", lambda: tmp_path / "cache")
    before = {"mainline-write-cost", "mainline+wakeup-counters"}
    filed = set(before)

    def meta(name):
        return {**META, "variant": name, "key": KEYS[name]}

    def find(kern):
        if kern.name in before:
            return meta(kern.name), True
        return {**kernel._before_build(kern, KEYS[kern.name]), "to_build": True}, False

    def cached(key, name=None):
        [found] = [n for n, k in KEYS.items() if k == key]
        if found not in filed:
            raise Error(f"--built {key}: no such build")
        return meta(name or found)
    monkeypatch.setattr(kernel, "find", find)
    monkeypatch.setattr(kernel, "cached", cached)
    return filed


def kerns(old="mainline", new="mainline-write-cost"):
    return {"A": variants.resolve(old), "B": variants.resolve(new)}


def sbatches(d):
    return [c for c in calls(d) if c[0].endswith("sbatch")]


def planned(metas, tmp_path):
    out = tmp_path / "ab"
    out.mkdir(exist_ok=True)
    return [executor.SuiteBoot(f"boot 1/1 of {s}", metas[s], out / f"{s}-boot1.json")
            for s in "AB"]


def test_an_image_the_cache_lacks_is_one_build_job_its_deterministic_boots_wait_for(
        fake, cache, tmp_path, monkeypatch):
    s = slurm.Slurm(poll_s=0.01)
    metas = s.images(kerns(), vm.DETERMINISTIC)
    assert metas["A"]["to_build"] and "to_build" not in metas["B"]
    [build] = sbatches(fake)
    flags = dict(zip(build, build[1:]))
    # the whole node, as a local build has the machine; its log in the lab's cache
    assert "--exclusive" in build and "--dependency" not in build
    assert flags["--output"].startswith(str(tmp_path / "cache" / "logs" / "slurm-build-"))
    cmd = wrapped(build)
    assert cmd[3:6] == ["kernel", "build", "mainline"]
    monkeypatch.setenv("FAKE_WRITE", "1")
    write_job_files(fake, tmp_path)
    o = opts()
    s.run_boots(planned(metas, tmp_path), o, here(o))
    boot_a, boot_b = sbatches(fake)[1:]
    assert boot_a[boot_a.index("--dependency") + 1] == "afterok:100"
    assert boot_a[boot_a.index("--kill-on-invalid-dep") + 1] == "yes"
    assert "--dependency" not in boot_b
    assert s.build_of == {}      # built: a boot submitted now would wait for nothing
    # once built, the side's meta is the cache's
    assert kernel.built_meta(metas["A"])["key"] == KEYS["mainline"]


def test_two_sides_of_one_image_build_it_once(fake, cache):
    metas = slurm.Slurm().images(kerns("mainline", "mainline"), vm.DETERMINISTIC)
    assert len(sbatches(fake)) == 1 and metas["A"]["key"] == metas["B"]["key"]


def test_a_failed_build_fails_its_boots_with_its_log_line_and_keeps_the_other_side(
        fake, cache, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_LOG", "make: *** [Makefile:2010: fs] Error 2")
    s = slurm.Slurm(poll_s=0.01)
    metas = s.images(kerns(), vm.DETERMINISTIC)
    monkeypatch.delenv("FAKE_LOG")
    monkeypatch.setenv("FAKE_WRITE", "independent")
    write_job_files(fake, tmp_path)
    # the build fails; Slurm cancels the boot that waited for it (kill-on-invalid-dep)
    monkeypatch.setenv("FAKE_STATES", json.dumps([
        {"100": "FAILED None", "101_0": "PENDING Dependency", "102_0": "RUNNING None"},
        {"101_0": "CANCELLED None", "102_0": "COMPLETED None"}]))
    p = planned(metas, tmp_path)
    o = opts()
    (res_a, boot_a), (res_b, boot_b) = slurm.Slurm.run_boots(s, p, o, here(o))
    assert not boot_a.ok and "the build of mainline (slurm job 100) ended failed" in \
        boot_a.reason and "Error 2" in boot_a.reason
    assert res_a["cells"][0]["status"] == "failed"
    assert boot_b.ok and res_b["cells"][0]["status"] == "ok"
    assert kernel.built_meta(metas["A"])["to_build"]     # not built: as it was


def test_a_timed_run_waits_for_its_builds_then_boots_the_cached_image(fake, cache):
    s = slurm.Slurm(poll_s=0.01)
    cache.add("mainline")           # what the build job (COMPLETED at once) left
    metas = s.images(kerns(), vm.TIMED)
    assert "to_build" not in metas["A"] and metas["A"]["key"] == KEYS["mainline"]
    names = [c[0].rsplit("/", 1)[-1] for c in calls(fake)]
    assert names == ["sbatch", "squeue"]
    assert s.build_of == {} and s.live == {}    # its boots wait for nothing


def test_a_timed_run_whose_build_failed_stops_before_any_boot(fake, cache, monkeypatch):
    monkeypatch.setenv("FAKE_STATE", "FAILED")
    monkeypatch.setenv("FAKE_LOG", "gcc: fatal error: Killed signal terminated program cc1")
    with pytest.raises(Error) as e:
        slurm.Slurm(poll_s=0.01).images(kerns(), vm.TIMED)
    assert e.value.code == 1 and "\n" not in str(e.value)
    assert "the build of mainline (slurm job 100) ended failed: gcc: fatal" in str(e.value)


def test_ctrl_c_while_a_build_runs_cancels_it(fake, cache, monkeypatch):
    monkeypatch.setenv("FAKE_STATE", "RUNNING")
    s = slurm.Slurm(poll_s=0.01)

    def interrupted(*a):
        raise KeyboardInterrupt
    monkeypatch.setattr(slurm.Watch, "show", interrupted)
    with pytest.raises(KeyboardInterrupt):
        s.images(kerns(), vm.TIMED)
    assert [c[1:] for c in calls(fake) if c[0].endswith("scancel")] == [["100"]]


def test_a_dry_run_shows_the_build_job_and_the_boots_dependency(fake, cache, tmp_path,
                                                                 capsys):
    from ipclab import proc
    with proc.dry_run(True):
        s = slurm.Slurm()
        metas = s.images(kerns(), vm.DETERMINISTIC)
        o = opts()
        s.run_boots(planned(metas, tmp_path), o, here(o))
    assert calls(fake) == [] and metas["A"]["dry_run"] and "dry_run" not in metas["B"]
    err = capsys.readouterr().err
    assert "kernel build mainline" in err
    assert "afterok:<job id of the build of mainline>" in err


@pytest.mark.parametrize("spec,kw", [
    ("mainline", {}),
    ("mainline+lab-write-cost.patch", {"config": "production"}),
    ("mainline", {"arch": "arm64"}),
])
def test_the_build_job_resolves_the_variant_the_submitting_side_resolved(spec, kw):
    v = variants.resolve(spec, **kw)
    argv = ["kernel", "build", *v.build_args]
    a = build_parser().parse_args(argv)
    again = variants.resolve(a.variant, a.tree, patches=a.patch, config=a.config,
                             arch=a.arch)
    assert again == v


def test_find_builds_nothing_and_knows_the_key_the_build_will_file_under(tmp_path,
                                                                         monkeypatch):
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    src = kernel.source.Source(tmp_path / "tree", tmp_path / "work", "fake-source", "7.3.4",
                               managed=True)
    monkeypatch.setattr(kernel.source, "open_source", lambda tree, variant=None: src)
    monkeypatch.setattr(kernel, "build", lambda *a, **kw: pytest.fail("built"))
    v = variants.resolve("mainline-write-cost")
    meta, built = kernel.find(v)
    assert not built and meta["to_build"] and meta["key"] == kernel.image_key(src, v)
    assert [p["name"] for p in meta["patches"]] == [p.name for p in v.patch_paths()]
    d = kernel.image_dir(meta["key"])
    d.mkdir(parents=True)
    (d / "bzImage").write_bytes(b"image")
    (d / "meta.json").write_text(json.dumps({**META, "key": meta["key"]}))
    meta, built = kernel.find(v)
    assert built and "to_build" not in meta and meta["release"] == META["release"]


def census_record(tmp_path):
    boot = vm.Boot("mainline+wakeup-counters", "7.3.4", "tcg", tmp_path, True, 0, None, [],
                   "", {"boot_total_s": 50.0}, {"nproc": 1}, {"mode": "deterministic"})
    rows = [{"workload": "mq-latency", "rc": 0, "sites": {}}]
    rec = census.record(rows, {**META, "variant": "mainline+wakeup-counters",
                               "key": KEYS["mainline+wakeup-counters"]}, boot,
                        vm.DETERMINISTIC, 1)
    f = tmp_path / "census-record.json"
    f.write_text(json.dumps(rec))
    return json.loads(f.read_text()), f


def test_a_census_is_one_job_of_this_checkouts_census_and_prints_its_record(
        fake, cache, tmp_path, monkeypatch, capsys):
    rec, f = census_record(tmp_path)
    monkeypatch.setenv("FAKE_RECORD", str(f))
    kern = variants.resolve(census.counters_spec("mainline"))
    out = tmp_path / "census.json"
    rc = census.run(kern, workloads=["mq-latency"], clock=vm.DETERMINISTIC, out=out,
                    as_json=True, executor=slurm.Slurm(poll_s=0.01, who="census"))
    assert rc == 0 and json.loads(capsys.readouterr().out) == rec
    [job] = sbatches(fake)
    flags = dict(zip(job, job[1:]))
    assert flags["--cpus-per-task"] == "1" and "--exclusive" not in job
    assert "--dependency" not in job        # its image is in the cache
    a = build_parser().parse_args(wrapped(job)[3:])
    assert (a.variant, a.workload, a.deterministic, a.cpus) == \
        ("mainline+wakeup-counters", ["mq-latency"], True, 1)
    assert a.output == out and json.loads(out.read_text()) == rec


def test_a_census_job_that_left_no_record_is_one_line_and_exit_1(fake, cache, tmp_path,
                                                                  monkeypatch):
    monkeypatch.setenv("FAKE_STATE", "NODE_FAIL")
    monkeypatch.setenv("FAKE_LOG", "slurmstepd: error: *** JOB 100 ON node CANCELLED ***")
    kern = variants.resolve(census.counters_spec("mainline"))
    with pytest.raises(Error) as e:
        census.run(kern, workloads=[], clock=vm.DETERMINISTIC,
                   executor=slurm.Slurm(poll_s=0.01, who="census"))
    assert e.value.code == 1 and "\n" not in str(e.value)
    assert "census: the job ended node_fail without a record: slurmstepd" in str(e.value)


def git_tree(tmp_path, n=2):
    """A git tree the lab takes for a kernel's (a Makefile and kernel/): its n commits."""
    tree = tmp_path / "linux"
    (tree / "kernel").mkdir(parents=True)
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    for i in range(n):
        (tree / "Makefile").write_text(f"VERSION = {i}\n")
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", str(i)], check=True)
    return tree, subprocess.run([*git, "rev-list", "--reverse", "HEAD"], check=True,
                                capture_output=True, text=True).stdout.split()


def test_a_bisect_step_is_a_build_job_and_boot_jobs_behind_it_per_commit(
        fake, tmp_path, monkeypatch):
    monkeypatch.setattr(slurm, "cache_root", lambda: tmp_path / "cache")
    monkeypatch.setattr(kernel, "find", lambda kern: (
        {**kernel._before_build(kern, kern.name[:12].ljust(20, "0")), "to_build": True}, False))
    tree, commits = git_tree(tmp_path)
    p = bisect.Params(str(tree), commits[0], commits[1], "seed-skip-wakeups",
                      "pipe-throughput/copies=1", None, vm.DETERMINISTIC, 1)
    # the first commit's build fails, and Slurm cancels the boot behind it; the second
    # builds, and its boot leaves nothing
    monkeypatch.setenv("FAKE_STATES", json.dumps([
        {"100": "FAILED None", "101": "COMPLETED None", "102_0": "CANCELLED None",
         "103_0": "COMPLETED None"}]))
    measure = bisect.LabMeasure(p, tmp_path / "out",
                                executor=slurm.Slurm(poll_s=0.01, who="bisect"))
    first, second = measure(commits)
    builds, boots = sbatches(fake)[:2], sbatches(fake)[2:]
    for job, c in zip(builds, commits):
        assert wrapped(job)[3:] == ["kernel", "build", c, "--tree", str(tree), "--arch",
                                    "x86_64"] and "--exclusive" in job
    for job, build_id in zip(boots, ("100", "101")):
        assert job[job.index("--dependency") + 1] == f"afterok:{build_id}"
    assert f"the build of {commits[0][:12]} (slurm job 100) ended failed" in first.skip
    assert "slurm job 103_0 completed without a boot record" in second.skip


def test_a_timed_bisect_through_slurm_is_refused(tmp_path):
    tree, commits = git_tree(tmp_path)
    p = bisect.Params(str(tree), commits[0], commits[1], "seed-skip-wakeups",
                      "pipe-throughput/copies=1", None, vm.TIMED, 3)
    with pytest.raises(Error) as e:
        bisect.run(p, tmp_path / "out", executor=slurm.Slurm())
    assert e.value.code == 2 and "only with --deterministic" in str(e.value)


def test_a_timed_bisect_under_the_environments_slurm_boots_here(tmp_path, monkeypatch,
                                                                 capsys):
    # IPCLAB_EXECUTOR=slurm is a default, as under `make test-kernel-slurm`: what Slurm may not
    # run runs here and says so, as `vm run` does.
    tree, commits = git_tree(tmp_path)
    p = bisect.Params(str(tree), commits[0], commits[1], "seed-skip-wakeups",
                      "pipe-throughput/copies=1", None, vm.TIMED, 3)
    used = []

    class Stop(Exception):
        pass

    def measure(*a, executor=None, **k):
        used.append(executor)
        raise Stop

    monkeypatch.setattr(bisect, "LabMeasure", measure)
    with pytest.raises(Stop):
        bisect.run(p, tmp_path / "out", executor=slurm.Slurm(by="IPCLAB_EXECUTOR"))
    assert [e.name for e in used] == ["local"]
    err = capsys.readouterr().err
    assert "a timed bisect boots here (" in err and "whatever IPCLAB_EXECUTOR says" in err, err


def test_an_array_task_runs_its_own_entry_of_the_table_its_script_holds(tmp_path):
    """The array's script as Slurm runs it (sh, SLURM_ARRAY_TASK_ID set): each task runs its
    own entry of the table in the script's here document, into its own log, and no file
    of the results folder is read for a command."""
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    table = [{"argv": ["/bin/sh", "-c", "echo first"], "log": str(logs[0])},
             {"argv": ["/bin/sh", "-c", "echo second; echo to-stderr >&2; exit 3"],
              "log": str(logs[1])}]
    argv = slurm.Slurm()._sbatch("t", tmp_path / "array-%A_%a.log",
                                 [sys.executable, "-m", "ipclab.lab.array_task"], 1, False,
                                 tasks=2, stdin=json.dumps(table))
    script = argv[argv.index("--wrap") + 1]

    def task(index, text=script):
        return subprocess.run(["sh", "-c", text], cwd=REPO, capture_output=True, text=True,
                              timeout=60, env={**os.environ, "SLURM_ARRAY_TASK_ID": str(index)})
    logs[1].write_text("an earlier run's\n")
    r = task(1)
    assert r.returncode == 3 and r.stdout == "" and not logs[0].exists()
    assert logs[1].read_text() == "second\nto-stderr\n"
    for r in (task(2), task(0, script.replace('"argv"', '"command"')),
              task(0, f"{sys.executable} -m ipclab.lab.array_task extra </dev/null")):
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
