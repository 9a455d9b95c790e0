# SPDX-License-Identifier: MIT
"""Kernel tier, the census on arm64 (`census --arch arm64`): one deterministic boot of the
plain variant with the wakeup counters, on the lab's own initramfs. pipe1's tasks each write
a byte into their own pipe and read it back, so no write finds a reader asleep ("write-rd"):
a known answer (0/16000 on arm64, as on x86's tiny and production configs). The ping-pong's
writes find their peer asleep in most calls (9210/10001 and 9417/10002 in two boots of the
tiny config, 2026-11-27): a bound, not a known answer, since a peer on one vCPU is not always
asleep yet. A shell script is refused. The timeout bounds the build and the boot, it is not
a measurement.

Opt-in (`make test-arm64-census`, IPCLAB_TEST_ARM64_CENSUS=1): neither `make test` nor
`make test-arm64` has the budget for one more arm64 boot."""

import json
import os
import shutil

import pytest

from .conftest import PLAIN, ipclab, missing_prereq


def missing():
    if not os.environ.get("IPCLAB_TEST_ARM64_CENSUS"):
        return "opt-in: make test-arm64-census (IPCLAB_TEST_ARM64_CENSUS=1)"
    for tool in ("aarch64-linux-gnu-gcc", "qemu-system-aarch64"):
        if shutil.which(tool) is None:
            return f"{tool} missing (make lab-deps)"
    return missing_prereq()


pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))


@pytest.fixture(scope="module")
def census(tmp_path_factory):
    out = tmp_path_factory.mktemp("census-arm64") / "census.json"
    r = ipclab("census", PLAIN, "--arch", "arm64", "--deterministic", "--workload", "pipe1",
               "--workload", "pipe-context", "-o", str(out), timeout=5400)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return json.loads(out.read_text())


def row(rec, name):
    return next(w for w in rec["workloads"] if w["workload"] == name)


def test_the_record_is_arm64s(census):
    assert census["arch"] == "arm64" and census["build"].get("arch") == "arm64"


def test_a_task_alone_with_its_pipe_is_never_found_asleep(census):
    r = row(census, "pipe1")
    assert r["rc"] == 0
    site = r["pipe"]["write-rd"]
    assert site["calls"] >= 16000 and site["sleepers"] == 0, site


def test_the_ping_pong_mostly_finds_its_peer_asleep(census):
    r = row(census, "pipe-context")
    assert r["rc"] == 0
    site = r["pipe"]["write-rd"]
    assert site["calls"] >= 10000 and site["sleepers"] > site["calls"] / 2, site


def test_a_script_is_refused_in_one_line():
    r = ipclab("census", PLAIN, "--arch", "arm64", "--workload", "shell-pipeline",
               timeout=600)
    assert r.returncode == 2 and "shell-pipeline does not run on arm64" in r.stderr
