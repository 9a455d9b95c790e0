# SPDX-License-Identifier: MIT
"""One verdict: a pair of runs given to every consumer of a comparison (`compare --json`, the
text of `compare`, `ab`'s output and exit status, the Markdown report, the plot's colours,
and `bisect`'s decision of a step) gets the same verdict per row from each, and each reads
it from the record (compare/record.py), not from the rules: a row whose rule says otherwise
after the record was built still prints the record's verdict."""
import io
import json
import types

import numpy as np
import pytest
from conftest import fixture
from test_compare_units import results_of as boots_results
from test_deterministic import results_of

from ipclab import compare, metrics, report, results
from ipclab.cli import main
from ipclab.compare import record
from ipclab.compare.cells import units_of
from ipclab.lab import bisect
from ipclab.mode import TIMED, Mode
from ipclab.report import lab as labreport
from ipclab.report import plot

CHANGES = ("better", "worse", "changed")


def timed_pair(tmp_path):
    return fixture("base.json"), fixture("new.json")


def timed_boots_pair(tmp_path):
    """One cell, 5 boots a side, 8% more loops/s on NEW: what `ab` pools and a timed
    bisect step compares."""
    rng = np.random.default_rng(3)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path, shift in ((a, 1.0), (b, 1.08)):
        side = [list(1000 * shift * np.exp(rng.normal(0, 0.01))
                     * np.exp(rng.normal(0, 0.005, 9))) for _ in range(5)]
        path.write_text(json.dumps(boots_results(side)))
    return a, b


def det_pair(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(results_of([2747.9, 2747.8, 2747.9] * 3)))
    b.write_text(json.dumps(results_of([2768.9, 2768.8, 2768.9] * 3)))
    return a, b


def det_aa_pair(tmp_path):
    """Two boots of one kernel: medians 0.002% apart, within the noise."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(results_of([2747.9, 2747.8, 2747.9] * 3)))
    b.write_text(json.dumps(results_of([2747.85, 2747.95, 2748.0] * 3)))
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
        accel="kvm", clock=TIMED,
        outcome=outcome, record=record, profiles=None, failures=[])


def colour_class(colour):
    return {"tab:green": "better", "tab:red": "worse"}.get(colour, "other")


def plotted_verdicts(monkeypatch, outcome, rec, out_dir, given=True):
    """The verdict each primary row's bar colour names in the compare plot (green better,
    red worse, anything else neither): the colours barh was handed."""
    drawn = []

    def barh(self, y, width, *args, **kw):
        drawn.append(kw.get("edgecolor") or kw.get("color"))
        return real(self, y, width, *args, **kw)
    real = plot.plt.Axes.barh
    monkeypatch.setattr(plot.plt.Axes, "barh", barh)
    assert plot.compare_plot(outcome, out_dir, record=rec if given else None)
    monkeypatch.setattr(plot.plt.Axes, "barh", real)
    # The deterministic plot draws its primary rows in one call, the timed one every row.
    colours = drawn[0] if outcome.judged else drawn
    rows = [r for r in rec["rows"] if r["delta"] is not None and not r.get("model")
            and (r["primary"] or not outcome.judged)]
    assert len(colours) == len(rows)
    return {(r["key"], r["path"]): colour_class(c) for r, c in zip(rows, colours)
            if r["primary"]}


def want_classes(want):
    return {k: v if v in ("better", "worse") else "other" for k, v in want.items()}


def side_boots(res, key, path):
    """A results file's values of one cell's metric by boot, as a bisect measures a commit."""
    cell = next(c for c in res["cells"] if c["key"] == key)
    by_boot = units_of(cell, "lab_boot")
    boots = [metrics.metric_values({"samples": v}, path) for _, v in sorted(by_boot.items())] \
        if by_boot else [metrics.metric_values(cell, path)]
    return cell, boots


def bisect_steps(rec, a, b):
    """{row: (the step's record's verdict, bisect's decision with BAD's direction that of
    the row's change, and against it)}: GOOD is the pair's base, the step its new side."""
    base, new = results.load(a), results.load(b)
    mode = Mode.named(rec["mode"])
    out = {}
    for row in primary(rec):
        cell, good_boots = side_boots(base, row["key"], row["path"])
        _, step_boots = side_boots(new, row["key"], row["path"])
        fields = dict(unit=row["unit"], key=row["key"], path=row["path"],
                      better=bisect.better_of(cell, row["path"], mode))
        good = bisect.Measurement("GOOD", good_boots, **fields)
        step = bisect.Measurement("STEP", step_boots, **fields)
        # The timed rule's min-change is the bisect threshold; the deterministic rule has
        # none, and a threshold of 0 leaves the decision to the verdict.
        threshold = 0.0 if mode.deterministic else rec["min_change"]
        sign = 1 if row["delta"] > 0 else -1
        said = [bisect.StepRule(good, mode, threshold, d).verdict(step) for d in (sign, -sign)]
        out[(row["key"], row["path"])] = (bisect.row_of(said[0][3])["verdict"],
                                          said[0][0], said[1][0], said[1][2])
    return out


# Changes both ways, timed over samples and over boots, deterministic, and no change.
PAIRS = [timed_pair, timed_boots_pair, det_pair, det_aa_pair]


@pytest.mark.parametrize("pair", PAIRS)
def test_every_reader_gives_the_records_verdict(pair, tmp_path, capsys, monkeypatch):
    a, b = pair(tmp_path)
    assert main(["compare", str(a), str(b), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    want = {(r["key"], r["path"]): r["verdict"] for r in primary(rec)}
    assert want and all(want.values())

    assert main(["compare", str(a), str(b)]) == 0
    assert verdicts_in_text(capsys.readouterr().out, primary(rec)) == want

    outcome = compare.compare_results(results.load(a), results.load(b), floor_file="/none")
    # The same verdicts as `compare --json` (its warnings name its floor file).
    assert [r["verdict"] for r in compare.outcome_record(outcome)["rows"]] == \
        [r["verdict"] for r in rec["rows"]]
    assert compare.outcome_record(outcome)["overall"] == rec["overall"]
    buf = io.StringIO()
    status = labreport.ab(abrun(outcome, compare.outcome_record(outcome)), buf)
    assert verdicts_in_text(buf.getvalue(), primary(rec)) == want
    assert status == record.exit_status(rec) == record.EXIT_STATUSES[
        "no change" if rec["overall"]["verdict"].startswith("no change")
        else rec["overall"]["verdict"]]
    buf = io.StringIO()
    assert labreport.ab(abrun(outcome, rec), buf, as_json=True) == status
    assert json.loads(buf.getvalue())["overall"] == rec["overall"]

    md = report.write_report([(a, results.load(a)), (b, results.load(b))], tmp_path / "r",
                             outcomes=[outcome]).read_text()
    assert verdicts_in_text(md, primary(rec)) == want
    assert plotted_verdicts(monkeypatch, outcome, rec, tmp_path / "p") == want_classes(want)

    if rec["mode"] == "timed" and rec["family"] > 1:
        return      # a bisect follows one metric: its family is that row alone
    for key, (said, with_bad, against_bad, note) in bisect_steps(rec, a, b).items():
        assert said == want[key], key
        moved = want[key] in CHANGES
        assert with_bad == (bisect.NEW if moved else bisect.OLD), key
        assert against_bad == bisect.OLD, key
        assert (note == "moved the other way") == moved, key


def test_abs_exit_status_is_the_overall_verdict():
    """Every overall verdict has its own status, none of them 1 (a failed boot) or 2 (bad
    input): a script tells a change from a failure by the status alone."""
    for verdicts, want in ((["within ±2%"], 0), (["within noise"], 0), (["better"], 3),
                           (["worse", "within noise"], 4), (["better", "worse"], 5),
                           (["changed"], 5), (["inconclusive"], 6), ([], 6),
                           (["within ±2%", "inconclusive"], 6)):
        rec = {"overall": record.overall(verdicts, "±2%")}
        assert record.exit_status(rec) == want, verdicts
    assert not {1, 2} & set(record.EXIT_STATUSES.values())


@pytest.mark.parametrize("pair", PAIRS)
def test_readers_print_the_record_not_the_rule(pair, tmp_path, monkeypatch):
    """Build the record, then make every rule's own verdict say something else: the text
    (compare, ab, the report), the plot and ab's exit status must still give the record's."""
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
    assert labreport.ab(abrun(outcome, rec), buf) == record.exit_status(rec)
    assert "RULE-SAID-OTHERWISE" not in buf.getvalue()
    assert verdicts_in_text(buf.getvalue(), primary(rec)) == want
    md = report.write_report([(a, results.load(a)), (b, results.load(b))], tmp_path / "r",
                             outcomes=[outcome], records=[rec]).read_text()
    assert "RULE-SAID-OTHERWISE" not in md
    assert verdicts_in_text(md, primary(rec)) == want
    assert plotted_verdicts(monkeypatch, outcome, rec, tmp_path / "p") == want_classes(want)
