# SPDX-License-Identifier: MIT
"""Compute once, print from the record: a run with two sides computes its comparison once
for the text and the report, a deterministic compare parses the floor file once, `compare
--json` holds what the text shows (the seed views' changes, the sweep's geometric mean, the
floor's source), and the cost caveat is the samples' model's, not the file on disk's."""
import io
import json

import pytest
from conftest import FAKE_ENGINE, fixture
from test_deterministic import floor_file, on_base, results_of
from test_sides import shifted_engine

from ipclab import compare, fmt, report, results
from ipclab.deterministic import cost, floor
from ipclab.cli import main


def test_a_run_with_two_sides_compares_once(fake_engine, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    b = shifted_engine(tmp_path, 1.2)
    calls = []
    real = compare.compare_results

    def counted(*a, **k):
        calls.append(a)
        return real(*a, **k)
    monkeypatch.setattr(compare, "compare_results", counted)
    assert main(["run", "mq-latency", "--reps", "3", "--warmups", "0", "-o", "ab",
                 "--side", f"a={FAKE_ENGINE}", "--side", f"b={b}", "--quiet",
                 "--report-dir", "rep"]) == 0
    out = capsys.readouterr().out
    assert len(calls) == 1
    # The text and the report print the same comparison.
    md = (tmp_path / "rep" / "report.md").read_text()
    line = next(ln for ln in out.splitlines() if "empty_send_ns" in ln)
    assert line in md


def test_a_deterministic_compare_parses_the_floor_file_once(tmp_path, monkeypatch):
    path = floor_file(tmp_path, [0.01, -0.01] * 4, base="lts")
    reads = []
    real = floor.read

    def counted(p=floor.FLOOR_FILE):
        reads.append(p)
        return real(p)
    monkeypatch.setattr(floor, "read", counted)
    # mainline has no floor in the file: the warning names the bases it has, from the same
    # parse as the (absent) floors.
    out = compare.compare_results(on_base(results_of([1000.0] * 9), "mainline"),
                                  on_base(results_of([1005.0] * 9), "mainline"),
                                  floor_file=path)
    assert reads == [path]
    assert any("has pairs for lts" in w for w in out.warnings)


def test_compare_json_holds_what_the_text_shows(capsys):
    assert main(["compare", fixture("base.json"), fixture("new.json")]) == 0
    text = capsys.readouterr().out
    assert main(["compare", fixture("base.json"), fixture("new.json"), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    (tput,) = [v for v in rec["views"] if v["view"] == "throughput"]
    assert tput["suite"] == "seed-pipe-prealloc" and len(tput["entries"]) == 9
    e = next(e for e in tput["entries"] if (e["row"], e["column"]) == ("1", "readers=1"))
    assert e["key"] == "pipe-sweep/w=1,r=1" and e["change"] is True
    cell = (f"{fmt.num(e['old'])} -> {fmt.num(e['new'])} ({fmt.pct(e['delta'])})*"
            f" [seed {fmt.pct(e['seed_change'], True)}]")
    assert cell in text
    g = tput["geomean"]
    assert g["over"] == "point" and g["can_claim"]
    assert (f"geometric mean of ratios: {fmt.pct(g['delta'])}, 95% CI [{fmt.pct(g['ci'][0])},"
            f" {fmt.pct(g['ci'][1])}] (t over the points) [seed {fmt.pct(tput['seed_geomean'])}]"
            in text)
    assert rec["floor_source"] is None and rec["notes"] == {"old": "", "new": ""}


def test_the_floor_source_is_in_the_record(tmp_path):
    path = floor_file(tmp_path, [0.01, -0.01] * 4)
    out = compare.compare_results(on_base(results_of([1000.0] * 9)),
                                  on_base(results_of([1050.0] * 9)), floor_file=path)
    rec = compare.outcome_record(out)
    assert rec["floor_source"]["path"] == path and rec["floor_source"]["base"] == "lts"
    assert rec["notes"]["old"].startswith("deterministic clock (icount shift=0)")


def test_the_cost_caveat_is_the_samples_model(monkeypatch):
    from test_costmodel import results_with_costs
    a, b = results_with_costs([12.0] * 9), results_with_costs([13.0] * 9)
    for r in (a, b):
        r["meta"]["cost_model"] = dict(r["meta"]["cost_model"], cpu="Fitted CPU",
                                       calibrated="2026-01-02T00:00:00Z",
                                       host_cpu="Counting CPU")

    def no_disk():
        raise AssertionError("the caveat read the model file on disk")
    monkeypatch.setattr(cost, "load_model", no_disk)
    monkeypatch.setattr(cost.envinfo, "cpu_model", lambda: "Printing CPU")
    out = compare.compare_results(a, b, floor_file="/none")
    buf = io.StringIO()
    report.compare.render_cost_rows(out, buf)
    note = next(ln for ln in buf.getvalue().splitlines() if ln.startswith("note: "))
    assert "(Fitted CPU, 2026-01-02)" in note and "counted on a Counting CPU host" in note
    assert "Printing CPU" not in note
    assert compare.outcome_record(out)["cost_model"]["caveat"] == note[len("note: "):]
    # Samples counted on the CPU the weights were fitted on: no word about refitting.
    a["meta"]["cost_model"]["host_cpu"] = "Fitted CPU"
    assert "refit" not in cost.caveat(a["meta"]["cost_model"])
    assert cost.caveat(None) == cost.CAVEAT
    assert "without a model file" in cost.caveat({"weights": None, "memory": "cache"})
