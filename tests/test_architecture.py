# SPDX-License-Identifier: MIT
"""The shape of the front end (docs/architecture.md): imports run one way, and what the
engine defines, Python reads from it instead of keeping its own copy."""
import ast
import os
import subprocess
from pathlib import Path

import pytest
from conftest import REAL_ENGINE, ROOT

from ipclab import Error, deterministic, engine, metrics, suites

PACKAGE = Path(ROOT) / "ipclab"


def module_name(path):
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path, modules):
    """The ipclab modules one file imports, wherever the import statement is (inside
    functions too)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from ipclab import compare` imports the module ipclab.compare.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def import_graph():
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in files}
    return {module_name(p): imports_of(p, modules) for p in files}


def find_cycle(graph):
    """One import circle as a list of modules, or None."""
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            # A package's __init__ runs before any of its modules: that edge is not a circle.
            if node.startswith(nxt + "."):
                continue
            if state.get(nxt) == "open":
                return trail[trail.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, trail + [nxt])
                if found:
                    return found
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start, [start])
            if found:
                return found
    return None


def test_no_import_circles():
    graph = import_graph()
    assert "ipclab.compare" in graph and "ipclab.report" in graph["ipclab.cli.host"]
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_circle_inside_a_function(tmp_path):
    pkg = tmp_path / "ipclab"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from ipclab import b\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    files = sorted(pkg.rglob("*.py"))
    modules = {".".join(p.relative_to(tmp_path).with_suffix("").parts).replace(".__init__", "")
               for p in files}
    global PACKAGE
    saved, PACKAGE = PACKAGE, pkg
    try:
        graph = {module_name(p): imports_of(p, modules) for p in files}
    finally:
        PACKAGE = saved
    assert find_cycle(graph) == ["ipclab.a", "ipclab.b", "ipclab.a"]


def in_lab(module):
    return module == "ipclab.lab" or module.startswith("ipclab.lab.")


def in_report(module):
    """What prints: the lab returns data, and ipclab/report/ prints it (through the CLI)."""
    return module == "ipclab.report" or module.startswith("ipclab.report.")


def test_the_lab_imports_nothing_that_prints():
    graph = import_graph()
    assert {"ipclab.report.lab", "ipclab.report.plot"} <= set(graph)
    found = {m: sorted(d for d in deps if in_report(d)) for m, deps in graph.items()
             if in_lab(m) and any(in_report(d) for d in deps)}
    assert not found, f"the lab imports report modules: {found}"


def in_cli(module):
    return module == "ipclab.cli" or module.startswith("ipclab.cli.")


def test_only_the_cli_imports_the_lab():
    graph = import_graph()
    users = {m for m, deps in graph.items() if any(in_lab(d) for d in deps)}
    assert "ipclab.cli.lab" in users
    assert {u for u in users if not in_lab(u)} <= {"ipclab.cli.parser", "ipclab.cli.lab"}


def test_the_cli_is_on_top_and_its_parser_above_its_commands():
    """Nothing but the entry (__main__) imports the command line; inside cli/, the parser
    names the commands' handlers, the handlers know nothing of the parser or of each other,
    and the host's commands need nothing of the lab."""
    graph = import_graph()
    commands = {"ipclab.cli.host", "ipclab.cli.lab"}
    assert commands | {"ipclab.cli", "ipclab.cli.parser"} <= set(graph)
    assert commands <= graph["ipclab.cli.parser"]
    below = {m: sorted(d for d in deps if in_cli(d)) for m, deps in graph.items()
             if not in_cli(m) and m != "ipclab.__main__" and any(in_cli(d) for d in deps)}
    assert not below, f"imports of the command line from below it: {below}"
    for m in commands:
        inside = sorted(d for d in graph[m] if in_cli(d))
        assert not inside, f"{m} imports {inside}"
    assert not [d for d in graph["ipclab.cli.host"] if in_lab(d)], "host commands import the lab"


# ---- the engine is the source of truth -------------------------------------------------

needs_engine = pytest.mark.skipif(not os.access(REAL_ENGINE, os.X_OK),
                                  reason="bench/ipcbench not built (make engine)")


@pytest.fixture
def real_catalog(monkeypatch):
    monkeypatch.setenv("IPCBENCH", REAL_ENGINE)
    return engine.catalog()


@needs_engine
def test_workloads_are_the_engines(real_catalog):
    listed = subprocess.run([REAL_ENGINE, "list"], capture_output=True, text=True,
                            check=True).stdout.split("\n")
    names = [line.split()[0] for line in listed if line.strip()]
    assert list(suites.workloads()) == names
    # Every table keyed by workload names names a workload the engine has.
    for table in (metrics.COMPARE_METRICS, deterministic.OPERATIONS, deterministic.OWN_COST):
        assert set(table) <= set(names)


@needs_engine
def test_ladder_and_sweep_are_the_engines(real_catalog):
    rungs = {w["name"]: w for w in real_catalog["workloads"]}["fastpipe"]["ladder"]
    assert [r["rung"] for r in rungs] == list(suites.RUNG_LABELS)
    steps = suites.ladder()
    assert [(s, a) for s, _, a in steps[:-1]] == [(r["rung"], r["args"]) for r in rungs]
    cells = suites.FAST_PIPES.cells(suites.QUICK)
    assert [c.key for c in cells] == ["fastpipe/" + s for s, _, _ in steps]
    # The published figures are keyed by the same steps.
    ref = suites.load_reference("fast-pipes")
    assert set(ref["figures"]["ladder"]["cells"]) <= {s for s, _, _ in steps}
    grid = {w["name"]: w for w in real_catalog["workloads"]}["pipe-sweep"]["sweep"]
    writers, readers = suites.sweep_grid()
    assert (list(writers), list(readers)) == (grid["writers"], grid["readers"])
    keys = {c.key for c in suites.PIPE_PREALLOC.cells(suites.QUICK)}
    assert keys == {f"pipe-sweep/w={w},r={r}" for w in writers for r in readers}
    published = suites.load_reference("pipe-prealloc")["figures"]["throughput"]["cells"]
    assert set(published) == {f"w={w},r={r}" for w in writers for r in readers}


def test_a_rung_python_cannot_name_is_an_error(monkeypatch):
    fake = {"schema": engine.LIST_SCHEMA, "workloads": [
        {"name": "fastpipe", "ladder": [{"rung": "teleport", "args": ["--teleport"]}]}]}
    monkeypatch.setattr(engine, "catalog", lambda path=None: fake)
    with pytest.raises(Error, match="teleport"):
        suites.ladder()


def test_catalog_is_checked(tmp_path, monkeypatch):
    bad = tmp_path / "old-ipcbench"
    bad.write_text("#!/bin/sh\necho pipe-sweep\n")
    bad.chmod(0o755)
    with pytest.raises(Error, match="not an ipcbench-list/1 catalog"):
        engine.catalog(str(bad))


# Known debts, each with its reason: lab/kernel.py's build() is being changed for other issues
# (--config production, --arch arm64) and is split after them.
TOO_BIG = set()
TOO_LONG = set()


def test_no_module_over_600_lines_and_no_function_over_80():
    big, long = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE.parent))
        text = path.read_text()
        if text.count("\n") > 600 and rel not in TOO_BIG:
            big.append(f"{rel}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > 80 and f"{rel}:{node.name}" not in TOO_LONG:
                    long.append(f"{rel}:{node.name}: {n} lines")
    assert not big and not long, "\n".join(big + long)
