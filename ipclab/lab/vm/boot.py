# SPDX-License-Identifier: MIT
"""One boot of a variant with virtme-ng running one job, and its verdict.

A boot is one `vng --run bzImage --exec "guest-run.py SHARED"` with a fresh shared directory
(--rwdir). The guest writes its results, status and dmesg there; the console log is only
evidence for failures. Each boot runs under proc's watchdog, which kills the whole process
group (vng, qemu, virtiofsd), so a panicked or hung guest becomes a failed cell, never a hung
lab."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import sys
import time
from pathlib import Path

from ipclab import EXIT_FAILED, ROOT, Error, proc
from ipclab.progress import log

from .. import kernel, variants
from .accel import kvm_qemu_opts
from .clock import DETERMINISTIC, DETERMINISTIC_CPUS, Clock
from .plugin import (DEFAULT_PLUGIN_MEMORY, MARKS, fixed_layout_args, has_symbols,
                     insn_plugin_opts, smp_code_args)
from .vng import (DEFAULT_CPUS, DEFAULT_MEMORY, GUEST_SCRIPT, host_fs, new_shared, run_vng,
                  vng_argv)

# Lines that fail a run (the list, plus the ways the kernel says the same thing).
# "lockdep" as a word only: lockdep's own messages ("INFO: lockdep is turned off") have it
# so, while stack frames of any trace, e.g. one fault injection prints on purpose, carry
# it inside function names (seqcount_lockdep_reader_access).
BAD_DMESG = re.compile(
    r"\bBUG\b|\bWARNING\b|\bOops\b|\blockdep\b|KASAN|Kernel panic|"
    r"possible (?:recursive|circular) locking|suspicious RCU usage|"
    r"INFO: task .* blocked for more than|general protection fault|"
    r"kmemleak: \d+ new suspected memory leaks"
)
# Boot banners of debug kernels that contain those words without reporting anything.
BENIGN_DMESG = re.compile(r"RCU lockdep checking is enabled|Lock dependency validator")


@dataclasses.dataclass
class Boot:
    """What one boot produced: the job's rc and output, and the lab's verdict."""
    variant: str
    release: str | None
    accel: str
    shared: Path
    ok: bool
    rc: int | None
    reason: str | None
    bad_lines: list[str]
    console_tail: str
    timings: dict
    status: dict
    clock: dict = dataclasses.field(default_factory=dict)

    def record(self) -> dict:
        return {
            "variant": self.variant, "kernel": self.release, "accel": self.accel,
            "emulated": self.accel == "tcg", "clock": self.clock, "ok": self.ok, "rc": self.rc,
            "reason": self.reason, "bad_lines": self.bad_lines,
            "console_tail": None if self.ok else self.console_tail,
            "timings": self.timings, "guest": self.status, "shared": str(self.shared),
        }

    @classmethod
    def from_record(cls, rec: dict) -> "Boot":
        """The boot a record() describes (a boot made elsewhere: a Slurm job's)."""
        return cls(rec["variant"], rec["kernel"], rec["accel"], Path(rec["shared"]), rec["ok"],
                   rec["rc"], rec["reason"], list(rec["bad_lines"]), rec["console_tail"] or "",
                   rec["timings"], rec["guest"], rec.get("clock") or {})


def scan(text: str) -> list[str]:
    bad = (line.strip() for line in text.splitlines()
           if BAD_DMESG.search(line) and not BENIGN_DMESG.search(line))
    return list(dict.fromkeys(bad))[:20]


def _guest_job(meta: dict, accel: str, argv: list[str], shared: Path, clock: Clock, *,
               thp: str, timeout: float, faults: dict | None, kmemleak: bool,
               extra_env: dict | None, marks: bool) -> dict:
    """The job the guest's scripts/guest-run.py runs: argv, its environment and limits."""
    # Where the results were measured is the host's to add afterwards (ab.tag_boot); the
    # environment only carries what the engine records in every sample.
    env = {"IPCBENCH_ACCEL": accel, "PYTHONUNBUFFERED": "1",
           "IPCBENCH_CLOCK": clock.engine_clock(),
           # The one writable place in the guest that the host keeps: commands may leave
           # files there (the repository is read-only inside).
           "IPCLAB_SHARED": str(shared),
           "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")}
    if marks:
        env["IPCBENCH_MARK"] = str(shared / MARKS)
    env.update(extra_env or {})
    # Under icount the guest's clock counts instructions and jumps over idle time, and it
    # jumps the further the slower the host answers the guest's I/O: on a loaded host a
    # seeds run passed 5280 guest seconds in 2300 host seconds. Only the host's watchdog
    # bounds a deterministic boot in host time.
    job_timeout = None if clock.deterministic else max(30, timeout - 120)
    return {"argv": argv, "env": env, "cwd": str(ROOT), "thp": thp, "cgroup": "ipclab",
            "timeout": job_timeout, "faults": faults, "kmemleak": kmemleak,
            "deterministic": clock.deterministic}


def _milestones(shared: Path, watch: str | None, timings: dict):
    """poll() for run_vng: host-side milestones (guest userspace up, first result written)
    into `timings`; True once the guest's status is written."""
    seen: dict = {}
    t0 = time.monotonic()

    def poll():
        now = round(time.monotonic() - t0, 2)
        if "guest_started_s" not in timings and (shared / "started").exists():
            timings["guest_started_s"] = now
        if watch and "first_result_s" not in timings:
            # First result = the first sample on disk (the CLI saves after every sample).
            with contextlib.suppress(OSError, ValueError):
                mtime = (shared / watch).stat().st_mtime_ns
                if mtime != seen.get("mtime"):
                    seen["mtime"] = mtime
                    res = json.loads((shared / watch).read_text())
                    if any(c.get("samples") for c in res.get("cells", [])):
                        timings["first_result_s"] = now
        if (shared / "status.json").exists():
            timings.setdefault("guest_done_s", now)
            return True
        return False
    return poll


def _evidence(shared: Path, console: str) -> tuple[dict, list[str]]:
    """The guest's status, and the lines of its kernel log (dmesg, the console, kmemleak)
    that fail a run."""
    status, dmesg, kml = {}, "", ""
    with contextlib.suppress(OSError, ValueError):
        status = json.loads((shared / "status.json").read_text())
    with contextlib.suppress(OSError):
        dmesg = (shared / "dmesg.txt").read_text(errors="replace")
    with contextlib.suppress(OSError):
        kml = (shared / "kmemleak.txt").read_text(errors="replace")
    # The console too: a busy log (fault injection prints a line per failure) wraps the
    # kernel's ring buffer, and dmesg.txt then starts after what scrolled out of it.
    bad = scan(dmesg + "\n" + console)
    if kml.strip():
        bad.append("kmemleak: " + kml.strip().splitlines()[0])
    return status, bad


def _failure(rc: int | None, status: dict, bad: list[str], timeout: float,
             job_rc_fails: bool) -> str | None:
    """Why the boot failed, or None."""
    if rc is None:
        return f"guest killed by the watchdog after {timeout:.0f} s (hang or timeout)"
    if not status:
        return f"guest ended without a status (panic or early failure; vng exit {rc})"
    if bad:
        return f"kernel log: {bad[0]}"
    if status.get("job_timed_out"):
        # The guest's own job timer fired first (it is set below the host watchdog so
        # that the evidence still gets written): the same verdict as the host watchdog.
        return f"job killed by the in-guest watchdog after {status['job_timed_out']} s"
    if status.get("rc") != 0 and job_rc_fails:
        return f"job exited with {status.get('rc')}"
    return None


def default_cpus(clock: Clock) -> int:
    """A guest's vCPUs when the command line names none."""
    return DETERMINISTIC_CPUS if clock.deterministic else DEFAULT_CPUS


def boot(meta: dict, accel: str, argv: list[str], *, thp: str = "madvise",
         timeout: float = 900, faults: dict | None = None, kmemleak: bool = False,
         extra_env: dict | None = None, cpus: int | None = None,
         memory: str = DEFAULT_MEMORY, shared: Path | None = None, watch: str | None = None,
         job_rc_fails: bool = True, clock: Clock,
         insn_counts: Path | None = None, plugin_memory: str = DEFAULT_PLUGIN_MEMORY,
         plugin_args: tuple[str, ...] = (), kernel_args: tuple[str, ...] = (),
         launcher=None) -> Boot:
    """Boot the image in `meta`, run argv inside, and judge the result. A dry run says what
    it would boot and which job the guest would get.

    insn_counts: load the QEMU plugin, which writes its counts there (profile windows, and
    the window of each engine sample, which the guest's engine marks through IPCBENCH_MARK);
    plugin_memory: what it counts of memory (PLUGIN_MEMORY); plugin_args: more of its
    options. launcher(image, cpus, memory, append, qemu_opts) -> argv starts a guest that is
    not virtme-ng's (the arm64 backend's, lab/arm64/guest.py, which has written the guest's
    job)."""
    image = kernel.image_path(meta)
    if clock.deterministic:
        accel = "tcg"    # icount is a TCG feature
    if cpus is None:
        cpus = default_cpus(clock)
    if shared is None:
        shared = new_shared(variants.slug(meta["variant"]))
    job = _guest_job(meta, accel, argv, shared, clock, thp=thp, timeout=timeout,
                     faults=faults, kmemleak=kmemleak, extra_env=extra_env,
                     marks=insn_counts is not None)
    command = f"{sys.executable} {GUEST_SCRIPT} {shared}"
    qemu_opts = (kvm_qemu_opts() if accel == "kvm" else []) + clock.qemu_opts(accel)
    append = list(kernel_args)
    if insn_counts is not None:
        ensure_symbols(meta)
        qemu_opts += insn_plugin_opts(meta, insn_counts, memory=plugin_memory,
                                      extra=plugin_args)
        append += smp_code_args(meta) + fixed_layout_args(meta)
    if launcher is not None:
        vargv = launcher(image, cpus, memory, append, qemu_opts)
    else:
        vargv = vng_argv(image, accel, shared, command, cpus=cpus, memory=memory,
                         append=append + clock.kernel_args(accel), qemu_opts=qemu_opts,
                         fs=host_fs(meta))
    clock_rec = clock.record(accel, cpus)
    if proc.would_run(vargv):
        log("guest job: " + json.dumps(job))
        return Boot(meta["variant"], meta["release"], accel, shared, True, 0, None, [], "",
                    {}, {}, clock_rec)
    shared.mkdir(parents=True, exist_ok=True)
    proc.write_json_atomic(shared / "job.json", job)
    timings: dict = {}
    poll = _milestones(shared, watch, timings)
    rc, text, elapsed = run_vng(vargv, timeout, shared / "console.log", poll)
    poll()
    timings["boot_total_s"] = round(elapsed, 2)
    status, bad = _evidence(shared, text)
    reason = _failure(rc, status, bad, timeout, job_rc_fails)
    if status and status.get("nproc") not in (None, cpus):
        # Results from a guest with fewer CPUs than asked are a different experiment.
        status.setdefault("notes", []).append(
            f"the guest has {status['nproc']} CPUs, {cpus} were asked for")
        log(f"warning: {meta['variant']}: the guest has {status['nproc']} CPUs, not {cpus}")
    tail = "\n".join(text.splitlines()[-40:])
    return Boot(meta["variant"], status.get("release") or meta["release"], accel, shared,
                reason is None, status.get("rc"), reason, bad, tail, timings, status, clock_rec)


def ensure_symbols(meta: dict) -> None:
    """Before the plugin names a prebuilt image's addresses: the image's System.map, read
    from its guest when it came with none (map_from_kallsyms)."""
    smap = kernel.image_dir(meta["key"]) / "System.map"
    if meta.get("prebuilt") and not proc.is_dry_run() and not has_symbols(smap):
        map_from_kallsyms(meta, smap)


def map_from_kallsyms(meta: dict, smap: Path) -> None:
    """A System.map for a prebuilt image that came without one (Debian's own kernel): its
    /proc/kallsyms, read in one boot with the kernel where every deterministic boot puts
    it (nokaslr), which names the same addresses. Error (exit 1) if it cannot be read."""
    shared = new_shared(variants.slug(meta["variant"]), "kallsyms")
    out = shared / "kallsyms"
    log(f"{meta['variant']}: no System.map; reading the guest's /proc/kallsyms (one boot)")
    # Deterministic: a timed TCG guest can calibrate its TSC at a fiftieth of the truth on a
    # busy host, and its clock then races past the job's watchdog.
    b = boot(meta, "tcg", ["sh", "-c", f"cat /proc/kallsyms > {out}"], timeout=900,
             shared=shared, clock=DETERMINISTIC, kernel_args=tuple(fixed_layout_args(meta)))
    text = out.read_text(errors="replace") if b.ok and out.exists() else ""
    lines = [line for line in text.splitlines() if "[" not in line]   # no module symbols
    if not lines or all(line.startswith("0000000000000000") for line in lines):
        raise Error(f"{meta['variant']}: could not read its symbols from the guest's "
                    f"/proc/kallsyms ({b.reason or 'no addresses'})", EXIT_FAILED)
    proc.write_text_atomic(smap, "\n".join(lines) + "\n")
