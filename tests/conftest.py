# SPDX-License-Identifier: MIT
import os
import subprocess
import sys
import time

import pytest

from tier_beside import BesideTier, sigint_default  # noqa: F401 (the tests' import)

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


@pytest.fixture(params=["SIGINT default", "SIGINT ignored"])
def session_sigint(request):
    """The test runs once as from a terminal and once as a shell's background job, which
    starts with SIGINT ignored: a child stopped by SIGINT must be stopped either way."""
    import signal
    before = signal.signal(signal.SIGINT, signal.SIG_DFL if request.param == "SIGINT default"
                           else signal.SIG_IGN)
    yield request.param
    signal.signal(signal.SIGINT, before)


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


def before_lab_command():
    """A kernel-tier command waits for the first build beside the Python tests, if one runs:
    it then finds the image cached, and its time is the build's, not the wait's."""
    if FIRST_BUILD:
        FIRST_BUILD.wait()


def from_lab_source(find, poll_s=1.0):
    """What `find()` takes from the lab's extracted kernel source, or None. While the first
    build beside the Python tests runs, it may not have extracted the source yet (a cold
    cache): wait until `find()` has it or the build has ended."""
    got = find()
    while got is None and FIRST_BUILD and FIRST_BUILD.running():
        time.sleep(poll_s)
        got = find()
    return got


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

# ---- the kernel tier's first build, beside the Python tests --------------------------------
# The Python tests run first and take one core; the kernel tier's first build (its plain
# kernel) starts with them, when a session collects both (make test), and logs here.
FIRST_BUILD_LOG = os.path.join(ROOT, ".test-first-build.log")
FIRST_BUILD_BY = "tests/kernel/test_lab_boot.py"
FIRST_BUILD = None


def in_kernel_tier(item):
    return "kernel" in item.path.relative_to(ROOT).parts[1:2]


def wants_first_build(items, collect_only):
    """Whether a session of these tests builds the kernel tier's first kernel beside its
    Python tests: it runs both, and the kernel tier's first build is among them."""
    return (not collect_only and any(not in_kernel_tier(i) for i in items)
            and any(str(i.path.relative_to(ROOT)) == FIRST_BUILD_BY for i in items))


def pytest_collection_modifyitems(session, config, items):
    """The Python tests first, then the kernel tier's; the check of the tier beside just
    before the SMP tests (or at the end of the kernel tier's tests, when they were not
    collected)."""
    items.sort(key=in_kernel_tier)      # stable: each tier keeps its order
    check = [i for i in items if i.name == "test_the_tier_beside_this_session_passed"]
    if not check:
        return
    items.remove(check[0])
    kernel = [n for n, i in enumerate(items) if in_kernel_tier(i)]
    smp = [n for n, i in enumerate(items)
           if str(i.path.relative_to(ROOT)) == ARM64_CHECK_BEFORE]
    at = smp[0] if smp else (kernel[-1] + 1 if kernel else len(items))
    items.insert(at, check[0])


def pytest_collection_finish(session):
    """Start the kernel tier's first build beside the Python tests, when this session runs
    both and the build can run."""
    global FIRST_BUILD
    if not wants_first_build(session.items, session.config.option.collectonly):
        return
    from kernel.conftest import PLAIN, missing_prereq
    if missing_prereq() is not None:
        return
    FIRST_BUILD = BesideTier("first kernel build", ROOT, None, {}, FIRST_BUILD_LOG,
                             argv=[sys.executable, "-m", "ipclab", "kernel", "build", PLAIN])
    FIRST_BUILD.start()


def pytest_sessionfinish(session, exitstatus):
    for tier in (FIRST_BUILD, ARM64_BESIDE):
        if tier:
            tier.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    t0 = time.monotonic()
    yield
    if not in_kernel_tier(item):
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
    beside = [t.time_line() for t in (FIRST_BUILD, ARM64_BESIDE) if t]
    beside = "; ".join(t for t in beside if t)
    terminalreporter.write_line("time per tier: " + line + (f"; {beside}" if beside else ""))


def small_git_tree(tmp_path, files=()):
    """A git tree of two commits holding a Makefile and `files` (paths, empty): what the
    lab's checks of a user's tree read, without a kernel."""
    tree = tmp_path / "linux"
    tree.mkdir()
    (tree / "Makefile").write_text("VERSION = 6\n")
    for f in files:
        (tree / f).parent.mkdir(parents=True, exist_ok=True)
        (tree / f).write_text("")
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    for n in (1, 2):
        subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", str(n)], check=True)
    return tree
