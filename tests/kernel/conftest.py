# SPDX-License-Identifier: MIT
"""What the kernel tier's files share: the base under test and the variant playing each part
(ROLES), what a boot needs of the machine (missing_prereq), and the real command line.

The tier tests one base: mainline, or the one IPCLAB_TEST_BASE names (`make test-lts`).
The directory is a package, so that this module is `kernel.conftest` and leaves
tests/conftest.py the `conftest` the other test files import."""

import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import before_lab_command, lab_command_time
from ipclab import deterministic
from ipclab.deterministic import floor
from ipclab.lab import bases
from slurm_cluster import Cluster, ClusterError, missing_tools

REPO = Path(__file__).resolve().parents[2]
TEST_BASE = os.environ.get("IPCLAB_TEST_BASE", "mainline")
ROLES = {
    # plain: the base unpatched; write_cost: about 30 instructions more per pipe write;
    # smp_mb: one smp_mb() more per pipe write (the cost model's known answer: +1 atomic);
    # long_hold: pipe->mutex held longer on every write (the SMP contention known answer);
    # series: the project's whole series for that base; upstream_fails: the conformance tests
    # the plain base fails as its release ships (each named, so a rebase that fixes one shows).
    "mainline": dict(plain="mainline", write_cost="mainline-write-cost",
                     smp_mb="mainline-smp-mb", series="mainline-series",
                     long_hold="mainline-long-hold",
                     upstream_fails={"pipe_failed_write_allocates_nothing",
                                     "pipe_blocked_writer_holds_no_pages"}),
    "lts": dict(plain="lts", write_cost="write-cost", series="seeds", upstream_fails=set()),
}
ROLE = ROLES[TEST_BASE]
# The deterministic known answers are a whole event or about 1% of a cell's instructions per
# operation, and a cell's counts repeat from sample to sample within 0.01%: the fewest samples
# the judge gives a verdict from decide them as the suite's nine do (which are for the figures
# docs/lab.md quotes), in two thirds of the time.
KNOWN_ANSWER_REPS = ("--reps", str(deterministic.MIN_SAMPLES))
PLAIN = ROLE["plain"]
RELEASE = bases.load(TEST_BASE).release


# An A/A test asserts that two boots of one kernel agree. Its bound on a row is the floor's
# prediction bound, t(k) x rms of the log ratios of the A/A pairs the floor file records
# for that cell and metric (scripts/icount-floor; docs/measured/icount-floor.md prints them),
# at the level that keeps the test's false failures under 1 in 1000 runs (Bonferroni over
# the rows it asserts), if the pairs are normal. Fewer than AA_PAIRS pairs is too few to
# know a tail from: the test fails and says so.
AA_FALSE_FAILURE = 0.001
AA_PAIRS = 20


def aa_bound(key, path, rows, base=TEST_BASE, cpus=1):
    """The largest |log(new/base)| an A/A pair may show on this row (above)."""
    floors, _ = floor.load("icount shift=0", cpus, base)
    f = floors.get(floor.key(key, path))
    assert f is not None and f.k >= AA_PAIRS, \
        f"{key} {path} on {base}: {f.k if f else 0} A/A pairs in {floor.FLOOR_FILE}," \
        f" fewer than {AA_PAIRS}"
    return f.quantile(1 - AA_FALSE_FAILURE / (2 * rows)) * f.rms


def missing_prereq():
    for name in bases.names():
        if bases.tarball(bases.load(name)) is None:
            return f"base {name}'s kernel source missing (make lab-deps fetches it)"
    if shutil.which("qemu-system-x86_64") is None:
        return "qemu-system-x86_64 missing (make lab-deps installs qemu-system-x86)"
    if not (REPO / ".venv" / "bin" / "vng").exists():
        return "virtme-ng missing from .venv (make lab-deps)"
    for tool in ("make", "gcc", "flex", "bison", "bc", "patch"):
        if shutil.which(tool) is None:
            return f"{tool} missing (make lab-deps)"
    return None


def _run(argv, timeout):
    return subprocess.run([sys.executable, "-m", "ipclab", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def ipclab(*argv, timeout=1800):
    """The real command line, as a user runs it; its time counts toward the tier's builds or
    boots (tests/conftest.py)."""
    before_lab_command()
    t0 = time.monotonic()
    try:
        return _run(argv, timeout)
    finally:
        lab_command_time(argv, time.monotonic() - t0)


def assert_ab_verdict(r, out):
    """`ab` ran to a verdict: its exit status is the one its comparison record's overall
    verdict means (compare.record.exit_status), not a failure (1) or bad input (2)."""
    import json
    from ipclab.compare import record
    assert r.returncode not in (1, 2), r.stdout[-3000:] + r.stderr[-3000:]
    rec = json.loads((Path(out) / "compare.json").read_text())
    assert r.returncode == record.exit_status(rec), (r.returncode, rec["overall"])


def ipclab_side_by_side(*argvs, timeout=1800):
    """Boots of one vCPU each at once, one per host core, as `ab` boots its pairs: their
    CompletedProcesses in order. Their wall time counts once."""
    before_lab_command()
    t0 = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=len(argvs)) as pool:
            return list(pool.map(lambda argv: _run(argv, timeout), argvs))
    finally:
        lab_command_time(argvs[0], time.monotonic() - t0)


@pytest.fixture(scope="session", autouse=os.environ.get("IPCLAB_EXECUTOR") == "slurm")
def cluster():
    """A one-node Slurm cluster started here (tests/slurm_cluster.py) for the session, which
    the lab's Slurm commands (SLURM_CONF) reach alone. One that cannot start fails the test
    with its daemons' own log lines: the install step installs Slurm, so never a skip.
    With IPCLAB_EXECUTOR=slurm (`make test-kernel-slurm`) every test has it: the tier's own
    commands then run their builds and boots as its jobs."""
    why = missing_tools()
    assert why is None, why
    c = Cluster()
    try:
        c.start()
    except ClusterError as e:
        pytest.fail(f"the one-node Slurm cluster did not start ({c.d}):\n{e}")
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = c.env()["SLURM_CONF"]
    try:
        yield c
    finally:
        c.remove()
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
