# SPDX-License-Identifier: MIT
"""Run bench/ipcbench: one invocation is one sample of one cell.

The engine prints one JSON object per line with --json (bench/README.md) and
exits 0 ok, 1 failed, 2 usage error, 77 skipped.  Everything is run as an argv
list, never through a shell, under a watchdog of our own on top of the
engine's --timeout.
"""

import functools
import json
import os
import shutil
from dataclasses import dataclass, field

from ipclab import EXIT_FAILED, EXIT_USAGE, ROOT, Error, proc

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_SKIP = 0, 1, 2, 77

# Our watchdog fires this long after the engine's own --timeout should have:
# the engine normally cleans up and exits 1 first.
WATCHDOG_GRACE_S = 15


def default_engine_path():
    """IPCBENCH; else the build beside the package in a checkout; else `ipcbench` on PATH
    (a package installed on its own, `pipx install .`)."""
    home = ROOT / "bench" / "ipcbench"
    return os.environ.get("IPCBENCH") or \
        (str(home) if home.exists() else shutil.which("ipcbench") or str(home))


def find_engine(path=None):
    """The engine's path; Error (one line, exit 2) if it is missing."""
    path = path or default_engine_path()
    if not os.path.exists(path):
        raise Error(f"engine not found: {path} (build it with `make engine`, put ipcbench on"
                    " PATH, or pass --engine PATH / set IPCBENCH)")
    if not os.access(path, os.X_OK) or os.path.isdir(path):
        raise Error(f"engine is not executable: {path}")
    return path


LIST_SCHEMA = "ipcbench-list/1"


def catalog(path=None):
    """What the engine offers, from `ipcbench list --json`: its workloads, their summaries
    and default counters, the fast-pipes ladder's rungs and the sweep's grid. The engine is
    the one place these are defined; Python asks it (once per engine per process).

    When the engine asked for is not there (a dry run printing commands for an engine to
    be installed elsewhere), the repository's own build describes it."""
    path = path or default_engine_path()
    home = str(ROOT / "bench" / "ipcbench")
    if not os.access(path, os.X_OK) and os.access(home, os.X_OK):
        path = home
    return _catalog(find_engine(path))


@functools.lru_cache(maxsize=None)
def _catalog(path):
    done = proc.run([path, "list", "--json"], 30, capture=True)
    if done.rc != 0:
        why = (done.err.strip().splitlines() or ["timed out" if done.timed_out else "no message"])
        # An engine that cannot list itself is a bad --engine or IPCBENCH, as a missing one
        # is: the user's input, exit 2.
        raise Error(f"{path} list --json failed: {why[-1]}: not a working ipcbench (rebuild"
                    " it with `make engine`, or name another with --engine)", EXIT_USAGE)
    try:
        data = json.loads(done.out)
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("schema") != LIST_SCHEMA or \
            not isinstance(data.get("workloads"), list):
        raise Error(f"{path} list --json: not an {LIST_SCHEMA} catalog (an old engine? "
                    "rebuild it with `make engine`)", EXIT_USAGE)
    return data


def analysis_catalog(path=None):
    """The part of the catalog that analysis needs: the fast-pipes ladder's rungs and the
    sweep's grid, which the seed tables are built from. A run keeps it in its results file
    (results.new), so that a stored file is shown and compared without an engine."""
    by_name = {w["name"]: w for w in catalog(path)["workloads"]}
    return {"ladder": list(by_name.get("fastpipe", {}).get("ladder") or []),
            "sweep": dict(by_name.get("pipe-sweep", {}).get("sweep") or {})}


def workloads(path=None):
    """{name: summary} of the engine's workloads, in its order."""
    return {w["name"]: w.get("summary", "") for w in catalog(path)["workloads"]}


def workload_info(name, path=None):
    for w in catalog(path)["workloads"]:
        if w["name"] == name:
            return w
    raise Error(f"the engine has no workload {name!r}", EXIT_FAILED)


@dataclass
class CellRun:
    """One invocation of the engine (or a peer program): its samples, or why it has none."""
    status: str                 # ok | failed | skipped
    samples: list = field(default_factory=list)
    error: str = ""
    rc: int = 0
    argv: list = field(default_factory=list)


# Under QEMU TCG everything runs about 25x slower (docs/lab.md), and variants
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


def cell_timeout(cell, accel=None):
    """The engine's --timeout for a cell; accel: where it runs, when not this process's
    IPCBENCH_ACCEL (a guest's job written on the host)."""
    factor = timeout_factor() if accel is None else ACCEL_TIMEOUT_FACTOR.get(accel, 1.0)
    return cell.timeout * factor


def argv_for(engine, cell, accel=None):
    return [engine, cell.workload] + list(cell.args) + ["--json", "--timeout",
                                                        f"{cell_timeout(cell, accel):g}"]


def _last_line(text):
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    return lines[-1] if lines else ""


def run_cell(engine, cell, env=None):
    """Run one sample of a cell; never raises for engine failures."""
    argv = argv_for(engine, cell)
    limit = cell_timeout(cell) + WATCHDOG_GRACE_S
    try:
        done = proc.run(argv, limit, capture=True, env=env)
    except (OSError, Error) as e:
        return CellRun("failed", error=f"cannot run {engine}: {e}", rc=-1, argv=argv)
    if done.timed_out:
        return CellRun("failed", error=f"timed out after {limit:g}s", rc=-9, argv=argv)
    return outcome(argv, done.rc, done.out, done.err)


def outcome(argv, rc, out, err):
    """What one engine invocation gave: its exit status and its output read as samples
    (here, or where a guest ran it and left rc, stdout and stderr)."""
    if rc == EXIT_SKIP:
        return CellRun("skipped", error=_last_line(err) or "skipped by the engine", rc=rc,
                       argv=argv)
    if rc != EXIT_OK:
        what = "usage error" if rc == EXIT_USAGE else f"exit {int(rc)}"
        return CellRun("failed", error=f"{what}: {_last_line(err) or 'no message'}",
                       rc=rc, argv=argv)
    samples = []
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            return CellRun("failed", error=f"engine printed invalid JSON: {line:>.80}",
                           rc=rc, argv=argv)
        if isinstance(obj, dict):
            samples.append(obj)
    if not samples:
        return CellRun("failed", error="engine printed no JSON sample", rc=rc, argv=argv)
    return CellRun("ok", samples=samples, rc=rc, argv=argv)
