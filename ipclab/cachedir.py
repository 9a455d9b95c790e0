# SPDX-License-Identifier: MIT
"""Where ipclab keeps what it makes and fetches (env IPCLAB_CACHE, default /var/cache/ipclab,
outside the repository so that every clone on the machine shares it): the kernel lab's
sources and images, and the upstream benchmarks built from those sources."""

import os
from pathlib import Path

from ipclab import Error


def cache_root() -> Path:
    """The cache's folder; Error (one line, exit 2) when IPCLAB_CACHE cannot be one, so
    that a bad value is named before anything is built rather than deep inside a build."""
    root = os.environ.get("IPCLAB_CACHE", "/var/cache/ipclab")
    why = problem(root)
    if why:
        raise Error(f"IPCLAB_CACHE={root}: {why}")
    return Path(root)


def problem(root: str) -> str | None:
    """Why `root` cannot be the cache, or None."""
    if not root or not os.path.isabs(root):
        # The builds and the guest run in other folders than this one.
        return "not an absolute path"
    p = Path(root)
    if p.exists():
        if not p.is_dir():
            return "exists and is not a folder"
        return None if os.access(p, os.W_OK | os.X_OK) else "a folder this user cannot write"
    parent = p.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot be made: {parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot be made: this user cannot write {parent}"
    return None
