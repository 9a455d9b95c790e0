# SPDX-License-Identifier: MIT
"""Kernel lab, where builds and boots run, for `ab`, `vm run SUITE`, `census` and
`bisect --deterministic`: the choice (--executor, else IPCLAB_EXECUTOR, else local) and the
local executor; the Slurm one is slurm.py.

    local   this machine, as `ab` always did (kernel.obtain, boot_in_order): the default
    slurm   each build and each boot one Slurm batch job (slurm.Slurm)
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor

from ipclab import Error, proc
from ipclab.progress import log

from . import kernel, vm
from .boot_plan import ENV, BootOpts, Here, SuiteBoot  # noqa: F401 (the executors' callers')
from .slurm import Slurm

NAMES = ("local", "slurm")
SLURM_TOOLS = ("sbatch", "squeue", "scancel")


def choose(name: str | None = None, *, partition: str | None = None,
           account: str | None = None, time_limit: str | None = None, who: str = "ab"):
    """The executor `--executor NAME` (else IPCLAB_EXECUTOR, else local) names; Error (exit
    2) for an unknown one, Slurm's options without Slurm, or Slurm's commands missing: on the
    host, before anything is built."""
    given = name or os.environ.get(ENV) or "local"
    where = "--executor" if name else ENV
    if given not in NAMES:
        raise Error(f"{where} {given}: unknown executor; one of {', '.join(NAMES)}")
    if given == "local":
        passed = [o for o, v in (("--partition", partition), ("--account", account),
                                 ("--time", time_limit)) if v]
        if passed:
            raise Error(f"{', '.join(passed)}: options of Slurm's jobs; add --executor slurm")
        return Local()
    missing = [t for t in SLURM_TOOLS if shutil.which(t) is None]
    if missing:
        raise Error(f"{where} slurm: {', '.join(missing)} not found (Slurm's client commands,"
                    " Debian's slurm-client; docs/lab.md, Slurm)")
    return Slurm(partition=partition, account=account, time_limit=time_limit, who=who,
                 by=where)


def here_instead(executor, refused: str, noted: str):
    """Local() for what `executor`, not local, may not run: Error `refused` (exit 2) when
    --executor asked for it, since that is an order; under IPCLAB_EXECUTOR, only a default,
    it boots here and logs `noted`."""
    if executor.by == "--executor":
        raise Error(refused)
    log(f"{noted}, whatever {executor.by} says")
    return Local()


def boot_parallelism(clock: vm.Clock) -> int:
    """How many boots run at once here: one timed; one per host CPU, at most 2, under icount."""
    return max(1, min(2, os.cpu_count() or 1)) if clock.deterministic else 1


def boot_in_order(order: list[tuple], one_boot, clock: vm.Clock) -> list:
    """one_boot(*item) for each item: one after another when timed; under icount side by
    side, one single-threaded QEMU per host CPU (at most 2), since guest instructions do not
    depend on what the host does."""
    if boot_parallelism(clock) == 1 or proc.is_dry_run():
        return [one_boot(*item) for item in order]
    pool = ThreadPoolExecutor(max_workers=boot_parallelism(clock))
    try:
        done = list(pool.map(lambda item: one_boot(*item), order))
    except BaseException:
        # Ctrl-C: no more boots, and the running guests go now, not when they finish.
        pool.shutdown(wait=False, cancel_futures=True)
        proc.kill_all()
        raise
    pool.shutdown()
    return done


class Local:
    """Builds and boots on this machine: boots one after another when timed, side by side
    under icount."""
    name = "local"

    @staticmethod
    def images(kerns: dict, clock: vm.Clock) -> dict:
        return {side: kernel.obtain(kern) for side, kern in kerns.items()}

    def cancel(self) -> None:
        pass

    def run_boots(self, boots: list[SuiteBoot], o: BootOpts, here: Here) -> list[tuple]:
        return boot_in_order([(b,) for b in boots], here.boot, o.clock)
