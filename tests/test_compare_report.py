# SPDX-License-Identifier: MIT
"""compare, show and report match golden outputs on the JSON fixtures."""
import contextlib
import io
import json
import os
import shutil

import pytest
from conftest import check_golden, fixture

from ipclab import Error, compare, report, results
from ipclab.cli import main


def compare_files(base, new, out):
    """`ipclab compare OLD NEW` with its stdout in `out`; returns the exit status."""
    with contextlib.redirect_stdout(out):
        return main(["compare", base, new])


def test_compare_matches_golden():
    out = io.StringIO()
    rc = compare_files(fixture("base.json"), fixture("new.json"), out=out)
    assert rc == 0
    check_golden("compare-base-new.txt", out.getvalue())


def test_compare_aa_says_no_significant_change_out_loud():
    out = io.StringIO()
    assert compare_files(fixture("base.json"), fixture("aa.json"), out=out) == 0
    check_golden("compare-base-aa.txt", out.getvalue())
    assert "No significant change" in out.getvalue()


def test_compare_heading_and_in_memory_api():
    base = results.load(fixture("base.json"))
    new = results.load(fixture("new.json"))
    outcome = compare.compare_results(base, new)
    sig = {r.key for r in outcome.rows if r.cmp.significant}
    assert sig == {"pipe-sweep/w=1,r=1", "pipe-sweep/w=1,r=5", "pipe-sweep/w=1,r=10"}
    out = io.StringIO()
    report.render_compare(outcome, out, heading="kernel A/B")
    assert out.getvalue().startswith("kernel A/B\n")


def test_compare_mismatched_cells_explained(tmp_path, capsys):
    new = json.load(open(fixture("new.json")))
    new["cells"] = new["cells"][:-2]
    p = tmp_path / "short.json"
    p.write_text(json.dumps(new))
    assert compare_files(fixture("base.json"), str(p), out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "cells do not match: 2 only in OLD" in err
    assert "token-ring/procs=64" in err


def test_compare_different_args_rejected():
    base = results.load(fixture("base.json"))
    new = results.load(fixture("new.json"))
    new["cells"][0]["args"] = ["--writers", "9"]
    with pytest.raises(Error, match="different engine arguments"):
        compare.compare_results(base, new)


def test_compare_common_subset():
    base = results.load(fixture("base.json"))
    new = results.load(fixture("new.json"))
    new["cells"] = new["cells"][:3]
    outcome = compare.compare_results(base, new, common=True)
    assert len({r.key for r in outcome.rows}) == 3


def test_compare_warns_on_few_reps_and_noise():
    base = results.load(fixture("base.json"))
    new = results.load(fixture("new.json"))
    for res in (base, new):
        for c in res["cells"]:
            c["samples"] = c["samples"][:5]
    new["cells"][0]["samples"][1]["metrics"]["throughput"]["value"] *= 1.5
    outcome = compare.compare_results(base, new)
    text = " ".join(outcome.warnings)
    assert "only 4 repetitions" in text
    assert "CV over 5%" in text


def test_show_matches_golden():
    out = io.StringIO()
    report.show(results.load(fixture("base.json")), out)
    check_golden("show-base.txt", out.getvalue())


def test_report_matches_golden(tmp_path):
    # Relative paths, so the Markdown does not depend on where the tests run.
    for name in ("base.json", "new.json"):
        shutil.copy(fixture(name), tmp_path / name)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        md = report.write_report([("base.json", results.load("base.json")),
                                  ("new.json", results.load("new.json"))], "rep")
    finally:
        os.chdir(cwd)
    text = open(tmp_path / md).read()
    check_golden("report-base-new.md", text)
    pngs = sorted(os.listdir(tmp_path / "rep"))
    assert "base-throughput.png" in pngs
    assert "base-latency-percentiles.png" in pngs
    assert "compare-base-vs-new.png" in pngs
    for name in pngs:
        if name.endswith(".png"):
            with open(tmp_path / "rep" / name, "rb") as f:
                assert f.read(8) == b"\x89PNG\r\n\x1a\n"
