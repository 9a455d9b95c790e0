# SPDX-License-Identifier: MIT
import os
import sys
import time

import pytest

from tier_beside import BesideTier

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
GOLDEN = os.path.join(ROOT, "tests", "golden")
FAKE_ENGINE = os.path.join(FIXTURES, "fake-ipcbench")
REAL_ENGINE = os.path.join(ROOT, "bench", "ipcbench")


def fixture(name):
    return os.path.join(FIXTURES, name)


def check_golden(name, text):
    """Compare text with tests/golden/NAME; UPDATE_GOLDEN=1 rewrites it."""
    path = os.path.join(GOLDEN, name)
    if os.environ.get("UPDATE_GOLDEN"):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    with open(path) as f:
        want = f.read()
    assert text == want, "output differs from %s (UPDATE_GOLDEN=1 to accept)" % path


@pytest.fixture
def fake_engine(monkeypatch):
    monkeypatch.setenv("IPCBENCH", FAKE_ENGINE)
    monkeypatch.delenv("FAKE_SHIFT", raising=False)
    monkeypatch.delenv("FAKE_EXIT", raising=False)
    return FAKE_ENGINE


# ---- time per tier -------------------------------------------------------------------------
# `make test` ends with one line of time per tier. Make writes the engine's and the
# conformance tier's seconds to $IPCLAB_TEST_TIMES ("NAME SECONDS" lines); the Python tier is
# the time of the tests outside tests/kernel; the kernel tier's commands are split into
# builds (`kernel build`) and the rest (boots: vm run, ab, census), as tests/kernel's
# ipclab() reports them here.
TIER_SECONDS = {"Python": 0.0, "kernel builds": 0.0, "boots": 0.0}


def lab_command_time(argv, seconds):
    """Count a kernel-tier command's seconds as a build or as a boot; the first kernel build
    is the arm64 tier's cue to start beside the session (tests/tier_beside.py)."""
    build = tuple(argv[:2]) == ("kernel", "build")
    TIER_SECONDS["kernel builds" if build else "boots"] += seconds
    if build and ARM64_BESIDE:
        ARM64_BESIDE.start()


# ---- the arm64 tier beside the session ---------------------------------------------------
ARM64_TESTS = "tests/kernel/test_lab_arm64.py"
ARM64_BESIDE = (BesideTier("arm64", ROOT, ARM64_TESTS, {"IPCLAB_TEST_ARM64": "1"},
                           os.path.join(ROOT, ".test-arm64.log"))
                if os.environ.get("IPCLAB_TEST_ARM64") == "beside" else None)
# Where the session waits for it: before the tests that time two vCPUs, which need the
# host's two cores to themselves.
ARM64_CHECK_BEFORE = "tests/kernel/test_lab_smp.py"


def pytest_collection_modifyitems(session, config, items):
    """Move the check of the tier beside to just before the SMP tests (or to the end of the
    kernel tier's tests, when they were not collected)."""
    check = [i for i in items if i.name == "test_the_tier_beside_this_session_passed"]
    if not check:
        return
    items.remove(check[0])
    kernel = [n for n, i in enumerate(items)
              if "kernel" in i.path.relative_to(ROOT).parts[1:2]]
    smp = [n for n, i in enumerate(items)
           if str(i.path.relative_to(ROOT)) == ARM64_CHECK_BEFORE]
    at = smp[0] if smp else (kernel[-1] + 1 if kernel else len(items))
    items.insert(at, check[0])


def pytest_sessionfinish(session, exitstatus):
    if ARM64_BESIDE:
        ARM64_BESIDE.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    t0 = time.monotonic()
    yield
    if "kernel" not in item.path.relative_to(ROOT).parts[1:2]:
        TIER_SECONDS["Python"] += time.monotonic() - t0


def pytest_terminal_summary(terminalreporter):
    path = os.environ.get("IPCLAB_TEST_TIMES")
    if not path:
        return
    tiers = []
    try:
        with open(path) as f:
            tiers = [line.split() for line in f if len(line.split()) == 2]
    except OSError:
        pass
    tiers += [(name, s) for name, s in TIER_SECONDS.items()]
    line = ", ".join(f"{name} {float(s):.0f} s" for name, s in tiers)
    beside = ARM64_BESIDE.time_line() if ARM64_BESIDE else None
    terminalreporter.write_line("time per tier: " + line + (f"; {beside}" if beside else ""))
