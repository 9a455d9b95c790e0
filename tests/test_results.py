# SPDX-License-Identifier: MIT
"""The results file: round trip, layout, metric paths."""
import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, fixture

from ipclab import Error, engine, metrics, results, suites, views


def test_save_load_round_trip(tmp_path):
    data = json.load(open(fixture("base.json")))
    data["cells"].append({"key": "empty/cell", "samples": []})
    p = tmp_path / "sub" / "r.json"
    results.save(data, str(p))
    text = p.read_text()
    assert json.loads(text) == data
    # One sample per line: the file stays greppable and cheap to rewrite.
    lines = text.splitlines()
    assert sum(1 for l in lines if l.lstrip().startswith('{"schema":"ipcbench/1"')) == \
        sum(len(c["samples"]) for c in data["cells"])
    assert not list(tmp_path.glob("sub/*.tmp.*"))


def test_a_gzipped_results_file_reads_as_the_plain_one(tmp_path):
    import gzip
    plain = results.load(fixture("base.json"))
    packed = tmp_path / "base.json.gz"
    packed.write_bytes(gzip.compress(open(fixture("base.json"), "rb").read()))
    assert results.load(str(packed)) == plain
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(packed.read_bytes()[:200])
    not_gzip = tmp_path / "plain.json.gz"
    not_gzip.write_bytes(open(fixture("base.json"), "rb").read())
    for bad in (cut, not_gzip):
        with pytest.raises(Error, match="cannot read"):
            results.load(str(bad))


def test_metric_paths():
    s = {"metrics": {"throughput": {"value": 2.0, "unit": "GiB/s", "better": "higher"},
                     "bytes": {"value": 5, "better": "none"}},
         "latency": {"write": {"mean": 10.0, "p99.9": 40}},
         "counters": {"cpu_migrations": 30}, "params": {"transfers": 10}}
    assert metrics.metric_value(s, "metrics.throughput") == 2.0
    assert metrics.metric_value(s, "latency.write.p99.9") == 40
    assert metrics.metric_value(s, "counters.cpu_migrations / params.transfers") == 3
    assert metrics.metric_value(s, "counters.cpu_migrations / params.transfers * 1e6") == 3e6
    assert metrics.metric_value(s, "primary") == 2.0
    assert metrics.metric_value(s, "metrics.missing") is None
    assert metrics.metric_value(s, "counters.cpu_migrations / params.missing") is None


@pytest.mark.parametrize("text,msg", [
    ("[1, 2]", "not an ipclab results file"),
    ('{"schema": "ipclab-results/1", "cells": {}}', 'bad "cells" list'),
    ('{"schema": "ipclab-results/1", "cells": [{"key": "a", "samples": [1]}]}',
     "not an object"),
    ('{"schema": "ipclab-results/1", "cells": [{"key": "a", "samples": [{"metrics": []}]}]}',
     "'metrics' is not an object"),
    ('{"schema": "ipclab-results/1", "cells": [], "plan": 3}', "'plan' is not an object"),
    ("[" * 5000 + "]" * 5000, "nested too deeply"),
])
def test_corrupt_files_are_one_line_errors(tmp_path, text, msg):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(Error, match=msg.replace("(", "\\(")):
        results.load(str(p))


# ---- a results file describes itself ----------------------------------------------------


def _checkout_without_engine(tmp_path):
    """The package and the fixtures copied where no bench/ipcbench was ever built."""
    shutil.copytree(os.path.join(ROOT, "ipclab"), tmp_path / "ipclab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("base.json", "new.json", "aa.json"):
        shutil.copy(fixture(name), tmp_path / name)
    assert not (tmp_path / "bench").exists()
    env = dict(os.environ, IPCBENCH=str(tmp_path / "bench" / "ipcbench"), PYTHONPATH="")
    return env


def _ipclab(tmp_path, env, *argv):
    return subprocess.run([sys.executable, "-m", "ipclab", *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_stored_files_compare_without_an_engine(tmp_path):
    env = _checkout_without_engine(tmp_path)
    done = _ipclab(tmp_path, env, "compare", "base.json", "new.json")
    assert done.returncode == 0, done.stderr
    with open(os.path.join(ROOT, "tests", "golden", "compare-base-new.txt")) as f:
        assert done.stdout == f.read()
    done = _ipclab(tmp_path, env, "show", "base.json")
    assert done.returncode == 0, done.stderr
    with open(os.path.join(ROOT, "tests", "golden", "show-base.txt")) as f:
        assert done.stdout == f.read()


def test_a_file_from_before_the_catalog_asks_the_engine(tmp_path):
    # aa.json has no catalog: without an engine its tables cannot be built, and that is said
    # in one line (exit 2), as before files kept it.
    env = _checkout_without_engine(tmp_path)
    done = _ipclab(tmp_path, env, "show", "aa.json")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "engine not found" in done.stderr
    assert results.catalog(results.load(fixture("aa.json"))) is None


def test_a_run_keeps_the_engines_catalog(tmp_path, fake_engine):
    from ipclab.cli import main
    out = tmp_path / "r.json"
    assert main(["run", "seed-fast-pipes", "--reps", "1", "--warmups", "0", "--quiet",
                 "--no-report", "-o", str(out)]) == 0
    res = results.load(str(out))
    assert res["catalog"] == engine.analysis_catalog(fake_engine)
    assert [s for s, _, _ in suites.ladder(res["catalog"])][:-1] == \
        [r["rung"] for r in res["catalog"]["ladder"]]
    # Its tables are the file's, whatever the engine says now.
    res["catalog"]["ladder"] = res["catalog"]["ladder"][:2]
    (sv,) = views.shown(res)
    assert [label for label, _ in sv.view.rows] == ["write/read", "vmsplice -> read",
                                                    "vmsplice -> splice, pages untouched"]


def test_a_pooled_side_keeps_the_catalog():
    base = results.load(fixture("base.json"))
    merged = results.merge_boots([base, base], "A")
    assert merged["catalog"] == base["catalog"]
