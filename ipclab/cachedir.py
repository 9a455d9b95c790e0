# SPDX-License-Identifier: MIT
"""Where ipclab keeps what it makes and fetches (env IPCLAB_CACHE, default /var/cache/ipclab,
outside the repository so that every clone on the machine shares it): the kernel lab's
sources and images, and the upstream benchmarks built from those sources."""

import os
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("IPCLAB_CACHE", "/var/cache/ipclab"))
