# SPDX-License-Identifier: MIT
"""ipclab bisect on a fake metric: the search, the rule, skips, the log and resuming, and the
timed mode's power check. No kernel is built and nothing boots."""

import io
import math
import random

import pytest

from ipclab import EXIT_FAILED, EXIT_USAGE, Error
from ipclab.compare import record
from ipclab.deterministic import floor as aa_floor
from ipclab.lab import bisect as b
from ipclab.lab import vm

COMMITS = [f"{i:040x}" for i in range(1, 40)]


def search(commits, first_new, skip=()):
    """Run pick() to the end against a step function; (suspects, commits tested)."""
    verdicts = {commits[-1]: b.NEW}
    tested = []
    while (c := b.pick(commits, verdicts)) is not None:
        tested.append(c)
        i = commits.index(c)
        verdicts[c] = b.SKIP if c in skip else (b.NEW if i >= first_new else b.OLD)
    return b.conclude(commits, verdicts), tested


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 16, 39])
def test_search_finds_every_position_in_log2_steps(n):
    commits = COMMITS[:n]
    for k in range(n):
        found, tested = search(commits, k)
        assert found == [commits[k]]
        assert len(tested) <= math.ceil(math.log2(n)) if n > 1 else not tested
        assert len(set(tested)) == len(tested)


def test_skipped_commits_are_routed_around_or_named():
    commits = COMMITS[:9]
    # The first pick is skipped: the search goes round it and still pins the culprit.
    first = b.pick(commits, {commits[-1]: b.NEW})
    found, tested = search(commits, 6, skip={first})
    assert found == [commits[6]] and tested[0] == first and first != commits[5]
    # The commit before the culprit is skipped: either could be the first.
    found, _ = search(commits, 5, skip={commits[4]})
    assert found == [commits[4], commits[5]]
    # The culprit itself is skipped: it and the next new commit are all that can be said.
    found, _ = search(commits, 5, skip={commits[5]})
    assert found == [commits[5], commits[6]]
    # Everything skipped: any of them.
    found, _ = search(commits, 5, skip=set(commits[:-1]))
    assert found == commits


class FakeMeasure:
    """A metric per commit: `level[i]` times a little noise (deterministic: within 0.01%),
    or a timed one with boot-to-boot noise; `broken` commits do not build."""

    unit = "insn/loop"
    # 8 A/A pairs 0.01% apart: a threshold of t(8) x 0.01%
    floor = aa_floor.Floor(deltas=(0.0001, -0.0001) * 4, n=9)
    costs = None        # commit -> {cost-model row: median per op}

    def __init__(self, commits, levels, boots=1, samples=9, cv_boot=0.0, cv=0.00002,
                 broken=(), stop_after=None):
        self.level = dict(zip(commits, levels))
        self.boots, self.samples, self.cv_boot, self.cv = boots, samples, cv_boot, cv
        self.broken = set(broken)
        self.calls = []
        self.stop_after = stop_after
        self.rng = random.Random(7)

    def __call__(self, commits):
        out = []
        for c in commits:
            if self.stop_after is not None and len(self.calls) >= self.stop_after:
                raise KeyboardInterrupt
            self.calls.append(c)
            if c in self.broken:
                out.append(b.Measurement(c, skip="does not build: make failed"))
                continue
            boots = []
            for _ in range(self.boots):
                lvl = self.level[c] * math.exp(self.rng.gauss(0, self.cv_boot))
                boots.append([lvl * math.exp(self.rng.gauss(0, self.cv))
                              for _ in range(self.samples)])
            m = b.Measurement(c, boots, unit=self.unit, floor=self.floor)
            if self.costs:
                m.costs, m.cost_unit = self.costs(c), "per write+read loop"
            out.append(m)
        return out


def run(tmp_path, levels, threshold=None, mode=vm.DETERMINISTIC, boots=1, arch="x86_64", **kw):
    """A bisect of GOOD = COMMITS[0] .. BAD = COMMITS[len(levels) - 1]."""
    good, commits = COMMITS[0], COMMITS[1:len(levels)]
    measure = FakeMeasure([good, *commits], levels, boots=boots, **kw)
    p = b.Params("/tree", good, commits[-1], "seed-skip-wakeups", "pipe-throughput",
                 threshold, mode, boots, arch=arch)
    log = b.BisectLog(tmp_path / b.LOG_NAME)
    log.start(p)
    out = io.StringIO()
    res = b.Bisect(p, commits, measure, lambda c: f"{c[-4:]} subject {int(c, 16)}", log,
                   out).run()
    return res, measure, out.getvalue()


# The seeds series as commits on pipe-throughput (instructions per loop): 0001 .. 0006, where
# 0003 (skip wakeups) drops it 2.7%, 0004 and 0005 give part of it back.
SEEDS = [2747.9, 2749.8, 2673.7, 2703.9, 2714.2, 2716.8]


def test_seeds_shaped_series_names_the_skip_wakeup_commit(tmp_path):
    res, measure, text = run(tmp_path, SEEDS)
    assert res.found and res.first == [COMMITS[2]]
    assert res.steps <= 3
    # Each commit measured once; the output gives every step's value and the verdict, and
    # the culprit with its subject and its delta against its parent.
    assert len(measure.calls) == len(set(measure.calls))
    assert "step 1" in text and "insn/loop" in text
    assert "subject 3" in text
    assert "-2.77% against its parent" in text and "(insn/loop)" in text


def test_each_measured_commit_shows_its_cost_model_rows(tmp_path, monkeypatch):
    atomics = {c: 12.0 + (i >= 2) for i, c in enumerate(COMMITS)}
    monkeypatch.setattr(FakeMeasure, "costs",
                        lambda self, c: {"atomics": atomics[c], "est_cycles": 3000.0})
    res, measure, text = run(tmp_path, SEEDS)
    lines = [ln for ln in text.splitlines() if "cost model per write+read loop" in ln]
    assert len(lines) == len(measure.calls)
    assert "atomics 12.00" in lines[0] and "atomics 13.00" in lines[1]    # GOOD, then BAD
    assert "est. cycles 3000.00" in lines[0]
    assert "a model, not a measurement" in text
    # The log keeps them: a resumed bisect prints them again without measuring.
    _, done = b.BisectLog(tmp_path / b.LOG_NAME).read()
    assert done[COMMITS[0]].costs == {"atomics": 12.0, "est_cycles": 3000.0}


def test_an_arm64_bisect_says_its_counts_are_not_priced(tmp_path, monkeypatch):
    monkeypatch.setattr(FakeMeasure, "costs", lambda self, c: {"dmb_ish": 1.0})
    _, _, text = run(tmp_path, SEEDS, arch="arm64")
    assert "counted, not priced" in text and "a model, not a measurement" not in text


def test_the_measure_hears_which_commits_the_next_step_may_want(tmp_path):
    prepared = []
    FakeMeasure.prepare = lambda self, commits: prepared.append(list(commits))
    try:
        res, measure, _ = run(tmp_path, [1000] * 9 + [900] * 7)
    finally:
        del FakeMeasure.prepare
    assert res.first == [COMMITS[9]]
    commits = COMMITS[1:16]
    # First the first pick, then at each step the two picks that may follow it; every
    # commit measured after GOOD and BAD was one of them.
    assert prepared[0] == [b.pick(commits, {commits[-1]: b.NEW})]
    assert all(len(p) <= 2 for p in prepared)
    for i, c in enumerate(measure.calls[2:]):
        assert c in prepared[i], (c, prepared)


def test_a_commit_that_moves_the_other_way_is_old(tmp_path):
    # Commit 2 rises 3%, BAD falls 2% from GOOD: the first commit that falls is commit 4.
    res, _, text = run(tmp_path, [1000, 1000, 1030, 1000, 980, 980], threshold=0.01)
    assert res.first == [COMMITS[4]]


def test_threshold_sets_what_counts_as_moved(tmp_path):
    levels = [1000, 1004, 1008, 1012, 1016, 1020]     # +0.4% per commit
    res, _, _ = run(tmp_path, levels, threshold=0.005)
    assert res.first == [COMMITS[2]]                  # +0.8% is the first beyond 0.5%
    res, _, _ = run(tmp_path / "2", levels)           # default: half of GOOD -> BAD (1%)
    assert res.first == [COMMITS[3]]


def test_a_commit_that_does_not_build_is_skipped(tmp_path):
    res, measure, text = run(tmp_path, SEEDS, broken={COMMITS[2]})
    assert not res.found and res.first == [COMMITS[2], COMMITS[3]]
    assert "skipped: does not build" in text and "only skipped commits are left" in text


def test_nothing_to_bisect_when_good_and_bad_agree(tmp_path):
    with pytest.raises(Error) as e:
        run(tmp_path, [1000, 1000, 1000, 1000.001])
    assert e.value.code == EXIT_FAILED and "nothing to bisect" in str(e.value)


def test_broken_good_or_bad_stops_the_bisect(tmp_path):
    with pytest.raises(Error) as e:
        run(tmp_path, SEEDS, broken={COMMITS[0]})
    assert "GOOD" in str(e.value) and "does not build" in str(e.value)


def test_an_interrupted_bisect_resumes_from_its_log_without_measuring_again(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, SEEDS, stop_after=3)     # GOOD, BAD, step 1
    path = tmp_path / b.LOG_NAME
    with open(path, "a") as f:
        f.write('{"measured": {"commit": "torn')     # Ctrl-C in the middle of a write
    params, done = b.BisectLog(path).read()
    assert len(done) == 3 and params.good == COMMITS[0]
    commits = COMMITS[1:len(SEEDS)]
    measure = FakeMeasure([COMMITS[0], *commits], SEEDS)
    res = b.Bisect(params, commits, measure, str, b.BisectLog(tmp_path / b.LOG_NAME),
                   io.StringIO()).run(done)
    assert res.first == [COMMITS[2]]
    assert not set(measure.calls) & set(done)


def test_a_log_that_is_not_one_is_a_usage_error(tmp_path):
    (tmp_path / b.LOG_NAME).write_text("hello\n")
    with pytest.raises(Error) as e:
        b.BisectLog(tmp_path / b.LOG_NAME).read()
    assert e.value.code == EXIT_USAGE


def test_timed_bisect_with_enough_power_finds_the_commit(tmp_path):
    levels = [1000, 1000, 1000, 900, 900, 900]        # -10%, boots vary by 1%
    res, _, text = run(tmp_path, levels, mode=vm.TIMED, boots=5, cv_boot=0.01,
                       cv=0.01)
    assert res.first == [COMMITS[3]]
    assert "p < 0.05 over 5 boots" in text


def test_timed_bisect_without_power_is_refused_and_says_why(tmp_path):
    levels = [1000, 1000, 1000, 980, 980, 980]        # -2%, boots vary by 10%
    with pytest.raises(Error) as e:
        run(tmp_path, levels, threshold=0.01, mode=vm.TIMED, boots=5, cv_boot=0.10,
            cv=0.05)
    msg = str(e.value)
    assert e.value.code == EXIT_USAGE
    assert "between boots" in msg and "--deterministic" in msg and "find" in msg
    with pytest.raises(Error) as e:
        b.check_timed_boots(2)
    assert e.value.code == EXIT_USAGE and "at least 3 boots" in str(e.value)


def test_metric_spec_and_cell_lookup():
    assert b.metric_spec("pipe-throughput/copies=1") == ("pipe-throughput/copies=1", None)
    assert b.metric_spec("x:metrics.loops") == ("x", "metrics.loops")
    res = {"cells": [{"key": "pipe-throughput/copies=1"}, {"key": "pipe-context/copies=1"},
                     {"key": "lab:boot:x"}]}
    assert b.find_cell(res, "pipe-throughput")["key"] == "pipe-throughput/copies=1"
    with pytest.raises(Error, match="several"):
        b.find_cell(res, "pipe-")
    with pytest.raises(Error, match="no cells match"):
        b.find_cell(res, "mq")
    with pytest.raises(Error):
        b.check_metric("seed-skip-wakeups", "mq-latency", vm.DETERMINISTIC)
    b.check_metric("seed-skip-wakeups", "pipe-throughput/copies=1", vm.DETERMINISTIC)


def test_bisect_command_line_checks_before_any_build(tmp_path, capsys):
    from ipclab.cli import main
    plain = tmp_path / "plain"
    plain.mkdir()
    cases = [
        (["bisect", "--tree", str(plain), "a", "b", "--suite", "seed-skip-wakeups",
          "--metric", "pipe-throughput"], "not a git tree"),
        (["bisect", "--tree", str(plain), "a", "--suite", "seed-skip-wakeups"],
         "bisect wants BAD, --metric"),
        (["bisect", "--resume", str(tmp_path), "--suite", "x"], "drop suite"),
        (["bisect", "--resume", str(tmp_path)], "not a bisect log"),
        (["bisect", "--tree", str(plain), "a", "b", "--suite", "nosuch", "--metric", "x"],
         "not a git tree"),
    ]
    for argv, want in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert want in err and "\n" not in err, (argv, err)


def test_bisect_refuses_bad_suites_refs_and_too_few_timed_boots(tmp_path, capsys):
    import subprocess
    from ipclab.cli import main
    tree = tmp_path / "linux"
    tree.mkdir()
    (tree / "Makefile").write_text("VERSION = 6\n")
    env = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "-C", str(tree), "init", "-q"], check=True)
    subprocess.run(["git", "-C", str(tree), "add", "-A"], check=True)
    for n in (1, 2):
        subprocess.run(["git", "-C", str(tree), *env, "commit", "-q", "--allow-empty", "-m",
                        str(n)], check=True)
    base = ["bisect", "--tree", str(tree), "HEAD~1", "HEAD"]
    cases = [
        (base + ["--suite", "nosuch", "--metric", "x"], "unknown suite or workload 'nosuch'"),
        (base + ["--suite", "seed-skip-wakeups", "--metric", "mq"], "no cells match"),
        (["bisect", "--tree", str(tree), "nosuch", "HEAD", "--suite", "seed-skip-wakeups",
          "--metric", "pipe-throughput/copies=1"], "no commit named 'nosuch'"),
        (base + ["--suite", "seed-skip-wakeups", "--metric", "pipe-throughput/copies=1", "--timed",
                 "--boots", "2"], "at least 3 boots"),
        (["bisect", "--tree", str(tree), "HEAD", "HEAD~1", "--suite", "seed-skip-wakeups",
          "--metric", "pipe-throughput/copies=1", "--dry-run"], "not an ancestor"),
    ]
    for argv, want in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert want in err and "\n" not in err, (argv, err)


def test_an_arm64_bisect_builds_and_resumes_for_arm64(tmp_path):
    import subprocess
    tree = tmp_path / "linux"
    (tree / "kernel").mkdir(parents=True)
    (tree / "Makefile").write_text("VERSION = 7\n")
    (tree / "kernel" / "Kconfig").write_text("")
    env = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "-C", str(tree), "init", "-q"], check=True)
    subprocess.run(["git", "-C", str(tree), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(tree), *env, "commit", "-q", "-m", "1"], check=True)
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    p = b.Params(str(tree), head, head, "seed-skip-wakeups", "pipe-throughput/copies=1", None,
                 vm.DETERMINISTIC, 1,
                 arch="arm64")
    v = b.LabMeasure(p, tmp_path / "out").variant(head)
    assert v.arch == "arm64" and v.config_name.endswith("@arm64")
    log = b.BisectLog(tmp_path / b.LOG_NAME)
    log.start(p)
    assert log.read()[0].arch == "arm64"       # --resume builds for the same architecture


def test_each_step_is_read_from_a_comparison_record_kept_in_the_log(tmp_path):
    """GOOD -> BAD and every step are judged from a comparison record (compare's rule, its
    thresholds): the step's line says the record's verdict, the log keeps the row beside
    the measurements, and a resume still reads the measurements alone."""
    import json
    res, measure, text = run(tmp_path, SEEDS)
    lines = [json.loads(x) for x in (tmp_path / b.LOG_NAME).read_text().splitlines()]
    judged = {x["judged"]["commit"]: x["judged"] for x in lines if "judged" in x}
    assert set(judged) == set(measure.calls) - {COMMITS[0]}       # GOOD is the reference
    for c, j in judged.items():
        assert j["schema"] == record.SCHEMA and j["verdict"] == res.verdicts[c]
        assert j["row"]["rule"]["kind"] == "deterministic" and j["row"]["threshold"] > 0
        assert j["delta"] == j["row"]["delta"] == res.deltas[c]
    assert judged[COMMITS[2]]["row"]["verdict"] == "better"          # 0003: fewer insn
    assert "-2.70% against GOOD (better): new" in text
    _, done = b.BisectLog(tmp_path / b.LOG_NAME).read()
    assert set(done) == set(measure.calls)


def test_a_timed_step_at_a_threshold_of_zero_has_a_verdict():
    """--threshold 0 is the timed rule's min-change: a change of any size counts (the next
    run's design, which cannot aim at 0, is left out)."""
    good = b.Measurement("g", [[1000.0 + i for i in range(5)]] * 4 + [[1001.0] * 5],
                         unit="ns", better="lower")
    step = b.Measurement("s", [[1100.0 + i for i in range(5)]] * 4 + [[1102.0] * 5],
                         unit="ns", better="lower")
    v, d, note, rec = b.StepRule(good, vm.TIMED, 0.0, 1).verdict(step)
    assert (v, note) == (b.NEW, "") and d > 0.09
    assert b.row_of(rec)["verdict"] == "worse" and rec["min_change"] == 0
