# SPDX-License-Identifier: MIT
"""scripts/kvm-seed-sweep, up to where it needs /dev/kvm: what it would run, that it refuses
before building anything where KVM cannot time the sweep, that it goes on after a stop, and
the counts table it prints. No machine here boots a stock guest under KVM, so the sweep
itself never runs in a test."""

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "kvm-seed-sweep"


def load():
    loader = importlib.machinery.SourceFileLoader("kvm_seed_sweep", str(SCRIPT))
    spec = importlib.util.spec_from_loader("kvm_seed_sweep", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def sweep(*args, env=None, cache=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("IPCLAB_")}
    if cache is not None:
        e["IPCLAB_CACHE"] = str(cache)
    e.update(env or {})
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, env=e,
                          capture_output=True, text=True, timeout=120)


def test_the_dry_run_names_pipe_bench_the_counts_and_the_census_of_three_kernels(tmp_path):
    r = sweep("--dry-run", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    abs_ = [ln for ln in lines if ln.startswith("ipclab ab ")]
    assert [ln.split()[2:4] for ln in abs_] == [["mainline-pre-prealloc", "mainline"],
                                                ["mainline", "mainline-series"]]
    for ln in abs_:
        assert "--suite upstream-pipe --full" in ln and "--config production" in ln
        assert "--cpus 16" in ln and "--boots 5" in ln
    counts = [ln for ln in lines if "pipe-alloc-counts" in ln]
    assert len(counts) == 6 and sum("--pressure" in ln for ln in counts) == 3
    assert all("+counters+lockstat --config production --cpus 16" in ln
               for ln in counts)
    census = [ln for ln in lines if ln.startswith("ipclab census ")]
    assert [ln.split()[2] for ln in census] == ["mainline-pre-prealloc", "mainline",
                                                 "mainline-series"]
    assert not (tmp_path / "out").exists()


def test_a_machine_without_usable_kvm_is_refused_before_any_build(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    mod = load()
    (cache / "accel.json").write_text(json.dumps({
        "accel": "tcg", "machine": mod.vm.machine_id(),
        "reason": "a stock guest does not boot under KVM here (test)"}))
    r = sweep("--out", str(tmp_path / "out"), cache=cache)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and "KVM" in r.stderr and "(test)" in r.stderr
    assert "Traceback" not in r.stderr
    assert sorted(p.name for p in cache.iterdir()) == ["accel.json"]     # nothing built
    assert not (tmp_path / "out").exists()
    r = sweep("--out", str(tmp_path / "out"), env={"IPCLAB_ACCEL": "tcg"}, cache=cache)
    assert r.returncode == 2 and "IPCLAB_ACCEL=tcg" in r.stderr


def test_no_kvm_device_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    mod = load()
    monkeypatch.setattr(mod, "KVM_DEVICE", str(tmp_path / "no-kvm"))

    def no_build(*a, **k):
        raise AssertionError("built a kernel on a machine without KVM")
    monkeypatch.setattr(mod.kernel, "build", no_build)
    monkeypatch.setattr(mod.vm, "probed_accel", lambda: None)    # whatever this machine is
    monkeypatch.delenv("IPCLAB_ACCEL", raising=False)
    assert mod.main(["--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-kvm is missing or not accessible" in err


@pytest.mark.parametrize("args", [["--cpus", "1"], ["--boots", "2"]])
def test_too_few_vcpus_or_boots_are_bad_input(args):
    r = sweep(*args, "--dry-run")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr


def counts_line(writers, readers, under, contentions):
    return json.dumps({"writers": writers, "readers": readers, "nproc": 16,
                       "under_mutex_per_write": under, "pipe_pages_per_write": 16.0,
                       "mutex_contentions_per_write": contentions, "missing": []})


def test_the_counts_table_shows_every_cell_and_its_change_worse_ones_too(tmp_path):
    mod = load()
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(counts_line(1, 1, 8.0, 0.5) + "\n" + counts_line(5, 10, 10.0, 2.0) + "\n")
    b.write_text(counts_line(1, 1, 6.0, 0.5) + "\n" + counts_line(5, 10, 11.0, 1.0) + "\n")
    table = mod.counts_table({"mainline": a, "mainline-series": b})
    rows = {tuple(ln.split()[:2]): ln for ln in table.splitlines()[2:]}
    assert "6.000 (-25.0%)" in rows[("1x1", "pages")]
    assert "11.000 (+10.0%)" in rows[("5x10", "pages")]      # the worse row is printed
    assert "1.000 (-50.0%)" in rows[("5x10", "contentions")]
    assert not any("found held" in ln for ln in table.splitlines())   # absent everywhere


def test_a_second_run_with_the_same_out_goes_on_where_the_first_stopped(tmp_path, monkeypatch,
                                                                       capsys):
    mod = load()
    out = tmp_path / "out"
    plan = mod.steps(out, 16, 5)
    # the first run got through the two ab's and the first kernel's counts
    for path, _, is_stdout in plan[:3]:
        if is_stdout:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(counts_line(1, 1, 8.0, 0.5) + "\n")
        else:
            path.mkdir(parents=True)
            (path / "compare.json").write_text("{}")
    ran = []

    def fake_step(path, argv, is_stdout):
        ran.append(path.name)
        return 0
    monkeypatch.setattr(mod, "check_kvm", lambda: None)
    monkeypatch.setattr(mod, "run_step", fake_step)
    monkeypatch.setattr(mod, "print_tables", lambda out: None)
    assert mod.main(["--out", str(out)]) == 0
    assert ran == [p.name for p, _, _ in plan[3:]]
    assert capsys.readouterr().out.count("there already, not run again") == 3
