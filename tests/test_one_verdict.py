# SPDX-License-Identifier: MIT
"""One verdict: a pair of runs given to every reader of a comparison (`compare --json`, the
text of `compare`, `ab`'s output, the Markdown report, the plot's colours) gets the same
verdict per row from each, and each reads it from the record (compare/record.py), not from
the rules: a row whose rule says otherwise after the record was built still prints the
record's verdict."""
import io
import json
import types

import pytest
from conftest import fixture
from test_deterministic import results_of

from ipclab import compare, report, results
from ipclab.cli import main
from ipclab.report import lab as labreport


def timed_pair(tmp_path):
    return fixture("base.json"), fixture("new.json")


def det_pair(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(results_of([2747.9, 2747.8, 2747.9] * 3)))
    b.write_text(json.dumps(results_of([2768.9, 2768.8, 2768.9] * 3)))
    return a, b


def primary(rec):
    return [r for r in rec["rows"] if r["primary"] and not r.get("model")]


def verdicts_in_text(text, rows):
    """Each row's verdict as the text table prints it: the cell of the line of that row."""
    found = {}
    for r in rows:
        # A cell has one primary row: its line is the one of that cell with a verdict.
        line = next(ln for ln in text.splitlines() if ln.split()[:1] == [r["key"]]
                    and "(secondary)" not in ln)
        found[(r["key"], r["path"])] = next(
            (v for v in sorted({x["verdict"] for x in rows} | {"better", "worse",
             "inconclusive", "within noise"}, key=len, reverse=True) if v in line), None)
    return found


def abrun(outcome, record):
    return types.SimpleNamespace(
        names={"A": "base", "B": "new"}, builds={"A": {}, "B": {}}, suite="s", boots=2,
        accel="kvm", clock=types.SimpleNamespace(mode="real", deterministic=False),
        outcome=outcome, record=record, profiles=None, failures=[])


@pytest.mark.parametrize("pair", [timed_pair, det_pair])
def test_every_reader_gives_the_records_verdict(pair, tmp_path, capsys):
    a, b = pair(tmp_path)
    assert main(["compare", str(a), str(b), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    want = {(r["key"], r["path"]): r["verdict"] for r in primary(rec)}
    assert want and all(want.values())

    assert main(["compare", str(a), str(b)]) == 0
    assert verdicts_in_text(capsys.readouterr().out, primary(rec)) == want

    outcome = compare.compare_results(results.load(a), results.load(b), floor_file="/none")
    buf = io.StringIO()
    labreport.ab(abrun(outcome, compare.outcome_record(outcome)), buf)
    assert verdicts_in_text(buf.getvalue(), primary(rec)) == want

    md = report.write_report([(a, results.load(a)), (b, results.load(b))], tmp_path / "r",
                             outcomes=[outcome]).read_text()
    assert verdicts_in_text(md, primary(rec)) == want
    assert rec["overall"] == compare.outcome_record(outcome)["overall"]


@pytest.mark.parametrize("pair", [timed_pair, det_pair])
def test_readers_print_the_record_not_the_rule(pair, tmp_path):
    """Build the record, then make every rule's own verdict say something else: the text
    (compare and ab) must still show the record's."""
    a, b = pair(tmp_path)
    outcome = compare.compare_results(results.load(a), results.load(b), floor_file="/none")
    rec = compare.outcome_record(outcome)
    want = {(r["key"], r["path"]): r["verdict"] for r in primary(rec)}
    for r in outcome.rows:
        r.verdict = "RULE-SAID-OTHERWISE"
    for r in outcome.judged:
        r.j.verdict = "RULE-SAID-OTHERWISE"
    buf = io.StringIO()
    report.render_compare(outcome, buf, record=rec)
    labreport.ab(abrun(outcome, rec), buf)
    assert "RULE-SAID-OTHERWISE" not in buf.getvalue()
    assert verdicts_in_text(buf.getvalue(), primary(rec)) == want
