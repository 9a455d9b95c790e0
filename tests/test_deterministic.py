# SPDX-License-Identifier: MIT
"""The deterministic mode's reading of results: clock, unit, decision rule, profiles."""

import io
import json
import math

import numpy as np
import pytest

from ipclab import Error, compare, deterministic, profile, report, suites
from ipclab.deterministic import floor
from ipclab.mode import DETERMINISTIC, TIMED, Mode


def sample(loops, task_clock_ns, clock="icount shift=0"):
    return {"metrics": {"loops_per_s": {"value": loops / (task_clock_ns / 1e9), "unit": "loops/s",
                                        "better": "higher"},
                        "loops": {"value": loops, "unit": "loops", "better": "none"}},
            "counters": {"task_clock_ns": task_clock_ns}, "env": {"clock": clock}}


def results_of(per_loop, clock="icount shift=0", loops=100000, suite="seed-skip-wakeups"):
    cell = {"key": "pipe-throughput/copies=1", "suite": suite, "workload": "pipe-throughput",
            "args": ["--copies", "1"], "status": "ok", "error": "",
            "samples": [sample(loops, v * loops, clock) for v in per_loop]}
    meta = {"clock": {"mode": "deterministic", "icount": {"shift": 0}, "cpus": 1}} \
        if clock.startswith("icount") else {}
    return {"schema": "ipclab-results/1", "id": "r", "suite": suite, "mode": "quick",
            "meta": meta, "env": {}, "cells": [cell]}


def test_clock_comes_from_the_lab_record_or_the_samples():
    assert Mode.of(results_of([1.0])).clock == "icount shift=0"
    assert Mode.of(results_of([1.0])) == DETERMINISTIC
    r = results_of([1.0])
    r["meta"] = {}
    assert Mode.of(r).clock == "icount shift=0"        # env.clock of a sample
    assert Mode.of(results_of([1.0], clock="real")).clock == "real"
    assert Mode.of({"cells": []}) == TIMED


def test_compare_refuses_results_of_different_clocks():
    with pytest.raises(Error, match="clock"):
        compare.compare_results(results_of([2748.0] * 5), results_of([2748.0] * 5, clock="real"))


def test_identical_runs_are_within_noise_and_a_few_more_instructions_are_a_change():
    same = compare.compare_results(results_of([2747.9, 2747.8, 2747.9] * 3),
                                   results_of([2747.8, 2747.9, 2747.9] * 3), floor_file="/none")
    prim = [r for r in same.judged if r.primary]
    assert [r.verdict for r in prim] == ["within noise"]
    # About 21 instructions on a 2748-instruction loop, the lab's write-cost variant.
    worse = compare.compare_results(results_of([2747.9, 2747.8, 2747.9] * 3),
                                    results_of([2768.9, 2768.8, 2768.9] * 3), floor_file="/none")
    row = [r for r in worse.judged if r.primary][0]
    assert row.verdict == "worse" and row.j.delta == pytest.approx(21.0 / 2747.9, rel=1e-3)
    assert any("no A/A floor" in w for w in worse.warnings)


def floor_file(tmp_path, deltas, base="lts"):
    pairs = [{"delta": d, "medians": [1000.0, 1000.0 * (1 + d)], "n": [9, 9], "run": "r",
              "pair": i + 1, "date": "2026-11-25"} for i, d in enumerate(deltas)]
    data = {"schema": floor.SCHEMA, "floors": [{
        "clock": "icount shift=0", "cpus": 1, "base": base, "cells": {floor.key(
            "pipe-throughput/copies=1", "counters.task_clock_ns / metrics.loops"):
            {"pairs": pairs}}}]}
    path = tmp_path / "floor.json"
    path.write_text(json.dumps(data))
    return str(path)


def on_base(res, base="lts"):
    res["meta"]["build"] = {"base": {"name": base, "release": "6.12.117"}}
    return res


def test_the_floor_raises_the_bar(tmp_path):
    path = floor_file(tmp_path, [0.01, -0.01] * 4)
    # +0.5% is a change on its spreads alone, but not against 8 A/A pairs 1% apart: their
    # bound, t(8) x 1% = 2.3%, is more than the mode is for.
    out = compare.compare_results(on_base(results_of([1000.0] * 9)),
                                  on_base(results_of([1005.0] * 9)), floor_file=path)
    row = [r for r in out.judged if r.primary][0]
    assert row.j.floor == pytest.approx(0.01, rel=1e-3) and row.j.floor_pairs == 8
    assert row.j.threshold == pytest.approx(2.306 * 0.01, rel=1e-3)
    assert row.verdict == "too noisy"
    out = compare.compare_results(on_base(results_of([1000.0] * 9)),
                                  on_base(results_of([1050.0] * 9)), floor_file=path)
    assert [r for r in out.judged if r.primary][0].verdict == "worse"
    rec = compare.outcome_record(out)
    assert rec["rows"][0]["floor_pairs"] == 8


def test_a_floor_is_the_kernel_bases_own(tmp_path):
    path = floor_file(tmp_path, [0.01, -0.01] * 4, base="lts")
    out = compare.compare_results(on_base(results_of([1000.0] * 9), "mainline"),
                                  on_base(results_of([1005.0] * 9), "mainline"),
                                  floor_file=path)
    row = [r for r in out.judged if r.primary][0]
    assert row.j.floor_pairs == 0 and row.verdict == "worse"
    (w,) = [w for w in out.warnings if "no A/A floor" in w]
    assert "kernel base mainline" in w and "has pairs for lts" in w


def test_a_floor_from_few_pairs_is_flagged(tmp_path):
    path = floor_file(tmp_path, [0.0001, -0.0002, 0.0001])
    out = compare.compare_results(on_base(results_of([1000.0] * 9)),
                                  on_base(results_of([1010.0] * 9)), floor_file=path)
    row = [r for r in out.judged if r.primary][0]
    assert row.verdict == "worse" and row.j.note == "floor from 3 pairs"
    assert any("comes from 3 pairs" in w for w in out.warnings)
    buf = io.StringIO()
    report.render_compare(out, buf)
    assert "[1] floor from 3 pairs" in buf.getvalue()


def test_judge_edge_cases():
    assert deterministic.judge([], [1.0], "lower").verdict == "no data"
    assert deterministic.judge([0.0, 0.0], [42.0], "lower").verdict == "no data"
    # Bimodal sides: the spread is the noise, and a small delta is not a change.
    j = deterministic.judge([1070, 1070, 1207] * 2, [1071, 1207, 1071] * 2, "lower")
    assert j.verdict == "too noisy" and j.spread_old == pytest.approx(137 / 1070)


def test_median_interval_leaves_out_one_outlier_from_nine_samples():
    assert [deterministic.median_ci_rank(n) for n in (6, 8, 9, 11, 20)] == [1, 1, 2, 2, 6]
    nine = [100.0] * 8 + [110.0]
    assert deterministic.spread(nine) == 0.0
    assert deterministic.spread([100.0] * 5 + [110.0]) == pytest.approx(0.1)
    assert deterministic.judge([100.0] * 6, [90.0] * 6, "higher").verdict == "worse"
    assert deterministic.judge([100.0] * 6, [90.0] * 6, "none").verdict == "changed"


def coverage_of_full_range(n):
    """P(min <= median <= max) of n samples from a continuous distribution, exactly."""
    return 1 - 2 / 2 ** n


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_too_few_samples_give_no_95_percent_interval(n):
    # The full range of 3 samples covers the median 75% of the time, of 5 samples 94%:
    # no interval of order statistics reaches 95%, so none is claimed.
    assert coverage_of_full_range(n) < 0.95
    assert deterministic.median_ci_rank(n) == 0
    assert math.isnan(deterministic.spread([100.0 + i for i in range(n)]))
    j = deterministic.judge([100.0] * n, [90.0] * 9, "higher")
    assert j.verdict == "too few samples" and math.isnan(j.threshold)
    assert deterministic.judge([100.0] * 9, [90.0] * n, "higher").verdict == "too few samples"


def test_the_median_interval_covers_at_95_percent_by_simulation():
    rng = np.random.default_rng(4)
    for n in (6, 9, 20):
        x = np.sort(rng.standard_normal((20000, n)), axis=1)
        k = deterministic.median_ci_rank(n)
        cover = np.mean((x[:, k - 1] <= 0) & (0 <= x[:, n - k]))
        assert cover >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / 20000), (n, cover)


def test_render_says_the_unit_and_the_rule():
    out = compare.compare_results(results_of([2747.9] * 9), results_of([2768.9] * 9),
                                  floor_file="/none")
    buf = io.StringIO()
    report.render_compare(out, buf)
    text = buf.getvalue()
    assert "guest instructions" in text and "insn/write+read loop" in text
    assert "2747.9" in text and "2768.9" in text and "worse" in text
    assert "Mann-Whitney" not in text
    rec = compare.outcome_record(out)
    assert rec["clock"] == "icount shift=0" and rec["rows"][0]["verdict"] == "worse"


def test_view_restates_rates_per_operation_and_drops_the_index():
    res = results_of([2748.0] * 3)
    cells = {c["key"]: c for c in res["cells"]}
    view = deterministic.view_for(suites.SKIP_WAKEUPS.views[0], cells)
    paths = {p for _, entries in view.rows for _, p in entries}
    assert "counters.task_clock_ns / metrics.loops" in paths
    assert not any("*" in p for p in paths)
    assert view.unit == "insn"


def test_unit_in_icount():
    assert deterministic.unit_in_icount("ns") == "insn"
    assert deterministic.unit_in_icount("MB/s") == "MB per 1e9 insn"
    assert deterministic.unit_in_icount("switches") == "switches"


REPORT = """\
     27014958  [k] rep_movs_alternative
      3001945  [.] __GI___libc_write
      1000651  [k] pipe_write
garbage line
"""


def test_profile_report_parsing_and_diff():
    funcs = profile.parse_report(REPORT)
    assert funcs == {"rep_movs_alternative": 27014958, "__GI___libc_write": 3001945,
                     "pipe_write": 1000651}
    base = {"cells": {"c": {"ops": 1000, "period": 10007, "functions": funcs}}}
    new_funcs = dict(funcs, pipe_write=funcs["pipe_write"] + 30 * 1000)
    new = {"cells": {"c": {"ops": 1000, "period": 10007, "functions": new_funcs}}}
    (key, rows, tb, tn), = profile.diff(base, new)
    assert rows[0][0] == "pipe_write" and rows[0][3] == pytest.approx(30.0)
    assert tn - tb == pytest.approx(30.0) and all(math.isfinite(r[4]) for r in rows)


def test_env_says_when_to_use_the_deterministic_mode():
    from ipclab import envinfo
    assert "--deterministic" in envinfo.lab_advice({"dev_kvm": False})
    assert "--deterministic" in envinfo.lab_advice({"dev_kvm": True})
    assert any("guest instructions" in w
               for w in envinfo.warnings({"clock": "icount shift=0", "dev_mqueue": True,
                                          "stress_ng": True}))


def test_plugin_windows_become_instructions_per_function(tmp_path):
    smap = tmp_path / "System.map"
    smap.write_text("ffffffff81000000 T _text\nffffffff81001000 T pipe_write\n"
                    "ffffffff81001100 t pipe_read\nffffffff81002000 D some_data\n")
    counts = tmp_path / "insncount.txt"
    # window 0: boot to the first marker; 1: the first cell; 2: between; 3: the second cell
    counts.write_text("window 0\nffffffff81001000 999\nuser 5\n"
                      "window 1\nffffffff81001000 1280\nffffffff81001010 20\n"
                      "ffffffff81001120 300\nuser 400\n"
                      "window 2\nuser 7\nwindow 3\nffffffff81001100 50\nuser 0\n")
    prof = {"order": ["a", "b"], "cells": {"a": {"ops": 10}, "b": {"ops": 5}}}
    profile.attach_counts(prof, counts, smap)
    assert prof["cells"]["a"]["functions"] == {"pipe_write": 1300, "pipe_read": 300,
                                               "[user space]": 400}
    assert profile.per_op(prof["cells"]["a"])["pipe_write"] == 130.0
    assert prof["cells"]["b"]["functions"]["pipe_read"] == 50
    assert profile.symbol_address(smap, "pipe_read") == 0xffffffff81001100
    base = {"event": "insncount", "cells": {"a": prof["cells"]["a"]}}
    new_a = dict(prof["cells"]["a"], functions=dict(prof["cells"]["a"]["functions"],
                                                    pipe_write=1510))
    buf = io.StringIO()
    report.render_profile_diff(base, {"event": "insncount", "cells": {"a": new_a}}, buf)
    assert "pipe_write" in buf.getvalue() and "+21.0" in buf.getvalue()
    assert "noise" not in buf.getvalue()


def test_plugin_source_builds(tmp_path):
    import shutil
    import subprocess
    from pathlib import Path
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    src = Path(__file__).resolve().parents[1] / "kernel" / "qemu-plugin" / "insncount.c"
    r = subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-o",
                        str(tmp_path / "p.so"), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    syms = subprocess.run(["nm", "-D", str(tmp_path / "p.so")], capture_output=True,
                          text=True).stdout
    assert "qemu_plugin_install" in syms and "qemu_plugin_version" in syms


def test_compare_json_on_the_command_line(tmp_path, capsys):
    from ipclab import cli
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(results_of([2747.9] * 9)))
    b.write_text(json.dumps(results_of([2768.9] * 9)))
    assert cli.main(["compare", str(a), str(b), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    prim = [r for r in rec["rows"] if r["primary"]]
    assert rec["clock"] == "icount shift=0" and prim[0]["verdict"] == "worse"
    c = tmp_path / "c.json"
    c.write_text(json.dumps(results_of([2747.9] * 3, clock="real")))
    assert cli.main(["compare", str(a), str(c), "--json"]) == 2
    assert "clock" in capsys.readouterr().err


def test_operations_of_a_sample():
    s = sample(100000, 2748.0 * 100000)
    assert deterministic.operations(s, "pipe-throughput") == 100000
    fp = {"metrics": {"bytes_timed": {"value": 3 * 1048576}}}
    assert deterministic.operations(fp, "fastpipe") == 3
    mq = {"metrics": {"empty_messages": {"value": 40}, "full_messages": {"value": 60}}}
    assert deterministic.operations(mq, "mq-latency") == 100
    assert deterministic.operations({}, "pipe-context") is None
