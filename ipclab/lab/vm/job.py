# SPDX-License-Identifier: MIT
"""What a boot asks of the guest: a suite's job (`ipclab run SUITE` as a structured job), the
census's (kernel/tests/wakeup-sites's workloads), the conformance tests', the THP mode a
suite wants, and the fault injection a command gets. Each architecture's backend
(lab/backend.py) gets a job into its guest its own way."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from ipclab import ROOT, Error, suites

from .clock import Clock


@dataclasses.dataclass(frozen=True)
class SuiteJob:
    """What a suite boot asks of the guest: `ipclab run SUITE` as a structured job.

    profile_by: None for no profile; "perf" (sampled in the guest) or "marker" (the guest
    only marks each cell's window; QEMU's plugin counts its instructions, see insn_plugin).
    """
    suite: str
    mode: str = suites.QUICK            # suites.QUICK or suites.FULL
    reps: int | None = None             # None: the suite's default
    warmups: int | None = None
    profile_by: str | None = None
    cells: tuple[str, ...] = ()        # only these cells (keys or their starts); () all

    # What the guest leaves in the boot's shared directory.
    RESULTS = "result.json"
    PROFILE = "profile.json"
    INSN_COUNTS = "insncount.txt"

    def argv(self, shared: Path) -> list[str]:
        """The guest's command: the one place it is built. The results say nothing about
        where they were measured; the host tags them after the boot."""
        argv = [sys.executable, "-m", "ipclab", "run", self.suite, f"--{self.mode}",
                "-o", str(shared / self.RESULTS), "--quiet",
                # The repo is read-only in the guest; reports are made on the host.
                "--no-report"]
        if self.reps:
            argv += ["--reps", str(self.reps)]
        if self.warmups is not None:
            argv += ["--warmups", str(self.warmups)]
        for c in self.cells:
            argv += ["--cell", c]
        if self.profile_by:
            argv += ["--profile", str(shared / self.PROFILE), "--profile-by", self.profile_by]
        return argv

    def insn_counts(self, shared: Path, clock: Clock) -> Path | None:
        """Where QEMU's plugin writes its counts: it is loaded in every deterministic boot
        (each sample's costs, and the marker profile)."""
        return shared / self.INSN_COUNTS if clock.deterministic else None


@dataclasses.dataclass(frozen=True)
class CensusJob:
    """What a census boot asks of the guest: kernel/tests/wakeup-sites's workloads, each
    one's counters reset, the workload run and the counters read, a JSON row each.

    named: the workloads were named on the command line (a backend refuses one its guest
    cannot run, exit 2, rather than marking its row); driver: the driver as a module, for a
    backend whose guest has no Python and does the driver's part on the host."""
    names: tuple[str, ...]
    named: bool = False
    driver: object = None

    DRIVER = ROOT / "kernel" / "tests" / "wakeup-sites"
    WORKLOADS_DIR = ROOT / "kernel" / "tests" / "workloads"

    def argv(self) -> list[str]:
        """The driver's command in a guest that has the host's root and Python."""
        return [sys.executable, str(self.DRIVER), *self.names]

    @staticmethod
    def parse(text: str) -> list[dict]:
        """The driver's rows from the guest's output: every line that is a JSON object with
        a "workload"; anything else (warnings, a traceback) is not a row."""
        rows = []
        for line in text.splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and isinstance(row.get("workload"), str):
                rows.append(row)
        return rows


@dataclasses.dataclass(frozen=True)
class ConformanceJob:
    """What a conformance boot asks of the guest: conformance/run.sh's tests (all, or
    these, in the order given), with run.sh's variables (CT_TIMEOUT, CT_SEED,
    CT_STRESS_ARGS, CT_ARGS_<test>...) from `environ` when given."""
    tests: tuple[str, ...] = ()
    environ: Mapping[str, str] | None = None

    DIR = ROOT / "conformance"
    RUN_SH = "conformance/run.sh"

    def argv(self) -> list[str]:
        """run.sh's command in a guest that has a shell and the host's root."""
        return [self.RUN_SH, *self.tests]

    @classmethod
    def test_names(cls) -> list[str]:
        """Every test, in run.sh's order (its bin/* glob)."""
        return sorted(p.stem for p in cls.DIR.glob("*.c"))

    @classmethod
    def check(cls, tests) -> None:
        """Error (exit 2) for a name that is no conformance test, as run.sh's "no such
        test"."""
        unknown = sorted(set(tests) - set(cls.test_names()))
        if unknown:
            raise Error(f"no such conformance test: {', '.join(unknown)} (the tests are "
                        f"conformance/*.c)")


def suite_thp(suite: str) -> str | None:
    """THP mode a suite asks for, if it asks."""
    s = suites.SUITES.get(suite)
    return s.thp if s is not None and s.thp in ("always", "madvise", "never") else None


def parse_faults(spec: str | None, flag: str = "--fail-page-alloc") -> dict | None:
    """P[,INTERVAL[,TIMES[,SPACE]]] of --fail-page-alloc or --failslab: the fault-injection
    knobs of the same names, for the guest's job."""
    if not spec:
        return None
    parts = spec.split(",")
    if len(parts) > 4:
        raise Error(f"{flag} {spec}: want P[,INTERVAL[,TIMES[,SPACE]]]")
    try:
        prob = int(parts[0])
        interval = int(parts[1]) if len(parts) > 1 else 1
        times = int(parts[2]) if len(parts) > 2 else -1
        space = parse_size(parts[3]) if len(parts) > 3 else 0
    except ValueError:
        raise Error(f"{flag} {spec}: want integers (SPACE may end in K, M or G)") from None
    if not 0 <= prob <= 100 or interval < 1 or space < 0:
        raise Error(f"{flag} {spec}: probability 0-100, interval >= 1")
    return {"probability": prob, "interval": interval, "times": times, "space": space}


FAULT_TASKS = ("command", "workers")


def fault_injection(page_alloc: str | None, failslab: str | None = None,
                    tasks: str = "command") -> dict | None:
    """The guest job's faults: the knobs of each fault-injection facility asked for, by its
    debugfs name (fail_page_alloc, failslab). `tasks` says who is marked to fail: the
    command and all it forks, or ("workers") nobody by the lab: the command gets
    CT_MAKE_IT_FAIL=1 and marks its own workers (conformance/run.sh's stress tests do), so
    that its start-up, an exec over 9p included, is not hit."""
    if tasks not in FAULT_TASKS:
        raise Error(f"--fault-tasks {tasks}: want one of {', '.join(FAULT_TASKS)}")
    kinds = {"fail_page_alloc": parse_faults(page_alloc),
             "failslab": parse_faults(failslab, "--failslab")}
    return {k: {**v, "tasks": tasks} for k, v in kinds.items() if v} or None


def parse_size(s: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    return int(s[:-1] if mult > 1 else s) * mult
