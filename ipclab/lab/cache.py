# SPDX-License-Identifier: MIT
"""Kernel lab: where the lab keeps what it makes (env IPCLAB_CACHE, default /var/cache/ipclab,
outside the repository so that every clone on the machine shares it), and content hashes."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("IPCLAB_CACHE", "/var/cache/ipclab"))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
