# SPDX-License-Identifier: MIT
"""Each base's series as a submitter sends it: signed by scripts/sign-series, and
checkpatch.pl --strict clean on every patch but the cover letter (docs/design.md, "Kernel
patches"). The kernel's checkpatch is the base's own, from IPCLAB_KERNEL_SRC, the lab's
source tree or the tarball that `make lab-deps` fetches; the test is skipped only when none
of them is there."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from ipclab.lab import bases

SCRIPT = os.path.join(ROOT, "scripts", "sign-series")
# (base, series): the number of patches, where it is fixed. mainline has one series per tree;
# mqueue is a single patch, sent without a cover letter.
SERIES = {("lts", ""): 6, ("mainline", "pipe"): None, ("mainline", "mqueue"): 1}


@pytest.mark.parametrize("base, name", sorted(SERIES), ids=lambda x: x or "-")
def test_signed_series_is_checkpatch_strict_clean(base, name, tmp_path):
    prefix = name + "-" if name else ""
    series = sorted(p.name for p in (Path(ROOT) / "kernel" / "patches" / base).glob(
        prefix + "[0-9][0-9][0-9][0-9]-*.patch"))
    if not series:
        pytest.skip(f"kernel/patches/{base} has no series {name or '(unnamed)'} yet")
    out = tmp_path / "out"
    # --draft: a series whose figures are still to come is checked all the same.
    # Extracting checkpatch from a tarball takes a full pass over it: about 15 s here.
    r = subprocess.run([sys.executable, SCRIPT, "Test Submitter <test@example.org>", str(out),
                        "--allow-test-identity", "--check", "--draft", "--base", base,
                        *(["--series", name] if name else [])],
                       capture_output=True, text=True, timeout=900)
    if r.returncode == 3:
        assert bases.tarball(bases.load(base)) is None, f"{base}'s source is here: {r.stderr}"
        pytest.skip(r.stderr.strip())
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}{r.stderr}"
    written = sorted(p.name for p in out.iterdir())
    covers = [n for n in series if n.startswith(prefix + "0000-")]
    # A series of several patches opens with its cover letter; a single patch goes alone.
    assert written == series and (covers == series[:1] if len(series) > 1 else not covers)
    mails = len(series) - len(covers)
    assert SERIES[base, name] in (None, mails)
    assert f"checkpatch: {mails} of {mails} patches clean" in r.stdout
