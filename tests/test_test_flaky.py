# SPDX-License-Identifier: MIT
"""scripts/test-flaky (make test-flaky): a test that fails in some runs is named with its
count, the load is stopped when the runs end, and the record of the runs is made from their
junitxml files alone (--summary), also of a run that was interrupted."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "test-flaky"

FLIPPING = '''
import os
from pathlib import Path


def test_fails_every_other_run():
    p = Path(os.environ["FLIP"])
    n = int(p.read_text()) if p.exists() else 0
    p.write_text(str(n + 1))
    assert n % 2 == 1


def test_passes():
    pass
'''


def run(tmp_path, *args, **env):
    e = {**os.environ, "FLAKY_OUT": str(tmp_path / "out"), **env}
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, env=e,
                          capture_output=True, text=True, timeout=600)


def test_a_test_that_failed_once_is_named_with_its_count_and_the_load_stops(tmp_path):
    (tmp_path / "test_flip.py").write_text(FLIPPING)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # the load: a stand-in that says where it runs and waits to be stopped
    (bin_dir / "stress-ng").write_text(f"#!/bin/sh\necho $$ > {tmp_path}/load.pid\n"
                                       "exec sleep 600 >/dev/null 2>&1\n")
    (bin_dir / "stress-ng").chmod(0o755)
    r = run(tmp_path, FLAKY_N="2", FLAKY_K="0", FLIP=str(tmp_path / "flip"),
            FLAKY_TESTS=str(tmp_path / "test_flip.py"),
            PATH=f"{bin_dir}:{os.environ['PATH']}")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1/2  " in r.stdout and "test_fails_every_other_run" in r.stdout
    assert "test_passes" not in r.stdout.split("failed at least once")[1]
    pid = int((tmp_path / "load.pid").read_text())
    for _ in range(50):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists(), "the load still runs"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [s["session"] for s in summary["sessions"]] == ["python-1", "python-2"]
    assert [len(s["failed"]) for s in summary["sessions"]] == [1, 0]
    [failed] = summary["failed_tests"]
    assert failed["failures"] == 1 and failed["test"].endswith("test_fails_every_other_run")


def test_the_summary_is_made_from_the_xml_files_even_an_unreadable_one(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    case = '<testcase classname="tests.test_x" name="{n}" file="tests/test_x.py">{f}</testcase>'
    for label, failing in (("python-1", True), ("python-2", False)):
        (out / f"{label}.xml").write_text(
            '<testsuites><testsuite name="pytest" errors="0" failures="{}" skipped="0"'
            ' tests="2" time="12.5" timestamp="t">{}{}</testsuite></testsuites>'.format(
                int(failing), case.format(n="test_a", f="<failure/>" if failing else ""),
                case.format(n="test_b", f="")))
    (out / "aa-x86-1.xml").write_text("<testsuites><testsuite")       # a killed session's
    r = run(tmp_path, "--summary", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["schema"] == "ipclab-test-flaky/1"
    kinds = {s["session"]: (s["kind"], s["read"]) for s in data["sessions"]}
    assert kinds == {"python-1": ("python", True), "python-2": ("python", True),
                     "aa-x86-1": ("aa-x86", False)}
    assert data["failed_tests"] == [{"test": "tests/test_x.py::test_a", "failures": 1}]


def test_bad_arguments_are_one_line_and_exit_2(tmp_path):
    for args in (["--summary", str(tmp_path / "none")], ["--bogus"]):
        r = run(tmp_path, *args)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    r = run(tmp_path, FLAKY_N="x")
    assert r.returncode == 2 and "FLAKY_N" in r.stderr
