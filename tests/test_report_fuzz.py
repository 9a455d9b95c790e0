# SPDX-License-Identifier: MIT
"""Issue 42, case 9: a hand-edited results file gets the one-line error or a clean output,
never a traceback and never a number that is not finite.

First the cases the issue names (a catalog ladder entry "x", 1e308, 1e400, a file whose
values are all 1e308), then a property (hypothesis) over mutated results files and pairs of
them: whatever the mutation, `report`, `compare` and `compare --json` exit 0 or 1 with
finite numbers only, or exit 2 with one line. Derandomized: the same examples every run."""

import contextlib
import copy
import io
import json
import math
import re
import tempfile
from pathlib import Path

import pytest
from conftest import fixture
from hypothesis import HealthCheck, given, settings, strategies as st

from ipclab.cli import main

# The fixtures cut to a few cells of two seed suites (and a fast-pipes rung, whose table is
# built from the catalog's ladder): a report of all ten cells would spend the time budget
# drawing plots.
KEEP = ("pipe-sweep/w=1,r=1", "pipe-sweep/w=2,r=5", "token-ring/procs=64")
NOT_FINITE = re.compile(r"(?i)(?<![a-z])(nan|inf|infinity)(?![a-z])")


def _trimmed(name):
    data = json.loads(Path(fixture(name)).read_text())
    cells = [c for c in data["cells"] if c["key"] in KEEP]
    rung = copy.deepcopy(cells[0])
    rung.update(key="fastpipe/write-read", workload="fastpipe", suite="seed-fast-pipes")
    for smp in rung["samples"]:
        smp["metrics"] = {"throughput": dict(smp["metrics"]["throughput"], unit="GiB/s",
                                             value=smp["metrics"]["throughput"]["value"] / 100)}
    data["cells"] = cells + [rung]
    return data


BASE, NEW = _trimmed("base.json"), _trimmed("new.json")


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def _finite_json(text):
    def refuse(name):
        raise AssertionError(f"{name} in compare --json")
    obj = json.loads(text, parse_constant=refuse)
    stack = [obj]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, float):
            assert math.isfinite(v), text


def check_outputs(base, new):
    """report of base, compare and compare --json of base against new: each exits 0 or 1
    with nothing that is not finite in what it printed or wrote, or 2 with one line."""
    with tempfile.TemporaryDirectory() as d:
        a, b = Path(d, "a.json"), Path(d, "b.json")
        a.write_text(base if isinstance(base, str) else json.dumps(base))
        b.write_text(new if isinstance(new, str) else json.dumps(new))
        for argv in (["report", str(a), "-o", str(Path(d, "rep"))],
                     ["compare", str(a), str(b)], ["compare", "--json", str(a), str(b)]):
            rc, out, err = _run(argv)
            if rc == 2:
                assert err.startswith("ipclab: error: ") and err.count("\n") == 1, (argv, err)
                continue
            assert rc in (0, 1), (argv, rc, err)
            texts = [out]
            if argv[0] == "report":
                texts.append(Path(d, "rep", "report.md").read_text())
            for text in texts:
                assert not NOT_FINITE.search(text), (argv, NOT_FINITE.search(text), text)
            if "--json" in argv:
                _finite_json(out)


def _ladder(value):
    def edit(d):
        d["catalog"]["ladder"] = [value]
    return edit


def _all_values(value):
    def edit(d):
        for c in d["cells"]:
            for smp in c["samples"]:
                for m in smp["metrics"].values():
                    m["value"] = value
    return edit


@pytest.mark.parametrize("edit, raw", [
    (_ladder("x"), None), (_ladder(1e308), None), (_ladder(12345.5), "1e400"),
    (_ladder({"rung": "write-read", "args": [1e308]}), None),
    (_all_values(1e308), None), (_all_values(12345.5), "1e400"),
    (_all_values(12345.5), "1" + "0" * 400),
    (lambda d: d["catalog"]["sweep"].update(writers=[12345.5]), "1e400"),
], ids=["ladder-x", "ladder-1e308", "ladder-1e400", "rung-args-1e308", "all-1e308",
        "all-1e400", "all-10^400", "sweep-1e400"])
def test_named_values_get_the_one_line_error(edit, raw):
    """The values the issue names: each file is refused by every command, exit 2, one line
    that says what is wrong in it."""
    data = copy.deepcopy(BASE)
    edit(data)
    text = json.dumps(data)
    if raw:
        text = text.replace("12345.5", raw)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d, "r.json")
        path.write_text(text)
        for argv in (["report", str(path), "-o", str(Path(d, "rep"))], ["show", str(path)],
                     ["compare", str(path), fixture("new.json")],
                     ["compare", "--json", fixture("base.json"), str(path)]):
            rc, out, err = _run(argv)
            assert rc == 2 and err.count("\n") == 1 and "corrupt results file" in err, \
                (argv, rc, err)
        assert not Path(d, "rep").exists()


def test_unmutated_files_pass_the_check():
    """The property's check holds for the files it mutates."""
    check_outputs(BASE, NEW)


# ---- the property ----------------------------------------------------------------------------

EVIL = st.one_of(
    st.sampled_from([None, True, False, 0, -1, 1, 0.5, 1e308, -1e308, 5e-324, 1e-300,
                     float("nan"), float("inf"), float("-inf"), 10 ** 400, 2 ** 63, "", "x",
                     "1e400", [], {}, [1], {"x": 1}, {"value": 1e308}]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10 ** 30), max_value=10 ** 30),
    # Text that cannot spell nan or inf itself: the check would read it as a number.
    st.text(alphabet="xyz-/=,. 019é", max_size=6),
)
# Where a mutation starts: a path into the file, ANY picking one element by the next step.
# Most start inside a sample, where the numbers are.
ANY = "*"
REGIONS = [("cells", ANY, "samples", ANY, "metrics", ANY),
           ("cells", ANY, "samples", ANY, "metrics", ANY, "value"),
           ("cells", ANY, "samples", ANY, "latency", ANY),
           ("cells", ANY, "samples", ANY, "counters"), ("cells", ANY, "samples", ANY),
           ("cells", ANY), ("catalog", "ladder"), ("catalog", "sweep"), ("catalog",),
           ("pair",), ("plan",), ("meta",), ("env",), ("host",), ()]


@st.composite
def mutation(draw):
    region = draw(st.sampled_from(REGIONS))
    steps = draw(st.lists(st.integers(min_value=0, max_value=1 << 16), min_size=len(region),
                          max_size=len(region) + 3))
    action = draw(st.sampled_from(["set", "set", "set", "delete", "append"]))
    return region, steps, action, draw(EVIL)


def _child(node, key, step):
    """The key of `node` that `key` names (ANY: the step's pick), or None when none is."""
    if isinstance(node, dict) and node:
        if key is ANY:
            return sorted(node)[step % len(node)]
        return key if key in node else None
    if isinstance(node, list) and node and key is ANY:
        return step % len(node)
    return None


def mutate(data, m):
    """Walk the region, then on along the steps that are left (each picks a child of a dict
    or list), and set, delete or append the value there."""
    region, steps, action, value = m
    data = copy.deepcopy(data)
    parent, key = None, None
    node = data
    path = list(region) + [ANY] * (len(steps) - len(region))
    for want, s in zip(path, steps):
        k = _child(node, want, s)
        if k is None:
            break
        parent, key, node = node, k, node[k]
    if action == "append" and isinstance(node, list):
        node.append(value)
    elif action == "delete" and parent is not None:
        del parent[key]
    elif parent is not None:
        parent[key] = value
    return data


def shaped(data, shape, side):
    """The file as one side of a run with two sides (its samples paired by round) or as a
    side pooled from three boots: the paired tests' paths, not only the unpaired one."""
    data = copy.deepcopy(data)
    if shape == "rounds":
        data["pair"] = {"id": "p", "side": side, "sides": [{"name": "A"}, {"name": "B"}],
                        "files": ["a.json", "b.json"]}
    for c in data["cells"]:
        measured = [smp for smp in c["samples"] if not smp.get("warmup")]
        for i, smp in enumerate(measured):
            if shape == "rounds":
                smp["round"] = i
            elif shape == "boots":
                smp["lab_boot"] = 1 + i % 3
    return data


@settings(max_examples=80, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(mutation(), min_size=1, max_size=3), st.sampled_from(["base", "new", "both"]),
       st.sampled_from(["plain", "rounds", "boots"]))
def test_mutated_files_never_give_a_traceback_or_a_non_finite_number(mutations, which, shape):
    base, new = shaped(BASE, shape, "A"), shaped(NEW, shape, "B")
    for m in mutations:
        if which in ("base", "both"):
            base = mutate(base, m)
        if which in ("new", "both"):
            new = mutate(new, m)
    check_outputs(base, new)
