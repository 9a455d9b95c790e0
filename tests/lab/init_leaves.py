# SPDX-License-Identifier: MIT
"""What the arm64 guest's init (scripts/guest-init.c) leaves in the shared directory
for one step, written by hand for the tests that read it back."""

from pathlib import Path


def leave(shared: Path, step: str, status=None, out="", err="", timeout=None):
    """A step's wait status (none: the init never reached it), its output and its
    watchdog."""
    if status is not None:
        (shared / f"{step}.rc").write_text(f"{status}\n")
    (shared / f"{step}.out").write_text(out)
    (shared / f"{step}.err").write_text(err)
    if timeout is not None:
        (shared / f"{step}.timeout").write_text(f"{timeout}\n")
