# SPDX-License-Identifier: MIT
"""Kernel lab: where the lab keeps what it makes (ipclab/cachedir.py), and content hashes."""

from __future__ import annotations

import hashlib

# The lab's modules hash through cache; the hashing itself is proc's, shared with the runner.
from ipclab.proc import sha256_file  # noqa: F401
from ipclab.cachedir import cache_root  # noqa: F401


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
