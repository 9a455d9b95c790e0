# SPDX-License-Identifier: MIT
"""The series as a submitter sends it: 0000-0006 signed by scripts/sign-series, and
checkpatch.pl --strict clean on 0001-0006 (docs/design.md, "Kernel patches"). The kernel's
checkpatch comes from IPCLAB_KERNEL_SRC, the lab's source tree or the Debian tarball that
`make lab-deps` installs; the test is skipped only when none of them is there."""
import os
import subprocess
import sys

import pytest
from conftest import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "sign-series")
TARBALL = os.environ.get("IPCLAB_KERNEL_TARBALL", "/usr/src/linux-source-6.12.tar.xz")


def test_signed_series_is_checkpatch_strict_clean(tmp_path):
    out = tmp_path / "out"
    # Extracting checkpatch from the tarball takes a full pass over it: about 15 s here.
    r = subprocess.run([sys.executable, SCRIPT, "Test Submitter <test@example.org>", str(out),
                        "--allow-test-identity", "--check"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode == 3:
        assert not os.path.isfile(TARBALL), f"{TARBALL} is there, yet: {r.stderr}"
        pytest.skip(r.stderr.strip())
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}{r.stderr}"
    written = sorted(p.name for p in out.iterdir())
    assert len(written) == 7 and written[0].startswith("0000-")
    assert "checkpatch: 6 of 6 patches clean" in r.stdout
