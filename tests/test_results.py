# SPDX-License-Identifier: MIT
"""The results file: round trip, layout, metric paths."""
import json

import pytest
from conftest import fixture

from ipclab import Error, metrics, results


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
