# SPDX-License-Identifier: MIT
"""What `make test` runs beside its session (tests/tier_beside.py): the arm64 tier's outcome
reaches the session's check, an interrupted session leaves nothing behind, and the kernel
tier's first build starts with the Python tests, which run first."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import conftest
from tier_beside import BesideTier

TESTS = {
    "pass": "def test_a():\n    pass\n",
    "fail": "def test_a():\n    assert 1 == 2, 'the tier beside failed here'\n",
    "skip": "import pytest\npytestmark = pytest.mark.skip(reason='no arm64 tools')\n"
            "def test_a():\n    pass\n",
    # It says when it is under way, so that the stop is sent to a running test.
    "slow": "import pathlib, time\ndef test_a():\n    pathlib.Path('running').touch()\n"
            "    time.sleep(600)\n",
}


def tier(tmp_path, kind, env=None):
    (tmp_path / f"test_{kind}.py").write_text(TESTS[kind])
    return BesideTier("arm64", str(tmp_path), f"test_{kind}.py", env or {},
                      str(tmp_path / "beside.log"))


def test_a_tier_that_passed_passes_the_check_and_gives_its_time(tmp_path):
    t = tier(tmp_path, "pass")
    t.start()
    # The session asks late: the time given is the tier's own pytest's, not the wait's.
    time.sleep(4)
    ok, skipped, message = t.check()
    assert ok and not skipped, message
    assert t.outcome()[0].startswith("1 passed")
    assert t.seconds < 4        # when it exited, not when the session asked
    assert t.time_line() in ("arm64 beside 0 s", "arm64 beside 1 s"), t.time_line()


def test_a_tier_that_failed_fails_the_check_with_its_log(tmp_path):
    ok, skipped, message = tier(tmp_path, "fail").check()
    assert not ok and not skipped
    assert "1 failed" in message and "the tier beside failed here" in message


def test_a_tier_whose_tests_all_skipped_is_a_skip(tmp_path):
    ok, skipped, message = tier(tmp_path, "skip").check()
    assert ok and skipped and "1 skipped" in message


def test_the_tier_gets_its_own_environment_not_the_session_time_file(tmp_path, monkeypatch):
    monkeypatch.setenv("IPCLAB_TEST_TIMES", str(tmp_path / "session-times"))
    (tmp_path / "test_env.py").write_text(
        "import os\ndef test_env():\n"
        "    assert os.environ['IPCLAB_TEST_ARM64'] == '1'\n"
        f"    assert os.environ['IPCLAB_TEST_TIMES'] == {os.devnull!r}\n")
    t = BesideTier("arm64", str(tmp_path), "test_env.py", {"IPCLAB_TEST_ARM64": "1"},
                   str(tmp_path / "beside.log"))
    ok, _, message = t.check()
    assert ok, message


def test_an_interrupted_session_stops_the_tier(tmp_path, session_sigint):
    t = tier(tmp_path, "slow")
    t.start()
    deadline = time.monotonic() + 300
    while not (tmp_path / "running").exists() and t.running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (tmp_path / "running").exists(), t.output()
    t.stop()
    # Stopped by the interrupt, not by the SIGKILL that follows a tier deaf to it.
    assert t.proc.poll() is not None and t.proc.returncode != -signal.SIGKILL
    assert "KeyboardInterrupt" in t.output()


def test_start_is_once(tmp_path):
    t = tier(tmp_path, "pass")
    t.start()
    first = t.proc
    t.start()
    assert t.proc is first
    t.wait()


def test_a_command_beside_gives_its_exit_status_and_its_wall_time(tmp_path):
    t = BesideTier("first kernel build", str(tmp_path), None, {}, str(tmp_path / "build.log"),
                   argv=[sys.executable, "-c", "import time; time.sleep(1); print('built')"])
    t.start()
    # Asked long after it ended (a warm cache): its time is still its own.
    time.sleep(4)
    assert t.wait() == 0 and "built" in t.output()
    assert t.time_line() in ("first kernel build beside 1 s", "first kernel build beside 2 s")


def items(*paths):
    return [SimpleNamespace(path=Path(conftest.ROOT) / p) for p in paths]


def test_the_first_build_starts_only_beside_python_tests_that_precede_it():
    boot, python = "tests/kernel/test_lab_boot.py", "tests/test_cli.py"
    assert conftest.wants_first_build(items(python, boot), collect_only=False)
    assert not conftest.wants_first_build(items(python, boot), collect_only=True)
    assert not conftest.wants_first_build(items(boot), collect_only=False)
    assert not conftest.wants_first_build(items(python), collect_only=False)
    assert not conftest.wants_first_build(items(python, "tests/kernel/test_lab_smp.py"),
                                          collect_only=False)


def test_the_session_runs_the_python_tests_before_the_kernel_tier():
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                        "-p", "no:cacheprovider", "tests/kernel/test_lab_census.py",
                        "tests/test_tier_beside.py"],
                       cwd=conftest.ROOT, capture_output=True, text=True, timeout=120)
    ids = [line for line in r.stdout.splitlines() if "::" in line]
    assert ids, r.stdout + r.stderr
    tiers = [line.startswith("tests/kernel/") for line in ids]
    assert tiers == sorted(tiers) and tiers[0] is False and tiers[-1] is True, ids


def test_a_python_test_waits_for_the_source_the_first_build_extracts(tmp_path, monkeypatch):
    made = tmp_path / "extract-ikconfig"
    build = BesideTier("first kernel build", str(tmp_path), None, {}, str(tmp_path / "log"),
                       argv=["sh", "-c", f"sleep 1; touch {made}; sleep 1"])
    monkeypatch.setattr(conftest, "FIRST_BUILD", build)
    find = lambda: made if made.exists() else None      # noqa: E731
    build.start()
    assert conftest.from_lab_source(find, poll_s=0.1) == made
    # A build that ended without it: None, at once.
    made.unlink()
    build.wait()
    t0 = time.monotonic()
    assert conftest.from_lab_source(find) is None and time.monotonic() - t0 < 1
