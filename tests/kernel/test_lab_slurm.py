# SPDX-License-Identifier: MIT
"""Kernel tier, `ab --executor slurm` on a real one-node Slurm cluster (tests/slurm_cluster.py:
Debian's slurm-wlm and munge, started here and stopped afterwards): the same deterministic
`ab` of the plain and the write-cost variants, on one icount-check cell, run locally and then
with each boot a Slurm job, must write the same files, the same build and clock records, the
same verdicts, and counts that agree as two local boots of one kernel agree.

Two deterministic boots of one kernel do not repeat to the instruction: a cell's per-sample
counts move by about 0.001% from boot to boot (the A/A floor, docs/lab.md), on the same
host as on another. So "the same counts" is the A/A test's own bound (conftest.aa_bound)
on the Slurm boot against the local boot of each side, and the two runs' verdicts equal.

And an `ab` whose new side the cache lacks: its build is a job, and its boot waits for it.

A cluster that cannot start fails the test with its daemon's own log lines; it never skips.
Opt-in (`make test-slurm`, IPCLAB_TEST_SLURM=1): three more boot pairs and a build. `make
test` boots one cell through the cluster (test_lab_deterministic.py)."""

import json
import math
import os
import re
import shutil
import time

import pytest

from ipclab import compare, results
from ipclab.compare import record as comparison
from ipclab.lab import kernel, variants
from .conftest import KNOWN_ANSWER_REPS, PLAIN, ROLE, aa_bound, ipclab, missing_prereq

CELL = "pipe-throughput/copies=1"
AB = ("ab", PLAIN, ROLE["write_cost"], "--deterministic", "--suite", "icount-check",
      "--cell", CELL, *KNOWN_ANSWER_REPS)
# ab's exit statuses of a finished comparison (0, or its verdict's: 3 better, 4 worse, ...)
FINISHED = set(comparison.EXIT_STATUSES.values())
# What the results say of where and how they were measured, beside the boot's own record.
SAME_META = ("variant", "kernel", "patches", "build", "accel", "emulated", "clock",
             "cost_model")


def missing():
    if not os.environ.get("IPCLAB_TEST_SLURM"):
        return "opt-in: make test-slurm (IPCLAB_TEST_SLURM=1)"
    return missing_prereq()


pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))


@pytest.fixture(scope="module")
def runs(cluster, tmp_path_factory):
    for variant in (PLAIN, ROLE["write_cost"]):
        r = ipclab("kernel", "build", variant, timeout=3600)
        assert r.returncode == 0, r.stderr[-3000:]
    out = {}
    for name, extra in (("local", ("--executor", "local")), ("slurm", ("--executor", "slurm"))):
        d = tmp_path_factory.mktemp(name)
        r = ipclab(*AB, "-o", str(d), *extra, timeout=2400)
        assert r.returncode in FINISHED, r.stdout[-3000:] + r.stderr[-3000:]
        out[name] = (d, r.stderr)
    return out


def boot_files(d):
    return sorted(p.name for p in d.glob("*.json"))


def test_the_boots_were_slurm_jobs(runs):
    d, err = runs["slurm"]
    assert err.count(": slurm job ") == 2, err
    logs = sorted((d / "slurm").glob("*-boot1.log"))
    records = [json.loads(p.read_text()) for p in sorted((d / "slurm").glob("*.boot.json"))]
    assert len(logs) == 2 and len(records) == 2 and all(r["ok"] for r in records), err


def test_slurm_writes_the_files_and_records_a_local_ab_writes(runs):
    (local, _), (slurm, _) = runs["local"], runs["slurm"]
    assert boot_files(slurm) == boot_files(local) and "compare.json" in boot_files(local)
    for name in boot_files(local):
        if name == "compare.json":
            continue
        a, b = results.load(local / name), results.load(slurm / name)
        for k in SAME_META:
            assert a["meta"].get(k) == b["meta"].get(k), (name, k)
        assert [(c["key"], c["status"], len(c["samples"])) for c in a["cells"]] == \
            [(c["key"], c["status"], len(c["samples"])) for c in b["cells"]], name


def test_slurm_counts_agree_with_local_ones_as_an_aa_pair_does(runs):
    (local, _), (slurm, _) = runs["local"], runs["slurm"]
    for boot in sorted(local.glob("?-*-boot1.json")):
        outcome = compare.compare_results(results.load(str(boot)),
                                          results.load(str(slurm / boot.name)))
        primary = [r for r in compare.outcome_record(outcome)["rows"] if r.get("primary")]
        assert primary, boot.name
        for r in primary:
            bound = aa_bound(r["key"], r["path"], len(primary))
            assert abs(math.log1p(r["delta"])) <= bound, (boot.name, r, bound)


def test_slurm_and_local_reach_the_same_verdicts(runs):
    primary = {name: [(r["key"], r["path"], r["verdict"])
                      for r in json.loads((d / "compare.json").read_text())["rows"]
                      if r.get("primary")]
               for name, (d, _) in runs.items()}
    assert primary["local"] == primary["slurm"]
    # The write-cost patch's 30 instructions per write, found through Slurm too.
    assert [v for _, _, v in primary["slurm"]] == ["worse"], primary


def comment_patch(token: str) -> str:
    """A patch that changes no code of fs/pipe.c, with a token of its own: an image key the
    cache has never seen, built incrementally in the tree mainline's builds use."""
    return f"""--- a/fs/pipe.c
+++ b/fs/pipe.c
@@ -3,6 +3,7 @@
  *  linux/fs/pipe.c
  *
  *  Copyright (C) 1991, 1992, 1999  Linus Torvalds
+ *  ({token})
  */

 #include <linux/mm.h>
"""


def test_an_image_the_cache_lacks_is_built_by_a_job_its_boots_wait_for(cluster, tmp_path):
    patch = tmp_path / f"comment-{os.getpid()}-{time.time_ns()}.patch"
    patch.write_text(comment_patch(patch.stem))
    new = variants.resolve(f"{PLAIN}+{patch}")
    assert not kernel.find(new)[1]
    try:
        r = ipclab("ab", PLAIN, f"{PLAIN}+{patch}", "--deterministic", "--suite",
                   "icount-check", "--cell", CELL, *KNOWN_ANSWER_REPS, "-o",
                   str(tmp_path / "ab"), "--executor", "slurm", timeout=2400)
        assert r.returncode in FINISHED, r.stdout[-3000:] + r.stderr[-3000:]
        [build] = re.findall(rf"build of {re.escape(new.name)}: slurm job (\d+)", r.stderr)
        assert f"build of {new.name} (slurm job {build}) ended" in r.stderr, r.stderr
        [boot] = re.findall(r"boot 1/1 of B \([^)]*\): slurm job (\d+_\d+)", r.stderr)
        built = cluster.job(build)
        assert built["JobState"] == "COMPLETED", built
        # Both were queued at once; Slurm held the boot until the build ended (afterok).
        assert cluster.job(boot)["StartTime"] >= built["EndTime"]
        [b_file] = (tmp_path / "ab").glob("B-*-boot1.json")
        assert all(c["status"] == "ok" for c in results.load(b_file)["cells"])
        assert kernel.find(new)[1]          # filed in the cache the jobs share
    finally:
        meta, filed = kernel.find(new)
        if filed:
            shutil.rmtree(kernel.image_dir(meta["key"]), ignore_errors=True)
