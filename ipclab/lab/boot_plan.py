# SPDX-License-Identifier: MIT
"""Kernel lab, what a command hands the executor that runs its boots (executor.py): each boot
(SuiteBoot), the options they share (BootOpts), what the executor may ask back of the command
(Here), and ENV, the environment variable that chooses the executor, which a job sets so that
its own `ipclab` runs where it is."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

from . import vm

ENV = "IPCLAB_EXECUTOR"


@dataclasses.dataclass(frozen=True)
class SuiteBoot:
    """One boot of `ab`: which, of what build, and the results file it leaves."""
    label: str          # "boot 1/3 of A"
    meta: dict          # the build (kernel.obtain)
    out: Path           # the tagged results, as run_suite_boot writes them


@dataclasses.dataclass(frozen=True)
class BootOpts:
    """What every boot of one `ab` shares (ab.run_suite_boot's arguments)."""
    accel: str
    job: vm.SuiteJob
    clock: vm.Clock
    thp: str | None = None
    timeout: float = 1800
    cpus: int | None = None
    memory: str = vm.DEFAULT_PLUGIN_MEMORY


@dataclasses.dataclass(frozen=True)
class Here:
    """What an executor asks of `ab` (which imports this module, so not the other way):
    boot(SuiteBoot) -> (results, Boot) boots here and reports it (ab.run_suite_boot);
    failed(SuiteBoot, Boot, run_id) -> results is the one failed cell of a boot that left no
    results (ab.no_results); report(Boot) says how a boot went (ab.report_boot)."""
    boot: Callable
    failed: Callable
    report: Callable
