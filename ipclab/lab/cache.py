# SPDX-License-Identifier: MIT
"""Kernel lab: where the lab keeps what it makes (env IPCLAB_CACHE, default /var/cache/ipclab,
outside the repository so that every clone on the machine shares it), and content hashes."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

# The lab's modules hash through cache; the hashing itself is proc's, shared with the runner.
from ipclab.proc import sha256_file  # noqa: F401


def cache_root() -> Path:
    return Path(os.environ.get("IPCLAB_CACHE", "/var/cache/ipclab"))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
