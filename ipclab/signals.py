# SPDX-License-Identifier: MIT
"""SIGTERM handled as Ctrl-C is.

SIGTERM raises Terminated, a KeyboardInterrupt: every path that saves a run and kills the
process groups it started on Ctrl-C (runner.execute, proc.run, cli.run_command) does the
same on SIGTERM, and only the word and the exit status (128 + the signal) differ.
"""

import signal
import threading

from ipclab import EXIT_INTERRUPTED, EXIT_TERMINATED


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived."""


def _on_term(signum, frame):
    # A second SIGTERM (a service manager repeats itself) must not cut short the save
    # and cleanup the first one started; SIGKILL still ends us.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated()


def install():
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_term)


def status(exc):
    """The exit status an interrupt ends the command with."""
    return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED


def word(exc):
    return "terminated" if isinstance(exc, Terminated) else "interrupted"
