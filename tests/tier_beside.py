# SPDX-License-Identifier: MIT
"""A test tier run beside the session, in a pytest process of its own; or a command.

`make test` runs two things beside its session. The kernel tier's first build starts with the
session and runs beside the Python tests, which take one core (tests/conftest.py). The
arm64 tier runs beside the kernel tier (IPCLAB_TEST_ARM64=beside). Most of the kernel
tier's boots are one QEMU thread, and the host has two cores: the second is free for the
other tier's boots and build. The two tiers' kernel builds still take turns on the lab's
build lock, so the tier beside starts after the session's first kernel build, when the
session's own boots begin, instead of queuing in front of it.

The tier's output goes to a log. One test of the session (BesideTier.check, placed by
tests/conftest.py before the timed SMP tests, which need both cores idle) waits for it and
fails with the log's tail when it failed. Interrupting the session interrupts it too: SIGINT
to its process group, as a terminal's Ctrl-C would, then SIGKILL if it is still there.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

# A bound on the tier beside, not a measurement: a cold arm64 build and six boots took
# about 8 minutes on an idle 2-core host (docs/lab.md, arm64).
WAIT_S = 3600
STOP_GRACE_S = 30
SUMMARY = re.compile(r"^=*\s*(\d+ (passed|failed|skipped|error|errors)\b.*?)\s*=*$")


def sigint_default():
    """For a child's preexec_fn. A shell's background job (`make test &`) starts with SIGINT
    ignored and Python keeps it so; a child that is to be stopped as Ctrl-C stops it must
    not inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class BesideTier:
    """A pytest process running `test_path`, or any other command `argv` names."""

    def __init__(self, name, root, test_path, env, log, argv=None):
        self.name, self.root = name, root
        self.argv = argv or [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             test_path]
        self.env, self.log = env, log
        self.proc = None
        self.t0 = self.seconds = None

    def start(self):
        """Start the tier once; later calls do nothing."""
        if self.proc is not None:
            return
        env = {k: v for k, v in os.environ.items() if k != "IPCLAB_TEST_TIMES"}
        env.update(self.env)
        # Its own time line, read back by check(): builds and boots of the tier beside.
        env["IPCLAB_TEST_TIMES"] = os.devnull
        # So that `tail -f` on the log follows the tier test by test.
        env["PYTHONUNBUFFERED"] = "1"
        self.t0 = time.monotonic()
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(self.argv, cwd=self.root, env=env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=sigint_default)
        # Its time ends when it exits, which may be long before the session asks.
        self.reaper = threading.Thread(target=self._reap, daemon=True)
        self.reaper.start()

    def _reap(self):
        self.proc.wait()
        self.seconds = time.monotonic() - self.t0

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout=WAIT_S):
        """The tier's exit status; None if it was still running after `timeout` seconds
        (it is then stopped)."""
        self.start()
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            return None
        self.reaper.join()
        return rc

    def stop(self):
        """Interrupt a tier still running, and make sure it is gone."""
        if self.proc is None or self.proc.poll() is not None:
            return
        for sig, grace in ((signal.SIGINT, STOP_GRACE_S), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=grace)
                return
            except subprocess.TimeoutExpired:
                continue

    def output(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def outcome(self):
        """(pytest's summary line, its time-per-tier line) from the log, '' where absent."""
        summary = times = ""
        for line in self.output().splitlines():
            m = SUMMARY.match(line)
            if m:
                summary = m.group(1)
            if line.startswith("time per tier: "):
                times = line[len("time per tier: "):]
        return summary, times

    def check(self):
        """What the session's check test asserts: (ok, skipped, message)."""
        rc = self.wait()
        summary, _ = self.outcome()
        where = f"{self.name} tier beside the session (log {self.log})"
        if rc is None:
            return False, False, f"{where}: still running after {WAIT_S} s, stopped\n" + \
                self.output()[-4000:]
        if rc == 0 and "passed" not in summary:
            return True, True, f"{where}: {summary or 'no test ran'}"
        return rc == 0, False, f"{where}: exit {rc}, {summary}\n" + self.output()[-6000:]

    def time_line(self):
        """The tier's share of the session's time line, once it has ended: its own pytest's
        seconds (the session may have reached its check long after it ended)."""
        if self.seconds is None:
            return None
        summary, times = self.outcome()
        took = re.search(r" in ([\d.]+)s", summary)
        seconds = float(took.group(1)) if took else self.seconds
        kept = [t for t in times.split(", ") if t and not t.startswith("Python")]
        inner = f" ({', '.join(kept)})" if kept else ""
        return f"{self.name} beside {seconds:.0f} s{inner}"
