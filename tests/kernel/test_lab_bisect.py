# SPDX-License-Identifier: MIT
"""Bisect tier (`make test-bisect`; too slow for `make test`): a git repository of Debian's
6.12.117 with the seeds series as six commits, and `ipclab bisect` from the first to the
last on pipe-throughput's instructions per loop must name the skip-wakeup commit.

The repository is made once per series (scripts/series-repo, under the lab's cache; its
commit ids are the same every time it is made), and the lab's clone of it keeps its build
directory, so a rerun builds only what changed, or nothing when the images are cached.
The timeouts bound the work, they are not measurements.
"""

import hashlib
import json
import os
import shutil
import subprocess

import pytest

from ipclab.lab import cache, variants
from .conftest import REPO, ipclab, missing_prereq

pytestmark = [
    pytest.mark.skipif(missing_prereq() is not None, reason=str(missing_prereq())),
    pytest.mark.skipif(not os.environ.get("IPCLAB_TEST_BISECT"),
                       reason="the bisect tier: make test-bisect (IPCLAB_TEST_BISECT=1)"),
]

SERIES = "seeds"
CULPRIT = "pipe: skip wakeups that find no sleeper"


def series_digest():
    h = hashlib.sha256()
    v = variants.load_variant(SERIES)
    for p in v.patch_paths():
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


@pytest.fixture(scope="module")
def seeds_repo():
    """The series as commits; made again (at the same path) when the series changed."""
    repo = cache.cache_root() / "test-repos" / SERIES
    stamp = repo.parent / f"{SERIES}.series"
    if not (repo / ".git").is_dir() or not stamp.is_file() or stamp.read_text() != series_digest():
        shutil.rmtree(repo, ignore_errors=True)
        repo.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(REPO / "scripts" / "series-repo"), str(repo), SERIES], check=True,
                       capture_output=True, timeout=1800)
        stamp.write_text(series_digest())
    return repo


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_bisect_names_the_skip_wakeup_commit(seeds_repo, tmp_path):
    commits = git(seeds_repo, "rev-list", "--reverse", "HEAD").split()[1:]
    assert len(commits) == 6
    culprit = [c for c in commits if git(seeds_repo, "log", "-1", "--format=%s", c)
               .startswith(CULPRIT)]
    assert len(culprit) == 1
    out = tmp_path / "bisect"
    r = ipclab("bisect", "--tree", str(seeds_repo), commits[0], commits[-1],
               "--suite", "seed-skip-wakeups", "--metric", "pipe-throughput/copies=1",
               "-o", str(out), timeout=5400)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    text = r.stdout
    lines = text.splitlines()
    found = lines[lines.index(next(l for l in lines if l.startswith("first commit that moves")))
                  + 1]
    assert found.strip().startswith(culprit[0][:12]) and CULPRIT in found, text
    assert "insn/write+read loop" in text and "against its parent" in text
    # Every boot's results say exactly what was measured.
    log = [json.loads(x) for x in (out / "bisect.jsonl").read_text().splitlines()]
    measured = [x["measured"] for x in log[1:]]
    assert {m["commit"] for m in measured} >= {commits[0], commits[-1], culprit[0]}
    for m in measured:
        res = json.loads(open(m["results"][0]).read())
        build = res["meta"]["build"]
        assert build["commit"] == m["commit"] and build["release"].startswith("6.12.117")
        assert build["config_sha256"] and build["describe"]
    # The user's repository is as it was: the lab built in its own clone.
    assert git(seeds_repo, "status", "--porcelain") == ""
    assert git(seeds_repo, "rev-parse", "HEAD") == commits[-1]
