# SPDX-License-Identifier: MIT
"""One mode, decided once (ipclab/mode.py): the command line decides timed or deterministic
and passes the one object down; a results file's mode is read once, Mode.of(res). A second
decision (a boolean, a clock string, a default of its own) must not come back."""

import json
import re
from pathlib import Path

import conftest
import pytest

from ipclab import Error, compare
from ipclab.cli import main
from ipclab.lab import bisect as b
from ipclab.lab import vm
from ipclab.mode import DETERMINISTIC, TIMED, Mode

ROOT = Path(__file__).resolve().parents[1]
OWNER = {"ipclab/mode.py"}
# What decided the mode again before it was one object, and must not come back outside its
# owner: each pattern with what it stands for.
SECOND_DECISIONS = [
    (r"deterministic_mode", "a deterministic_mode boolean"),
    (r"\bclock_of\(|\bis_deterministic\(", "a results file's mode read from its clock string"),
    (r"startswith\(\s*[\"']icount", "a clock string tested for icount"),
    (r"[!=]= *(deterministic\.)?REAL\b|\bREAL *[!=]=", "a clock string compared with 'real'"),
    (r"\bdefault_boots\b|\bTIMED_PAIRS\b", "a second default of the boots"),
    (r"\bDETERMINISTIC_REPS\b(?! *=)", "the deterministic reps taken past the mode"),
    (r"(DETERMINISTIC|TIMED) if |else (vm\.)?(TIMED|DETERMINISTIC)\b",
     "a mode chosen again from a boolean"),
    (r"(Clock|Mode)\(deterministic=", "a mode built from a boolean"),
    (r"\b(is_)?deterministic: bool\b|\bdet: bool\b", "a boolean parameter for the mode"),
    (r"[\"']deterministic[\"'] if |[\"']timed[\"'] if |== *[\"'](deterministic|timed)[\"']",
     "a mode's name chosen or tested as a string"),
    (r"\bargs\.(deterministic|timed)\b|getattr\(args, *[\"'](deterministic|timed)",
     "the command line's flags read past the one decision"),
    (r"(clock|mode): *(vm\.)?(Clock|Mode) *= *(vm\.)?(TIMED|DETERMINISTIC)\b"
     r"|def .*\b(clock|mode)=(vm\.)?(TIMED|DETERMINISTIC)\b",
     "a default of the mode's own"),
]
# The one decision from the flags, the lab's two instances, and the old bisect log's bool.
ALLOWED = {
    ("ipclab/cli/lab.py", "the command line's flags read past the one decision"),
    ("ipclab/lab/vm/clock.py", "a mode built from a boolean"),
    ("ipclab/lab/vm/clock.py", "the deterministic reps taken past the mode"),
    ("ipclab/lab/vm/__init__.py", "the deterministic reps taken past the mode"),
    # An Outcome is data: compare_results and compare_values set its mode.
    ("ipclab/compare/outcome.py", "a default of the mode's own"),
    # `record deterministic`: the kind of record a script writes, not a mode
    ("scripts/series-tables", "a mode's name chosen or tested as a string"),
}


def sources():
    for path in sorted((ROOT / "ipclab").rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path.read_text()
    for path in sorted((ROOT / "scripts").iterdir()):
        if path.is_file() and path.read_bytes()[:2] == b"#!" and b"python" in \
                path.read_bytes().split(b"\n", 1)[0]:
            yield path.relative_to(ROOT).as_posix(), path.read_text()


def second_decisions():
    found = []
    for rel, text in sources():
        if rel in OWNER:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            for pattern, what in SECOND_DECISIONS:
                if re.search(pattern, code) and (rel, what) not in ALLOWED:
                    found.append(f"{rel}:{n}: {what}: {line.strip()}")
    return found


def test_no_module_decides_the_mode_a_second_time():
    assert second_decisions() == []


def test_the_command_line_reads_its_flags_in_one_function():
    text = (ROOT / "ipclab/cli/lab.py").read_text()
    uses = [n for n, line in enumerate(text.splitlines(), 1)
            if re.search(r"\bargs\.(deterministic|timed)\b", line)]
    body = text.split("def _mode(args)", 1)[1].split("\ndef ", 1)[0]
    assert len(uses) == len(re.findall(r"\bargs\.(deterministic|timed)\b", body)) >= 1


def test_the_mode_carries_all_that_differs():
    assert (DETERMINISTIC.clock, DETERMINISTIC.unit, DETERMINISTIC.boots, DETERMINISTIC.reps,
            DETERMINISTIC.rule) == ("icount shift=0", "insn", 1, 9, "deterministic")
    assert (TIMED.clock, TIMED.unit, TIMED.boots, TIMED.reps, TIMED.rule) == \
        ("real", "ns", 5, None, "timed")
    assert TIMED.floors(1, "mainline") == ({}, None)
    # The lab's clock is the mode, equal to the one a results file is read into.
    assert isinstance(vm.DETERMINISTIC, Mode) and vm.DETERMINISTIC == DETERMINISTIC
    assert vm.TIMED == TIMED and vm.TIMED != vm.DETERMINISTIC
    assert vm.Clock.chosen(True) == vm.DETERMINISTIC and type(vm.Clock.chosen(False)) is vm.Clock
    assert Mode.of_clock("icount shift=3") == Mode(True, 3) != DETERMINISTIC
    assert Mode.named("timed") == TIMED and Mode.of_clock(None) == TIMED
    with pytest.raises(ValueError):
        Mode.named("real")


def results(clock):
    smp = {"metrics": {"x": {"value": 1.0, "unit": "ns", "better": "lower"}},
           "env": {"clock": clock}}
    cell = {"key": "c", "workload": "pipe-throughput", "status": "ok", "samples": [smp]}
    return {"id": "r", "meta": {}, "env": {}, "cells": [cell]}


def test_a_results_file_is_read_into_the_same_object():
    assert Mode.of(results("icount shift=0")) == DETERMINISTIC
    assert Mode.of(results("real")) == TIMED
    assert Mode.of({"meta": {"clock": {"mode": "deterministic", "icount": {"shift": 0}}},
                    "cells": []}) == DETERMINISTIC
    assert compare.check_clocks(results("real"), results("real")) == TIMED
    with pytest.raises(Error, match="'real'.*'icount shift=0'"):
        compare.check_clocks(results("real"), results("icount shift=0"))


def params(mode, boots=1):
    return b.Params("/tree", "a" * 40, "b" * 40, "seed-skip-wakeups", "pipe-throughput", None,
                    mode, boots)


def test_bisect_params_hold_the_mode_and_old_logs_still_resume(tmp_path):
    with pytest.raises(TypeError):
        params(True)
    log = b.BisectLog(tmp_path / b.LOG_NAME)
    for mode in (vm.TIMED, vm.DETERMINISTIC):
        log.start(params(mode))
        p, _ = log.read()
        assert p.mode == mode and isinstance(p.mode, vm.Clock)
    # A log the older code wrote: the mode as a bool, `deterministic`.
    for old, mode in ((True, vm.DETERMINISTIC), (False, vm.TIMED)):
        log.start(params(vm.TIMED if old else vm.DETERMINISTIC))
        first = json.loads(log.path.read_text().splitlines()[0])
        first["params"].pop("mode")
        first["params"]["deterministic"] = old
        log.path.write_text(json.dumps(first) + "\n")
        p, _ = log.read()
        assert p.mode == mode and isinstance(p.mode, vm.Clock) and p.boots == 1


def dry_run(capfd, argv):
    assert main(argv + ["--dry-run"]) == 0, capfd.readouterr().err
    out = capfd.readouterr()
    return out.out, out.err


@pytest.mark.parametrize("flags,mode", [([], vm.TIMED), (["--deterministic"], vm.DETERMINISTIC)])
def test_ab_dry_run_gives_the_mode_s_boots_reps_and_unit(capfd, tmp_path, monkeypatch, flags,
                                                         mode):
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    _, err = dry_run(capfd, ["ab", "lts", "lts", "--suite", "seed-skip-wakeups",
                              "--cell", "pipe-throughput/copies=1"] + flags)
    reps = f"{mode.reps} reps" if mode.reps else "the suite's reps"
    assert (f"ab: {mode.name} mode: {mode.boots} boot(s) of each side, {reps} per cell,"
            f" times in {mode.unit}") in err
    jobs = [json.loads(line.split("guest job: ", 1)[1]) for line in err.splitlines()
            if "guest job:" in line]
    assert len(jobs) == 2 * mode.boots
    for job in jobs:
        assert job["env"]["IPCBENCH_CLOCK"] == mode.clock
        argv = job["argv"]
        assert (argv[argv.index("--reps") + 1] if "--reps" in argv else None) == \
            (str(mode.reps) if mode.reps else None)


@pytest.fixture
def tree(tmp_path):
    return conftest.small_git_tree(tmp_path, ["kernel/x.c"])


@pytest.mark.parametrize("flags,mode", [(["--timed"], vm.TIMED), ([], vm.DETERMINISTIC),
                                        (["--deterministic"], vm.DETERMINISTIC)])
def test_bisect_dry_run_gives_the_mode_s_boots_reps_and_unit(capfd, tmp_path, monkeypatch,
                                                             tree, flags, mode):
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    out, err = dry_run(capfd, ["bisect", "--tree", str(tree), "HEAD~1", "HEAD", "--suite",
                                "seed-skip-wakeups", "--metric", "pipe-throughput/copies=1",
                                "-o", str(tmp_path / "o")] + flags)
    reps = f"{mode.reps} reps" if mode.reps else "the suite's reps"
    assert (f"{mode.name} mode (times in {mode.unit}), {mode.boots} boot(s) per commit,"
            f" {reps} per boot") in out
    assert f"GOOD and BAD: {2 * mode.boots} x boot x86_64 seed-skip-wakeups {mode.name}" in err
