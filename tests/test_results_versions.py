# SPDX-License-Identifier: MIT
"""Every version of the results format still reads (ipclab/results.py lists what each
added); a new file is written at the current version, and pooling boots keeps it."""
import json
from pathlib import Path

import pytest

from ipclab import Error, results

VERSIONS = Path(__file__).parent / "fixtures" / "results-versions"


def test_there_is_a_fixture_for_every_version():
    assert sorted(p.name for p in VERSIONS.glob("v*.json")) == \
        [f"v{v}.json" for v in range(1, results.VERSION + 1)]


@pytest.mark.parametrize("v", range(1, results.VERSION + 1))
def test_a_file_of_each_version_reads(v, tmp_path):
    res = results.load(VERSIONS / f"v{v}.json")
    assert results.version_of(res) in (1, v)    # 1 to 6 were all written as "/1"
    assert [len(c["samples"]) for c in res["cells"]] == [3]
    assert results.catalog(res) == (res["catalog"] if v >= 6 else None)
    # What a version lacks reads as absent, not as an error.
    assert ("pair" in res) == (v >= 4) and ("host" in res) == (v >= 2)
    merged = results.merge_boots([res, res], "A")
    assert merged["schema"] == res["schema"]


def test_new_files_carry_the_current_version():
    res = results.new("r", "adhoc", "quick", [], 1, 0, 1)
    assert res["schema"] == results.SCHEMA == f"ipclab-results/{results.VERSION}"
    assert results.version_of(res) == results.VERSION


@pytest.mark.parametrize("schema", [f"ipclab-results/{results.VERSION + 1}", "ipclab-results/0",
                                    "ipclab-results/x", "other/1", None])
def test_a_version_this_reader_does_not_know_is_refused(schema, tmp_path):
    data = json.loads((VERSIONS / "v7.json").read_text())
    data["schema"] = schema
    p = tmp_path / "f.json"
    p.write_text(json.dumps(data))
    with pytest.raises(Error, match="not an ipclab results file"):
        results.load(p)
