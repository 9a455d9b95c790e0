# SPDX-License-Identifier: MIT
"""ipclab: the Python front end of the Linux IPC performance lab.

docs/architecture.md gives the data flow and which module owns what.
"""

from pathlib import Path

__version__ = "0.1.0"

# The repository root (the package lives in <root>/ipclab).
ROOT = Path(__file__).resolve().parent.parent

# Exit statuses every command shares.
EXIT_FAILED = 1         # something we ran failed (a cell, a build, a guest)
EXIT_USAGE = 2          # bad input: arguments, names, files
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
EXIT_TERMINATED = 143   # SIGTERM, handled as Ctrl-C is (ipclab/signals.py)


class Error(Exception):
    """A failure the user can act on: the CLI prints it as one line and exits with `code`."""

    def __init__(self, message, code=EXIT_USAGE):
        super().__init__(message)
        self.code = code
