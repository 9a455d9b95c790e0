# SPDX-License-Identifier: MIT
"""Kernel lab, fault runs: the conformance tests that exercise a pipe write's page
allocation, in a variant's debug build, and what each boot showed.

Two boots per variant, both of VARIANT+debug+counters with kmemleak scanned afterwards:

- `faults`: fail_page_alloc and failslab armed for the job's tasks, the pipe stress tests
  with --tolerate-enomem: the injected failures that reach a write must come back as an
  ENOMEM that the test retries or a short write that it continues, and no record may be
  lost, duplicated or corrupted;
- `clean`: no injection; an O_NONBLOCK writer against a full pipe (EAGAIN), a writer whose
  reader has closed (EPIPE), a check that those failed writes allocate and charge nothing
  (/proc/vmstat pgalloc and the memcg's memory.stat), and the stress test once more.

`boot_row` turns a boot's record (vm.Boot.record) and the job's KTAP output into one row:
tests passed and failed, records sent, received and lost, ENOMEM retries, faults injected,
and the kmemleak and lockdep verdicts, taken from the lab's own scan of the kernel log.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from . import vm

OVERLAYS = "+debug+counters"
RUN_SH = vm.ConformanceJob.RUN_SH
STRESS_TESTS = ("stress_pipe_integrity", "stress_pipe_splice_integrity")
# With faults armed, an ENOMEM is retried by the stress test and counted (conformance/
# README.md, "Stress options"); without, it stays a failure, as on a healthy kernel.
TOLERATE = ("--tolerate-enomem",)
# Patch 0004 allocates before pipe->mutex only for writes of more than a page, and
# records of the default sizes (up to PIPE_BUF) never are: under faults, the plain stress
# test writes 64 KiB records (one writer and one reader, since longer writes than
# PIPE_BUF may interleave), so a failure can hit the preallocation, the allocation under
# the mutex after it, and the preallocation again after a full pipe's sleep. The splice
# test keeps its 8 writers and 4 readers of small records, which take the spare pages
# (0005) and allocate under the mutex.
BIG_RECORDS = ("--writers", "1", "--readers", "1", "--record-size", "65536")
DEFAULT_DURATION = 10.0
# Bounded in number, so that faults_injected is an exact count (an unbounded run only
# leaves the rate-limited dmesg lines to count), after a budget that lets the workers
# start. Page allocations at 2%: at 10% the 64 KiB writes of the first test used up 400
# failures in about 250 writes and left the splice test none. Slab allocations are rare in
# the workers (their own pipe() with --splice, page tables), so 10% of them.
FAIL_PAGE_ALLOC = "2,1,2000,1M"
FAILSLAB = "10,1,400,64K"


@dataclasses.dataclass(frozen=True)
class FaultBoot:
    """One boot of a fault run: which tests, with which faults armed."""
    name: str
    tests: tuple[str, ...]
    fail_page_alloc: str | None = None
    failslab: str | None = None
    test_args: tuple[tuple[str, tuple[str, ...]], ...] = ()    # (test, its own options)

    @property
    def faults(self) -> dict | None:
        # Only the stress tests' writers and readers are marked to fail: run.sh's start-up
        # over 9p, marked, had its exec fail with EINVAL (docs/lab.md).
        return vm.fault_injection(self.fail_page_alloc, self.failslab, "workers")

    def argv(self) -> list[str]:
        return [RUN_SH, *self.tests]

    def env(self, duration: float) -> dict:
        # run.sh stretches the tests' stall watchdogs under TCG itself (CT_WATCHDOG_SCALE).
        args = [*(TOLERATE if self.faults else ()), "--duration", f"{duration:g}"]
        env = {"CT_STRESS_ARGS": " ".join(args)}
        env.update({f"CT_ARGS_{test}": " ".join(own) for test, own in self.test_args})
        return env


PLANS = (
    FaultBoot("faults", STRESS_TESTS, FAIL_PAGE_ALLOC, FAILSLAB,
         test_args=(("stress_pipe_integrity", BIG_RECORDS),)),
    FaultBoot("clean", ("pipe_nonblock_eagain", "pipe_epipe_sigpipe",
                   "pipe_failed_write_allocates_nothing", "stress_pipe_integrity")),
)


# --------------------------------------------------------------------------- KTAP


@dataclasses.dataclass
class TestResult:
    name: str
    status: str                 # "pass", "fail", "skip", or "missing" (planned, no result)
    directive: str = ""         # what follows "#" on the result line (SKIP, TIMEOUT ...)
    lines: list[str] = dataclasses.field(default_factory=list)   # its diagnostic lines


_RESULT = re.compile(r"^(not ok|ok) (\d+) (\S+)(?: # (.*))?$")
_PLAN = re.compile(r"^1\.\.(\d+)$")


def parse_ktap(text: str, expected: tuple[str, ...] = ()) -> list[TestResult]:
    """The results of conformance/run.sh's KTAP, each with the diagnostic lines printed
    before it. A test in `expected` (or counted by the plan line) without a result line is
    "missing": run.sh died or was killed before it got there."""
    out: list[TestResult] = []
    lines: list[str] = []
    planned = 0
    for raw in text.splitlines():
        line = raw.rstrip()
        m = _RESULT.match(line)
        if m:
            directive = m.group(4) or ""
            status = ("fail" if m.group(1) == "not ok" else
                      "skip" if directive.upper().startswith("SKIP") else "pass")
            # run.sh names the test on a line of its own before its output: not output.
            body = [ln for ln in lines if ln != m.group(3)]
            out.append(TestResult(m.group(3), status, directive, body))
            lines = []
        elif _PLAN.match(line):
            planned = int(_PLAN.match(line).group(1))
        elif line.startswith("#") and not line.startswith("# Totals:"):
            lines.append(line[1:].strip())
    seen = {t.name for t in out}
    out += [TestResult(name, "missing") for name in expected if name not in seen]
    out += [TestResult(f"test {i}", "missing")
            for i in range(len(out) + 1, planned + 1)]
    return out


_STRESS = re.compile(r"records sent (\d+), received (\d+), bytes (\d+); ENOMEM retries (\d+), "
                     r"short writes continued (\d+)")


def stress_counts(result: TestResult) -> dict | None:
    """A pipe stress test's summary line as numbers, or None when it printed none."""
    for line in result.lines:
        m = _STRESS.search(line)
        if m:
            sent, received, nbytes, enomem, short = map(int, m.groups())
            return {"sent": sent, "received": received, "lost": sent - received,
                    "bytes": nbytes, "enomem_retries": enomem, "short_writes": short}
    return None


# --------------------------------------------------------------------------- verdicts


# The kernel-log lines of vm.scan that are lockdep's (or lock debugging's) reports.
_LOCKDEP = re.compile(r"\blockdep\b|locking|suspicious RCU usage|DEBUG_LOCKS_WARN_ON",
                      re.IGNORECASE)
LOCKDEP_BANNER = "Lock dependency validator"


def kmemleak_verdict(record: dict) -> str:
    """"clean", "leak: FIRST LINE", or "not scanned" (no kmemleak output from the guest)."""
    leaks = [ln for ln in record.get("bad_lines", []) if ln.startswith("kmemleak")]
    if leaks:
        return "leak: " + leaks[0].removeprefix("kmemleak: ")
    if not (Path(record["shared"]) / "kmemleak.txt").exists():
        return "not scanned"
    return "clean"


def lockdep_verdict(record: dict) -> str:
    """"clean", "report: FIRST LINE", or "off": lockdep did not watch the whole run (the
    guest found debug_locks 0 at the end, or, from a guest that did not look, the kernel
    log has no lockdep banner)."""
    reports = [ln for ln in record.get("bad_lines", []) if _LOCKDEP.search(ln)]
    if reports:
        return "report: " + reports[0]
    debug_locks = (record.get("guest") or {}).get("debug_locks")
    if debug_locks is not None:
        return "clean" if debug_locks == 1 else "off"
    try:
        dmesg = (Path(record["shared"]) / "dmesg.txt").read_text(errors="replace")
    except OSError:
        return "off"
    return "clean" if LOCKDEP_BANNER in dmesg else "off"


def boot_row(variant: str, plan: FaultBoot, record: dict, output: str) -> dict:
    """One row of the fault-run table, as data: what the boot ran and showed, whether it
    passed (`ok`) and, if not, each reason (`problems`)."""
    tests = parse_ktap(output, plan.tests)
    stress = {t.name: stress_counts(t) for t in tests
              if t.name.startswith("stress_") and t.status != "missing"}
    guest = record.get("guest") or {}
    row = {
        "variant": variant, "boot": plan.name, "build": record.get("variant"),
        "kernel": record.get("kernel"), "accel": record.get("accel"),
        "passed": [t.name for t in tests if t.status == "pass"],
        "failed": [t.name for t in tests if t.status == "fail"],
        "skipped": [t.name for t in tests if t.status == "skip"],
        "missing": [t.name for t in tests if t.status == "missing"],
        "stress": stress,
        "records_sent": sum(s["sent"] for s in stress.values() if s),
        "records_received": sum(s["received"] for s in stress.values() if s),
        "records_lost": sum(s["lost"] for s in stress.values() if s),
        "enomem_retries": sum(s["enomem_retries"] for s in stress.values() if s),
        "short_writes": sum(s["short_writes"] for s in stress.values() if s),
        "faults_armed": guest.get("faults_armed"),
        "faults_injected": guest.get("faults_injected"),
        "faults_injected_by": guest.get("faults_injected_by"),
        "fault_messages": guest.get("fault_messages"),
        "kmemleak": kmemleak_verdict(record),
        "lockdep": lockdep_verdict(record),
        "memstat": [ln for t in tests if t.name == "pipe_failed_write_allocates_nothing"
                    for ln in t.lines if "memory.stat" in ln],
        "boot_ok": record.get("ok"), "reason": record.get("reason"),
        "boot_s": (record.get("timings") or {}).get("boot_total_s"),
        "job_s": guest.get("job_seconds"), "shared": record.get("shared"),
    }
    row["problems"] = problems(plan, row)
    row["ok"] = not row["problems"]
    return row


def problems(plan: FaultBoot, row: dict) -> list[str]:
    """Why a row failed; empty when it passed. Every test of the plan must have run and
    passed (a skip is a failure here: a skipped witness checked nothing)."""
    out = []
    if not row["boot_ok"]:
        out.append(f"boot: {row['reason']}")
    for key in ("failed", "skipped", "missing"):
        if row[key]:
            out.append(f"{key}: {', '.join(row[key])}")
    for name, s in row["stress"].items():
        if s is None:
            out.append(f"{name}: no summary line")
        elif s["lost"]:
            out.append(f"{name}: {s['lost']} records lost")
    for key in ("kmemleak", "lockdep"):
        if row[key] != "clean":
            out.append(f"{key}: {row[key]}")
    if plan.faults:
        if not row["faults_armed"]:
            out.append("faults were not armed")
        elif not row["faults_injected"]:
            out.append("no fault was injected")
        elif not row["enomem_retries"] + row["short_writes"]:
            # A failure before a write's first page is ENOMEM; after it, a short write.
            # With pages allocated before the mutex or kept spare, most are short writes.
            out.append("faults injected, but no test saw ENOMEM or a short write")
    elif "pipe_failed_write_allocates_nothing" in plan.tests and len(row["memstat"]) < 3:
        out.append("pipe_failed_write_allocates_nothing: the memory.stat witness did not run"
                   " for all three cases")
    return out
