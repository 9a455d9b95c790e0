# SPDX-License-Identifier: MIT
"""The cost model's reading of the plugin and its rows in a deterministic comparison."""

import io
import json
import math

import pytest

from ipclab import compare, deterministic, profile, report
from ipclab.deterministic import cost
from ipclab.deterministic import floor as aa_floor

FIELDS = " ".join(cost.FIELDS)
MODEL = {"weights": {"locked": 7.0, "mfence": 60.0, "lfence": 18.0, "sfence": 1.0,
                     "irqflag": 0.0, "l1_miss": 20.0, "ll_miss": 500.0},
         "cache": {"l1d": {"size": 32768, "ways": 8}, "ll": {"size": 1048576, "ways": 8}},
         "cpu": {"model": "Test CPU"}, "calibrated": "2026-11-25T00:00:00Z"}


def counts_line(insns, locked, mf=0, lf=0, sf=0, irq=0, loads=0, stores=0, l1=0, ll=0):
    return f"{insns} {locked} {mf} {lf} {sf} {irq} {loads} {stores} {l1} {ll}"


def test_estimate_is_instructions_plus_weighted_events():
    c = dict(zip(cost.FIELDS, (1000, 2, 1, 3, 0, 4, 300, 200, 10, 1)))
    assert cost.estimate(c, MODEL) == 1000 + 2 * 7 + 60 + 3 * 18 + 10 * 20 + 500
    # Without the cache model's fields there is no estimate, rather than one without misses.
    assert cost.estimate({k: c[k] for k in cost.FIELDS[:8]}, MODEL) is None
    assert cost.estimate(c, None) is None


def test_plugin_options_follow_the_model():
    assert cost.plugin_options(MODEL) == ["l1_size=32768", "l1_ways=8",
                                               "ll_size=1048576", "ll_ways=8"]


def write_counts(tmp_path, text):
    p = tmp_path / "insncount.txt"
    p.write_text(f"# {cost.PLUGIN_SCHEMA} fields: {FIELDS}\n# cache ...\n" + text)
    return p


def test_sample_windows_attach_to_the_samples_that_name_them(tmp_path):
    path = write_counts(tmp_path,
                        f"sample 1 {counts_line(5000, 30, loads=900)} {counts_line(4000, 29)}\n"
                        f"sample 2 {counts_line(77, 0)} {counts_line(7, 0)}\n"
                        f"sample 3 {counts_line(6000, 40, lf=10, l1=5)} {counts_line(1, 1)}\n")
    res = {"cells": [{"key": "pipe-throughput/copies=1", "workload": "pipe-throughput",
                      "samples": [
                          {"metrics": {"loops": {"value": 10}}, "counters": {"window": 1}},
                          {"metrics": {"loops": {"value": 20}}, "counters": {"window": 3}},
                          {"metrics": {"loops": {"value": 20}}, "counters": {}},
                          {"metrics": {"loops": {"value": 20}}, "counters": {"window": 9}}]}]}
    costs = cost.sample_costs(res, path, MODEL)
    assert set(costs) == {(0, 0), (0, 1)}          # no window named, or none counted: none
    first = costs[(0, 0)]
    assert first["ops"] == 10 and first["window"] == 1
    assert first["atomics"] == 30 and first["loads"] == 900 and first["fences"] == 0
    assert first["est_cycles"] == 5000 + 30 * 7
    assert costs[(0, 1)]["fences"] == 10 and costs[(0, 1)]["lfences"] == 10
    assert costs[(0, 1)]["est_cycles"] == 6000 + 40 * 7 + 10 * 18 + 5 * 20


def test_windows_the_plugin_missed_are_refused(tmp_path):
    from ipclab import Error
    # Two samples: four marks; the plugin closes windows 1-3 (the fourth stays open).
    lines = "".join(f"sample {n} {counts_line(10, 0)} {counts_line(5, 0)}\n" for n in (1, 2, 3))
    path = write_counts(tmp_path, lines)
    res = {"cells": [{"workload": "pipe-throughput", "samples": [
        {"metrics": {"loops": {"value": 10}}, "counters": {"window": 1}},
        {"metrics": {"loops": {"value": 10}}, "counters": {"window": 3}}]}]}
    assert len(cost.sample_costs(res, path, MODEL, marks=4)) == 2
    # A close marker the plugin never saw: each window then runs from open to open.
    path = write_counts(tmp_path, lines.replace("sample 3", "#"))
    with pytest.raises(Error, match="4 window marks but the plugin closed 2"):
        cost.sample_costs(res, path, MODEL, marks=4)


def test_first_format_reads_as_instructions(tmp_path):
    p = tmp_path / "old.txt"
    p.write_text("window 0\nffffffff81001000 999\nuser 5\n")
    fields, samples, windows = cost.read_counts(p)
    assert fields == ("insns",) and samples == {}
    assert windows[0] == {0xffffffff81001000: {"insns": 999}, "user": {"insns": 5}}


def test_a_count_that_is_zero_on_both_sides_is_no_change():
    j = cost.judge_counts([0.0] * 9, [0.0] * 9)
    assert j.verdict == "within noise" and j.delta == 0
    j = cost.judge_counts([0.0] * 9, [1.0] * 9)
    assert j.verdict == "worse" and math.isnan(j.delta)
    # Most samples still at zero: the median interval reaches zero, no change claimed.
    assert cost.judge_counts([0.0] * 9, [0.0] * 7 + [1.0] * 2).verdict == "within noise"
    # Otherwise deterministic.judge's rule, relative: +1 atomic on 12 is a change.
    assert cost.judge_counts([12.0] * 9, [13.0] * 9).verdict == "worse"
    assert cost.judge_counts([12.0] * 9, [12.0] * 9).verdict == "within noise"


def results_with_costs(atomics_per_loop, fences=0.0, loops=1000, per_loop=2748.0):
    samples = []
    for i, a in enumerate(atomics_per_loop):
        insns = per_loop * loops
        counts = {"ops": loops, "window": 2 * i + 1, "insns": insns, "atomics": a * loops,
                  "fences": fences * loops, "irqflags": 2 * loops, "loads": 700 * loops,
                  "stores": 500 * loops, "l1_misses": 3 * loops, "ll_misses": 0,
                  "est_cycles": insns + 7 * a * loops + 20 * 3 * loops}
        samples.append({"metrics": {"loops": {"value": loops, "unit": "loops",
                                              "better": "none"},
                                    "loops_per_s": {"value": 1.0, "unit": "loops/s",
                                                    "better": "higher"}},
                        "counters": {"task_clock_ns": insns}, "env": {"clock": "icount shift=0"},
                        "cost": counts})
    cell = {"key": "pipe-throughput/copies=1", "suite": "icount-check",
            "workload": "pipe-throughput", "args": [], "status": "ok", "error": "",
            "samples": samples}
    return {"schema": "ipclab-results/1", "id": "r", "suite": "icount-check", "mode": "quick",
            "meta": {"clock": {"mode": "deterministic", "icount": {"shift": 0}, "cpus": 1},
                     "cost_model": cost.model_record(MODEL)},
            "env": {}, "cells": [cell]}


def test_one_more_atomic_per_loop_is_a_secondary_change_and_in_the_record():
    out = compare.compare_results(results_with_costs([12.0] * 9),
                                  results_with_costs([13.0] * 9), floor_file="/none")
    rows = {r.label: r for r in out.judged if r.model}
    assert set(rows) >= {"atomics", "fences", "irq-flag changes", "loads", "stores",
                         "L1d misses", "LL misses", "est. cycles"}
    assert all(not r.primary for r in rows.values())
    assert rows["atomics"].verdict == "worse"
    assert rows["atomics"].j.new.median - rows["atomics"].j.old.median == pytest.approx(1.0)
    assert rows["fences"].verdict == "within noise"
    assert rows["atomics"].unit == "/write+read loop"
    rec = compare.outcome_record(out)
    atom = [r for r in rec["rows"] if r.get("label") == "atomics"][0]
    assert atom["model"] is True and atom["diff"] == pytest.approx(1.0)
    assert atom["path"] == "cost.atomics / cost.ops"
    assert "not a measurement" in rec["cost_model"]["caveat"]
    json.dumps(rec)             # plain JSON: no NaN or Infinity


def test_render_says_it_is_a_model():
    out = compare.compare_results(results_with_costs([12.0] * 9),
                                  results_with_costs([13.0] * 9), floor_file="/none")
    buf = io.StringIO()
    report.render_compare(out, buf)
    text = buf.getvalue()
    assert "Cost model, per operation" in text and "a model, not a measurement" in text
    line = [ln for ln in text.splitlines() if "atomics /write+read loop" in ln][0]
    assert "12.00" in line and "13.00" in line and "+1.00" in line and "worse" in line
    # The cost rows are not repeated among the other secondary metrics.
    assert text.count("atomics /write+read loop") == 1


def test_different_models_on_the_two_sides_are_warned_about():
    a, b = results_with_costs([12.0] * 9), results_with_costs([12.0] * 9)
    b["meta"]["cost_model"] = dict(b["meta"]["cost_model"],
                                   weights=dict(MODEL["weights"], locked=9.0))
    out = compare.compare_results(a, b, floor_file="/none")
    assert any("different cost models" in w for w in out.warnings)


def test_floors_of_cost_rows_come_from_the_floor_file(tmp_path):
    # 8 A/A pairs of the atomics row 0.5% apart: rms 0.5%, and the cell's 8 cost rows share
    # its 5% level, so the bound is t(8, 1 - 0.025/8) x 0.5%, about 1.9%.
    path = cost.row_path("atomics")
    data = {"floors": []}
    pairs = [aa_floor.AAPair("pipe-throughput/copies=1", path, (12.0, 12.0 * (1 + d)), (9, 9),
                           "aa", i, "2026-11-25") for i, d in enumerate((0.005, -0.005) * 4)]
    aa_floor.append(data, "icount shift=0", 1, "mainline", pairs, {})
    fl = tmp_path / "floor.json"
    fl.write_text(aa_floor.dumps(data))
    base, new = results_with_costs([12.0] * 9), results_with_costs([12.1] * 9)
    for r in (base, new):
        r["meta"]["build"] = {"base": {"name": "mainline"}}
    out = compare.compare_results(base, new, floor_file=str(fl))
    row = [r for r in out.judged if r.label == "atomics"][0]
    assert row.j.floor_pairs == 8 and row.j.floor == pytest.approx(0.005, rel=0.01)
    assert 0.015 < row.j.threshold < 0.025 and row.verdict == "within noise"
    row = [r for r in compare.compare_results(
        base, results_with_costs([12.3] * 9), floor_file=str(fl)).judged
        if r.label == "atomics"][0]
    assert row.verdict == "worse"                                   # +2.5%
    out = compare.compare_results(results_with_costs([12.0] * 9),
                                  results_with_costs([12.1] * 9), floor_file="/none")
    assert [r for r in out.judged if r.label == "atomics"][0].verdict == "worse"


def test_profile_costs_by_function(tmp_path):
    smap = tmp_path / "System.map"
    smap.write_text("ffffffff81000000 T _text\nffffffff81001000 T pipe_write\n"
                    "ffffffff81001100 t pipe_read\n")
    base = write_counts(tmp_path, "window 0\nuser " + counts_line(1, 0) + "\n"
                        "window 1\nffffffff81001000 " + counts_line(1200, 20, loads=300) + "\n"
                        "ffffffff81001120 " + counts_line(300, 10) + "\n"
                        "user " + counts_line(400, 0) + "\n")
    pb = {"event": "insncount", "order": ["a"], "cells": {"a": {"ops": 10}}}
    profile.attach_counts(pb, base, smap, MODEL)
    cell = pb["cells"]["a"]
    assert cell["functions"]["pipe_write"] == 1200
    assert cell["costs"]["pipe_write"]["atomics"] == 20
    assert cell["costs"]["pipe_read"]["est_cycles"] == 300 + 10 * 7
    new = write_counts(tmp_path, "window 0\nuser " + counts_line(1, 0) + "\n"
                       "window 1\nffffffff81001000 " + counts_line(1210, 30, loads=310) + "\n"
                       "ffffffff81001120 " + counts_line(300, 10) + "\n"
                       "user " + counts_line(400, 0) + "\n")
    pn = {"event": "insncount", "order": ["a"], "cells": {"a": {"ops": 10}}}
    profile.attach_counts(pn, new, smap, MODEL)
    (key, names, rows, (tb, tn)), = profile.cost_diff(pb, pn)
    assert key == "a" and names[:2] == ["insns", "atomics"]
    top = dict(rows)["pipe_write"]
    assert top["atomics"] == pytest.approx(1.0) and top["insns"] == pytest.approx(1.0)
    assert tb["atomics"] == pytest.approx(3.0) and tn["atomics"] == pytest.approx(4.0)
    buf = io.StringIO()
    report.render_profile_diff(pb, pn, buf)
    text = buf.getvalue()
    assert "Where the costs went" in text and "not a measurement" in text
    assert [ln for ln in text.splitlines() if ln.strip().startswith("pipe_write")
            and "+1.00" in ln]


def test_a_count_that_moves_under_one_event_in_a_hundred_operations_is_no_change():
    # A fence some other task ran once in a window of 10^4 loops, on one side only.
    base = [0.0001] * 9
    new = [0.0002] * 9
    assert cost.judge_counts(base, new).verdict == "within noise"
    assert cost.judge_counts([0.0] * 9, new).verdict == "within noise"
    # One more event per operation is a change, from zero too.
    assert cost.judge_counts([5.0] * 9, [6.0] * 9).verdict == "worse"
    assert cost.judge_counts([0.0] * 9, [1.0] * 9).verdict == "worse"


def test_arm64_counts_are_counted_not_priced(tmp_path):
    """An aarch64 guest's file: atomics are LSE atomics plus store-exclusives, fences every
    barrier, irq-flag changes DAIF writes, each barrier kind its own row, no est. cycles
    (no arm64 weights), and the caveat says so."""
    names = cost.A64_FIELDS[:13]       # memory=off: the static fields only
    vals = (5000, 3, 2, 2, 4, 5, 1, 0, 2, 0, 1, 1, 6)
    p = tmp_path / "insncount.txt"
    p.write_text(f"# {cost.PLUGIN_SCHEMA} fields: {' '.join(names)}\n"
                 f"sample 1 {' '.join(map(str, vals))} {' '.join(map(str, vals))}\n")
    fields, samples, _ = cost.read_counts(p)
    assert fields == names
    d = cost.derived(samples[1], MODEL)
    assert d["atomics"] == 3 + 2 and d["fences"] == 1 + 0 + 2 + 0 + 1 + 1
    assert d["irqflags"] == 6 and d["dmb_ish"] == 1 and d["dmb_ishst"] == 2
    assert (d["acquire"], d["release"]) == (4, 5)
    assert "est_cycles" not in d
    assert cost.is_arm64(d) and not cost.is_arm64(cost.FIELDS)
    assert "counted, not priced" in cost.caveat(MODEL, arm64=True)
    cell = {"workload": "pipe-throughput",
            "samples": [{"cost": d}, {"cost": d, "warmup": True}]}
    rows = [name for _, name, _ in cost.row_paths(cell)]
    assert rows[:3] == ["atomics", "fences", "dmb_ish"] and "est_cycles" not in rows
