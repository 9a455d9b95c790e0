# SPDX-License-Identifier: MIT
"""Run bench/ipcbench: one invocation is one sample of one cell.

The engine prints one JSON object per line with --json (bench/README.md) and
exits 0 ok, 1 failed, 2 usage error, 77 skipped.  Everything is run as an argv
list, never through a shell, under a watchdog of our own on top of the
engine's --timeout.
"""

import json
import os
import signal
import subprocess
from dataclasses import dataclass, field

from ipclab import ROOT, UserError

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_SKIP = 0, 1, 2, 77

# Our watchdog fires this long after the engine's own --timeout should have:
# the engine normally cleans up and exits 1 first.
WATCHDOG_GRACE_S = 15


def default_engine_path():
    return os.environ.get("IPCBENCH") or os.path.join(ROOT, "bench", "ipcbench")


def find_engine(path=None):
    """The engine's path; UserError (one line, exit 2) if it is missing."""
    path = path or default_engine_path()
    if not os.path.exists(path):
        raise UserError("engine not found: %s (build it with `make engine`, or pass --engine"
                        " PATH / set IPCBENCH)" % path)
    if not os.access(path, os.X_OK) or os.path.isdir(path):
        raise UserError("engine is not executable: %s" % path)
    return path


@dataclass
class Outcome:
    status: str                 # ok | failed | skipped
    samples: list = field(default_factory=list)
    error: str = ""
    rc: int = 0
    argv: list = field(default_factory=list)


# Under QEMU TCG everything runs about 25x slower (DESIGN.md), and variants
# that put a thundering herd back are slower still: stretch the watchdogs so
# that emulation does not read as a hang.  IPCLAB_TIMEOUT_FACTOR overrides.
ACCEL_TIMEOUT_FACTOR = {"native": 1.0, "kvm": 2.0, "tcg": 40.0}


def timeout_factor():
    try:
        f = float(os.environ.get("IPCLAB_TIMEOUT_FACTOR", ""))
        if f > 0:
            return f
    except ValueError:
        pass
    return ACCEL_TIMEOUT_FACTOR.get(os.environ.get("IPCBENCH_ACCEL", "native"), 1.0)


def cell_timeout(cell):
    return cell.timeout * timeout_factor()


def argv_for(engine, cell):
    return [engine, cell.workload] + list(cell.args) + ["--json", "--timeout",
                                                        "%g" % cell_timeout(cell)]


def _last_line(text):
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    return lines[-1] if lines else ""


def run_cell(engine, cell, env=None):
    """Run one sample of a cell; never raises for engine failures."""
    argv = argv_for(engine, cell)
    try:
        # A new session, so that our own watchdog can kill the whole tree.
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True, env=env)
    except OSError as e:
        return Outcome("failed", error="cannot run %s: %s" % (engine, e), rc=-1, argv=argv)
    try:
        out, err = proc.communicate(timeout=cell_timeout(cell) + WATCHDOG_GRACE_S)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        return Outcome("failed", error="timed out after %gs"
                       % (cell_timeout(cell) + WATCHDOG_GRACE_S), rc=-9, argv=argv)
    except KeyboardInterrupt:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        raise
    rc = proc.returncode
    if rc == EXIT_SKIP:
        return Outcome("skipped", error=_last_line(err) or "skipped by the engine", rc=rc,
                       argv=argv)
    if rc != EXIT_OK:
        what = "usage error" if rc == EXIT_USAGE else "exit %d" % rc
        return Outcome("failed", error="%s: %s" % (what, _last_line(err) or "no message"),
                       rc=rc, argv=argv)
    samples = []
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            return Outcome("failed", error="engine printed invalid JSON: %.80s" % line,
                           rc=rc, argv=argv)
        if isinstance(obj, dict):
            samples.append(obj)
    if not samples:
        return Outcome("failed", error="engine printed no JSON sample", rc=rc, argv=argv)
    return Outcome("ok", samples=samples, rc=rc, argv=argv)
