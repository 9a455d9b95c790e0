# SPDX-License-Identifier: MIT
"""Kernel tier, SMP: a reader finds pipe->mutex held where two vCPUs run at once.

mainline-long-hold holds pipe->mutex about 150000 instructions longer on every pipe write,
with preemption disabled. With two vCPUs under multi-threaded TCG (timed mode), the writer on
CPU 0 and the reader on CPU 1, the reader's next read() arrives while the writer holds the
mutex, far more often than on mainline; with one vCPU the reader cannot run inside that hold,
so the longer hold adds nothing there. The count is lab-lockstat.patch's: fs/pipe.c's
mutex_lock() calls that found the mutex held. lock_stat's contentions are no witness here: a
waiter that spins on an owner running on another CPU (MUTEX_SPIN_ON_OWNER) gets the mutex
without a contention being counted, and with one vCPU they count the holder's preemption.
kernel/tests/pipe-alloc-counts divides the counts by the writes.

Both variants build in the lockstat overlay's build directory, so the tier adds two
incremental builds once that directory exists. The timeouts bound a boot; they are not
measurements.

`make test-smp` runs it (IPCLAB_TEST_SMP=1); it is not part of `make test`: it needs the two
vCPU threads to run at once, which a loaded host does not give (docs/lab.md, "SMP: two vCPUs,
two ways").
"""

import json
import os

import pytest

from .conftest import ROLE, ipclab, missing_prereq

pytestmark = [
    pytest.mark.skipif(not os.environ.get("IPCLAB_TEST_SMP"),
                       reason="the SMP known answer runs with `make test-smp` (IPCLAB_TEST_SMP=1)"),
    pytest.mark.skipif(missing_prereq() is not None, reason=str(missing_prereq())),
    pytest.mark.skipif("long_hold" not in ROLE, reason="this base has no long-hold variant"),
]

OVERLAY = "+counters+lockstat"
# 64 KiB writes into the engine's 1 MiB pipe, one writer and one reader: the difference of a
# run of 20 writes and one of 500 is what 480 writes cost.
COUNTS = ["kernel/tests/pipe-alloc-counts", "--cells", "1x1", "--writes", "20,500"]


def found_held(variant, cpus):
    r = ipclab("vm", "run", variant + OVERLAY, "--cpus", str(cpus), "--timeout", "900", "--",
               *COUNTS, "--cpus", "0,1" if cpus > 1 else "0,0", timeout=1200)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    row = json.loads(r.stdout.strip().splitlines()[-1])
    assert row["nproc"] == cpus, row
    assert "mutex_found_held_per_write" in row, f"no lock counts: {row['missing']}"
    return row["mutex_found_held_per_write"]


@pytest.fixture(scope="module")
def counts():
    for v in (ROLE["plain"], ROLE["long_hold"]):
        r = ipclab("kernel", "build", v + OVERLAY, timeout=3600)
        assert r.returncode == 0, r.stderr[-3000:]
    got = {(v, cpus): found_held(v, cpus)
           for cpus in (1, 2) for v in (ROLE["plain"], ROLE["long_hold"])}
    print("mutex found held per write:", got)       # in the log of a passing run, with -s
    return got


def test_a_longer_hold_raises_contention_with_two_concurrent_vcpus(counts):
    plain, held = counts[(ROLE["plain"], 2)], counts[(ROLE["long_hold"], 2)]
    assert held >= plain + 0.5, counts


def test_a_longer_hold_does_not_raise_contention_on_one_vcpu(counts):
    plain, held = counts[(ROLE["plain"], 1)], counts[(ROLE["long_hold"], 1)]
    assert held <= plain + 0.05, counts
