# SPDX-License-Identifier: MIT
"""show and compare as JSON and CSV: the numbers the text prints, one row per table entry or
per cell and metric, unrounded."""
import csv
import io
import json
import math

import pytest
from conftest import fixture
from test_deterministic import results_of

from ipclab import compare, fmt, results, views
from ipclab.cli import main


def run(capsys, *argv):
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def read_csv(text):
    return list(csv.DictReader(io.StringIO(text)))


def number(field):
    return float(field) if field != "" else None


def test_show_csv_has_every_entry_the_text_shows(capsys):
    text = run(capsys, "show", fixture("base.json"))
    rows = read_csv(run(capsys, "show", fixture("base.json"), "--csv"))
    entries = [r for r in rows if r["view"]]
    # One row per entry of each view the text prints, each with its published figure.
    res = results.load(fixture("base.json"))
    want = sum(len(view.rows) * len(view.columns)
               for view in (sv.view for sv in views.shown(res)))
    assert len(entries) == want
    r = next(r for r in entries if r["key"] == "pipe-sweep/w=1,r=1" and r["view"] == "throughput")
    assert (r["row"], r["column"], r["unit"], r["status"], r["n"]) == \
        ("1", "readers=1", "MB/s", "ok", "10")
    # The text rounds what the CSV keeps whole.
    cv = fmt.pct(number(r["cv"]), False)
    assert f"{fmt.num(number(r['median']))} ±{cv}  ({r['published']})" in text
    assert (r["published"], r["published_as"]) == ("1119 -> 1354", "baseline -> patched")
    # Without a peers run there is no peer figure (tests/test_peers.py has one with it).
    assert not any(r["peer"] for r in entries)


def test_show_json_and_csv_hold_the_same_numbers(capsys):
    rec = json.loads(run(capsys, "show", fixture("base.json"), "--json"))
    rows = read_csv(run(capsys, "show", fixture("base.json"), "--csv"))
    assert (rec["id"], rec["clock"]) == ("base", "real")
    assert len(rec["rows"]) == len(rows)
    for j, c in zip(rec["rows"], rows):
        assert c["key"] == j["key"] and c["path"] == j["path"]
        for k in ("median", "iqr", "cv"):
            assert number(c[k]) == j[k]


def test_show_csv_of_cells_outside_the_views(capsys, tmp_path):
    res = json.load(open(fixture("base.json")))
    for c in res["cells"]:
        c["suite"] = "adhoc"
    path = tmp_path / "adhoc.json"
    path.write_text(json.dumps(res))
    rows = read_csv(run(capsys, "show", str(path), "--csv"))
    assert rows and all(r["view"] == "" and r["suite"] == "adhoc" for r in rows)
    assert {r["path"] for r in rows} >= {"metrics.throughput", "latency.write.mean"}


def test_show_record_under_icount_gives_the_spread_the_table_prints():
    rec = views.record(results_of([2747.9, 2747.8, 2747.9, 2748.0, 2747.9, 2747.9]))
    assert rec["clock"] == "icount shift=0"
    row = next(r for r in rec["rows"] if r["view"])
    assert row["spread"] is not None and row["published"] is None
    assert row["median"] == pytest.approx(2747.9)


def test_compare_csv_is_the_json_rows(capsys):
    base, new = fixture("base.json"), fixture("new.json")
    rec = json.loads(run(capsys, "compare", base, new, "--json"))
    rows = read_csv(run(capsys, "compare", base, new, "--csv"))
    assert len(rows) == len(rec["rows"]) > 0
    for j, c in zip(rec["rows"], rows):
        assert (c["key"], c["path"], c["unit"], c["verdict"]) == \
            (j["key"], j["path"], j["unit"], j["verdict"])
        assert c["primary"] == ("true" if j["primary"] else "false")
        assert [int(c["n_old"]), int(c["n_new"])] == j["n"]
        assert [number(c["ci_low"]), number(c["ci_high"])] == j["ci"]
        for k in ("old", "new", "delta", "p_holm", "mde"):
            assert number(c[k]) == j[k]


def test_compare_csv_matches_the_table(capsys):
    base, new = fixture("base.json"), fixture("new.json")
    text = run(capsys, "compare", base, new)
    rows = read_csv(run(capsys, "compare", base, new, "--csv"))
    r = next(r for r in rows if r["key"] == "pipe-sweep/w=1,r=1" and r["primary"] == "true")
    line = next(l for l in text.splitlines()
                if l.split()[:3] == ["pipe-sweep/w=1,r=1", "throughput", "MB/s"])
    for field in (fmt.num(number(r["old"])), fmt.num(number(r["new"])),
                  fmt.pct(number(r["delta"])), r["verdict"]):
        assert field in line


def test_deterministic_compare_csv(capsys, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(results_of([2747.9, 2747.8, 2747.9] * 3)))
    b.write_text(json.dumps(results_of([2768.9, 2768.8, 2768.9] * 3)))
    outcome = compare.compare_results(json.loads(a.read_text()), json.loads(b.read_text()))
    rows = read_csv(fmt.csv_table(compare.outcome_record(outcome)["rows"]))
    prim = [r for r in rows if r["primary"] == "true"]
    assert prim and prim[0]["verdict"] == "worse"
    assert {"spread_old", "spread_new", "threshold"} <= set(rows[0])


@pytest.mark.parametrize("argv", [["show", fixture("base.json"), "--json", "--csv"],
                                  ["compare", fixture("base.json"), fixture("new.json"),
                                   "--json", "--csv"]])
def test_one_export_at_a_time(argv, capsys):
    assert main(argv) == 2
    assert "not allowed with" in capsys.readouterr().err


def test_csv_table_flattens_a_record():
    text = fmt.csv_table([
        {"key": "a", "n": [3, 4], "ci": [0.9, 1.1], "published": [1, 2], "primary": True,
         "p": math.nan},
        {"key": "b", "n": 5, "primary": False, "p": None, "extra": "x"},
    ])
    rows = read_csv(text)
    assert text.splitlines()[0] == "key,n_old,n_new,ci_low,ci_high,published,primary,p,n,extra"
    assert rows[0]["published"] == "1 -> 2" and rows[0]["p"] == "" and rows[0]["primary"] == "true"
    assert (rows[1]["n"], rows[1]["extra"], rows[1]["n_old"]) == ("5", "x", "")
