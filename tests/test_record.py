# SPDX-License-Identifier: MIT
"""The comparison record (ipclab/compare/record.py): versioned, valid against its schema,
strict JSON, a rule beside every verdict and an overall verdict."""

import json
import math
from pathlib import Path

import jsonschema
import pytest

from ipclab import compare, results
from ipclab.compare import record
from test_deterministic import results_of

FIX = Path(__file__).parent / "fixtures"


def schema():
    return json.loads(record.schema_path().read_text())


def timed_record():
    return compare.outcome_record(compare.compare_results(results.load(FIX / "base.json"),
                                                          results.load(FIX / "new.json")))


def det_record(new=2768.9):
    o = compare.compare_results(results_of([2747.9, 2747.8, 2747.9] * 3),
                                results_of([new, new - 0.1, new] * 3), floor_file="/none")
    return compare.outcome_record(o)


def test_the_schema_is_a_valid_json_schema_and_ships_in_the_package():
    jsonschema.Draft202012Validator.check_schema(schema())
    assert record.schema_path().name == record.SCHEMA_FILE


def test_stored_records_validate_against_their_versions_schema():
    # A record of an older version stays valid data: its version's schema still ships.
    root = Path(__file__).parents[1]
    stored = [(p, json.loads(p.read_text())) for d in ("kernel", "ipclab/reference", "docs")
              for p in (root / d).rglob("*.json") if '"ipclab-comparison/' in p.read_text()]
    stored = [(p, rec) for p, rec in stored if isinstance(rec, dict)
              and str(rec.get("schema", "")).startswith("ipclab-comparison/")]
    assert stored, "no stored comparison record found: the test would check nothing"
    for path, rec in stored:
        version = rec["schema"].split("/")[1]
        schema_file = record.schema_path().with_name(f"comparison-{version}.schema.json")
        jsonschema.validate(rec, json.loads(schema_file.read_text()))


@pytest.mark.parametrize("make", [timed_record, det_record,
                                  lambda: det_record(new=2747.9)])
def test_real_records_validate_and_are_strict_json(make):
    rec = make()
    assert rec["schema"] == record.SCHEMA
    jsonschema.validate(rec, schema())
    json.loads(record.dumps(rec))       # raises on NaN or infinity


def test_a_row_carries_the_rule_that_gave_its_verdict():
    rec = timed_record()
    prim = [r for r in rec["rows"] if r["primary"]]
    assert all(r["rule"]["kind"] == "timed" and r["rule"]["correction"] == "holm"
               and r["rule"]["family"] == len(prim) and r["rule"]["min_change"] == 0.02
               for r in prim)
    det = [r for r in det_record()["rows"] if r["primary"]][0]
    assert det["verdict"] == "worse" and det["rule"]["kind"] == "deterministic"
    assert det["rule"]["threshold"] == det["threshold"] and det["rule"]["floor_pairs"] == 0
    # No floor: the floor is null and the record says why.
    assert det["floor"] is None and det["null_reasons"]["floor"]


def test_overall_verdict_and_counts():
    rec = timed_record()
    prim = [r for r in rec["rows"] if r["primary"]]
    assert rec["overall"]["rows"] == len(prim) == sum(rec["overall"]["counts"].values())
    assert rec["overall"]["counts"]["better"] == sum(r["verdict"] == "better" for r in prim)
    assert det_record()["overall"]["verdict"] == "worse"
    assert det_record(new=2747.9)["overall"]["verdict"] == "no change beyond the noise"
    assert record.overall(["better", "worse"], "±2%")["verdict"] == "mixed"
    assert record.overall(["better", "changed"], "±2%")["verdict"] == "mixed"
    assert record.overall(["within ±2%", "changed, below ±2%"], "±2%")["verdict"] == \
        "no change beyond ±2%"
    assert record.overall(["within ±2%", "too noisy"], "±2%")["verdict"] == "inconclusive"
    assert record.overall([], "±2%")["verdict"] == "inconclusive"


def test_every_view_has_its_verdict():
    rec = timed_record()
    assert rec["views"]
    for v in rec["views"]:
        assert v["overall"]["rows"] == sum(e["verdict"] is not None for e in v["entries"])


def test_not_finite_values_become_null_with_a_reason():
    rec = record.strict({"old": 0.0, "delta": math.inf, "ci": [math.nan, 1.0],
                         "x": {"p": math.nan}})
    assert rec["delta"] is None and rec["ci"] == [None, 1.0] and rec["x"]["p"] is None
    assert set(rec["null_reasons"]) == {"delta", "ci"} and rec["x"]["null_reasons"]["p"]
    with pytest.raises(ValueError):
        record.dumps({"delta": math.inf})


def test_a_zero_old_median_gives_a_null_delta_and_why():
    base, new = results_of([2747.9] * 9), results_of([2747.9] * 9)
    for s in base["cells"][0]["samples"]:
        s["counters"]["task_clock_ns"] = 0.0
        s["metrics"]["loops_per_s"]["value"] = 0.0
    rec = compare.outcome_record(compare.compare_results(base, new, floor_file="/none"))
    row = [r for r in rec["rows"] if r["primary"]][0]
    jsonschema.validate(rec, schema())
    assert row["verdict"] == "no data" and row["delta"] is None
    assert row["null_reasons"]["delta"]
