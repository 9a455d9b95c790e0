# SPDX-License-Identifier: MIT
"""ipclab: the Python front end of the Linux IPC performance lab."""

import os

__version__ = "0.1.0"

# The repository root (the package lives in <root>/ipclab).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class UserError(Exception):
    """Bad input or environment: the CLI prints one line and exits 2."""
