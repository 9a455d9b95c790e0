# SPDX-License-Identifier: MIT
"""Kernel lab, run side: how a guest keeps time, the accelerator, one boot of a variant with
virtme-ng running one job, the QEMU instruction-counting plugin, and the job a suite boot
hands the guest.

A boot is one `vng --run bzImage --exec "guest-run.py SHARED"` with a fresh shared directory
(--rwdir). The guest writes its results, status and dmesg there; the console log is only
evidence for failures. Each boot runs under proc's watchdog, which kills the whole process
group (vng, qemu, virtiofsd), so a panicked or hung guest becomes a failed cell, never a hung
lab.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import json
import os
import re
import sys
import threading
import time
from pathlib import Path

from ipclab import EXIT_FAILED, ROOT, Error, costmodel, deterministic, proc, profile, suites
from ipclab.progress import log

from . import cache, image, kernel, variants
from .cache import cache_root

GUEST_SCRIPT = ROOT / "scripts" / "guest-run.py"
VNG = ROOT / ".venv" / "bin" / "vng"
DEFAULT_MEMORY = "2G"
DEFAULT_CPUS = 2
PROBE_TIMEOUT_S = 60

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
# shift=0: one guest instruction per nanosecond of guest time, so a time is an instruction
# count. sleep=off: an idle guest jumps to its next timer at once instead of waiting for the
# host's clock, which keeps host time out of the guest's entirely.
ICOUNT_SHIFT = 0
DETERMINISTIC_CPUS = 1
# Samples repeat to a few parts in 10^4 under icount, but a multi-process cell has the odd
# outlier (a timer tick that changes who runs when). Nine is the fewest for which the
# median's 95% interval leaves out the most extreme sample on each side.
DETERMINISTIC_REPS = 9
# What the plugin counts of memory: cache (loads, stores and the cache model's misses: every
# access calls the plugin, several times the boot's time; `--cost`), or off (the events it
# decodes from the instructions only: a few per cent).
PLUGIN_MEMORY = ("cache", "off")
DEFAULT_PLUGIN_MEMORY = "off"


@dataclasses.dataclass(frozen=True)
class Clock:
    """How a guest keeps time.

    timed: KVM or multi-threaded TCG; guest time follows the host's, so under TCG it is
    emulation noise. deterministic: single-threaded TCG with icount; guest time counts the
    guest's instructions, whatever the host is doing.
    """
    deterministic: bool = False
    shift: int = ICOUNT_SHIFT

    @property
    def mode(self) -> str:
        return "deterministic" if self.deterministic else "timed"

    def qemu_opts(self, accel: str = "kvm") -> list[str]:
        # QEMU runs TCG single-threaded whenever icount is on.
        if self.deterministic:
            return ["-icount", f"shift={self.shift},sleep=off"]
        # Timed TCG asks for a host thread per vCPU, so that two vCPUs really run at once
        # (what the SMP counts rely on) rather than taking turns, whatever QEMU's default.
        return ["-accel", "tcg,thread=multi"] if accel == "tcg" else []

    def engine_clock(self) -> str:
        """IPCBENCH_CLOCK in the guest: what every sample's env.clock records."""
        return f"icount shift={self.shift}" if self.deterministic else "real"

    def record(self, accel: str, cpus: int) -> dict:
        rec = {"mode": self.mode, "accel": accel, "cpus": cpus, "qemu": qemu_version(),
               # whether the vCPUs run at the same time: KVM and multi-threaded TCG do; under
               # icount they take turns, one slice of instructions each
               "vcpus_concurrent": cpus > 1 and not self.deterministic}
        if self.deterministic:
            rec["icount"] = {"shift": self.shift, "sleep": False,
                             "ns_per_instruction": 2 ** self.shift}
        return rec


TIMED = Clock()
DETERMINISTIC = Clock(deterministic=True)


@functools.lru_cache(maxsize=1)
def qemu_version() -> str | None:
    try:
        out = proc.run(["qemu-system-x86_64", "--version"], 20, capture=True).out
    except Error:           # no QEMU here
        return None
    m = re.search(r"version (\S+)", out)
    return m.group(1) if m else None


# --------------------------------------------------------------------------- accel


def machine_id() -> str:
    mid = ""
    with contextlib.suppress(OSError):
        mid = Path("/etc/machine-id").read_text().strip()
    return f"{mid}:{os.uname().release}"


def vng_argv(image: Path, accel: str, shared: Path | None, command: str,
             cpus: int = DEFAULT_CPUS, memory: str = DEFAULT_MEMORY,
             append: list[str] | None = None, qemu_opts: list[str] | None = None,
             fs: str = "9p") -> list[str]:
    argv = [str(VNG), "--run", str(image), "--verbose", "--cpus", str(cpus),
            "--memory", memory, "--name", "ipclab",
            # An emulated CPU on a busy host can miss the IO-APIC timer check's deadline and
            # panic ("IO-APIC + timer doesn't work!"); the check is pointless in a VM.
            "--append", "no_timer_check"]
    if fs == "9p":
        # 9p wherever the kernel has it: Debian 12's virtiofsd is the deprecated C one. The
        # kernel then needs the 9p tag as root= (vng leaves it out and 6.12 mounts an empty
        # device name otherwise). Without 9p, vng exports the root with virtiofsd (ours).
        argv += ["--force-9p", "--append", "root=/dev/root"]
    if accel == "tcg":
        argv.append("--disable-kvm")
    if shared is not None:
        argv += ["--rwdir", str(shared)]
    for a in append or []:
        argv += ["--append", a]
    if qemu_opts:
        argv.append("--qemu-opts=" + " ".join(qemu_opts))  # "=": the value starts with "-"
    return argv + ["--exec", command]


def probe_accel(image: Path) -> dict:
    """KVM if a stock guest really boots under it, else TCG. Cached per machine; a dry run
    says what it would boot and assumes TCG."""
    forced = os.environ.get("IPCLAB_ACCEL")
    if forced:
        if forced not in ("kvm", "tcg"):
            raise Error(f"IPCLAB_ACCEL={forced}: must be kvm or tcg")
        return {"accel": forced, "reason": "forced by IPCLAB_ACCEL"}
    path = cache_root() / "accel.json"
    with contextlib.suppress(OSError, ValueError):
        cached = json.loads(path.read_text())
        if cached.get("machine") == machine_id():
            return cached
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        result = {"accel": "tcg", "reason": "/dev/kvm is missing or not accessible"}
    else:
        marker = "IPCLAB-KVM-PROBE-OK"
        # vng's KVM default is -cpu host; some nested hypervisors reject its MSRs but boot a
        # plain CPU model, so that is tried too before giving up on KVM.
        attempts = [("-cpu host", []), ("-cpu qemu64", ["-cpu", "qemu64"])]
        tried = []
        result = None
        for label, qemu_opts in attempts:
            argv = vng_argv(image, "kvm", None, f"echo {marker}", cpus=1, memory="512M",
                            qemu_opts=qemu_opts)
            if proc.is_dry_run():
                # Not "would run:": that names the boot itself.
                log(f"would probe KVM ({label}) once per machine: " + " ".join(argv))
                continue
            logfile = cache_root() / "logs" / f"accel-probe-{label.split()[-1]}.log"
            log(f"probing KVM ({label}) with a stock guest, once per machine, up to "
                f"{PROBE_TIMEOUT_S} s")
            rc, out, _ = run_vng(argv, PROBE_TIMEOUT_S, logfile)
            if rc == 0 and marker in out:
                result = {"accel": "kvm", "reason": f"a stock guest booted under KVM ({label})",
                          "qemu_opts": qemu_opts}
                break
            last = (out.strip().splitlines() or ["no output"])[-1][:160]
            tried.append(f"{label}: " + ("hung (killed after "
                                         f"{PROBE_TIMEOUT_S} s)" if rc is None else f"exit {rc}: {last}"))
        if proc.is_dry_run():
            return {"accel": "tcg", "reason": "a dry run does not probe"}
        if result is None:
            result = {"accel": "tcg",
                      "reason": "a stock guest does not boot under KVM here (" + "; ".join(tried) + ")"}
    result.update(machine=machine_id(), probed_at=proc.now_iso())
    if not proc.is_dry_run():
        proc.write_json_atomic(path, result)
    return result


def accel_for(image: Path, clock: Clock = TIMED, arch: str | None = None) -> str:
    """kvm or tcg for booting `image`. The deterministic mode is TCG by definition: no KVM
    probe, no TCG warning; so is another architecture than the host's (arm64)."""
    if clock.deterministic:
        return "tcg"
    if arch not in (None, "x86_64"):
        log(f"warning: an {arch} guest runs under QEMU TCG on this host. "
            f"{deterministic.timing_caveat(accel='tcg')}")
        return "tcg"
    res = probe_accel(image)
    if res["accel"] == "tcg":
        log(f"warning: using QEMU TCG, not KVM: {res['reason']}. "
            f"{deterministic.timing_caveat(accel='tcg')}")
    return res["accel"]


def kvm_qemu_opts() -> list[str]:
    """QEMU options the KVM probe needed to boot a guest (e.g. a plain CPU model)."""
    with contextlib.suppress(OSError, ValueError):
        return list(json.loads((cache_root() / "accel.json").read_text()).get("qemu_opts") or [])
    return []


# --------------------------------------------------------------------------- one boot


def run_vng(argv: list[str], timeout: float, logfile: Path,
            poll=None) -> tuple[int | None, str, float]:
    """Run vng under proc's watchdog, its console into a fresh `logfile`: (rc, console text,
    seconds); rc is None when the watchdog killed it.

    poll(), if given, is called about 5 times a second while the guest runs (host-side
    timing of guest milestones); once it returns True the guest's work is done, and a guest
    that does not exit 15 s after that is killed without being a failure.
    """
    # vng runs its helpers (virtme-run, virtiofsd) from PATH: the venv's and the lab's first.
    env = dict(os.environ)
    env["PATH"] = (f"{Path(argv[0]).parent}:{virtiofsd().parent}:"
                   f"{env.get('PATH', '/usr/bin:/bin')}")
    logfile.unlink(missing_ok=True)     # proc.run appends; a stale probe log must not count
    # kill_group_at_end: vng may leave helpers (virtiofsd) behind in the group.
    done = proc.run(argv, timeout, logfile=logfile, env=env, poll=poll, grace=15.0,
                    kill_group_at_end=True)
    text = ""
    with contextlib.suppress(OSError):
        text = logfile.read_text(errors="replace")
    return done.rc, text, done.seconds


_SHARED_SEQ = itertools.count(1)


def new_shared(variant: str, what: str | None = None) -> Path:
    """A fresh name for one boot's shared directory (created when the boot starts)."""
    name = "-".join([proc.stamp(), variant, *([what] if what else []),
                     f"{os.getpid()}.{next(_SHARED_SEQ)}"])
    return cache_root() / "runs" / name


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


def scan(text: str) -> list[str]:
    bad = (line.strip() for line in text.splitlines()
           if BAD_DMESG.search(line) and not BENIGN_DMESG.search(line))
    return list(dict.fromkeys(bad))[:20]


def boot(meta: dict, accel: str, argv: list[str], *, thp: str = "madvise",
         timeout: float = 900, faults: dict | None = None, kmemleak: bool = False,
         extra_env: dict | None = None, cpus: int | None = None,
         memory: str = DEFAULT_MEMORY, shared: Path | None = None, watch: str | None = None,
         job_rc_fails: bool = True, clock: Clock = TIMED,
         insn_counts: Path | None = None, plugin_memory: str = DEFAULT_PLUGIN_MEMORY,
         plugin_args: tuple[str, ...] = (), kernel_args: tuple[str, ...] = (),
         launcher=None) -> Boot:
    """Boot the image in `meta`, run argv inside, and judge the result. A dry run says what
    it would boot and which job the guest would get.

    insn_counts: load the QEMU plugin, which writes its counts there (profile windows, and
    the window of each engine sample, which the guest's engine marks through IPCBENCH_MARK);
    plugin_memory: what it counts of memory (PLUGIN_MEMORY); plugin_args: more of its
    options. launcher(image, cpus, memory, append, qemu_opts) -> argv starts a guest that is
    not virtme-ng's (arm64.launcher, whose caller has written the guest's job)."""
    image = kernel.image_path(meta)
    if clock.deterministic:
        accel = "tcg"    # icount is a TCG feature
    if cpus is None:
        cpus = DETERMINISTIC_CPUS if clock.deterministic else DEFAULT_CPUS
    if shared is None:
        shared = new_shared(variants.slug(meta["variant"]))
    # Where the results were measured is the host's to add afterwards (ab.tag_boot); the
    # environment only carries what the engine records in every sample.
    env = {"IPCBENCH_ACCEL": accel, "PYTHONUNBUFFERED": "1",
           "IPCBENCH_CLOCK": clock.engine_clock(),
           # The one writable place in the guest that the host keeps: commands may leave
           # files there (the repository is read-only inside).
           "IPCLAB_SHARED": str(shared),
           "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")}
    if insn_counts is not None:
        env["IPCBENCH_MARK"] = str(shared / MARKS)
    env.update(extra_env or {})
    # Under icount the guest's clock counts instructions and jumps over idle time, and it
    # jumps the further the slower the host answers the guest's I/O: on a loaded host a
    # seeds run passed 5280 guest seconds in 2300 host seconds. Only the host's watchdog
    # bounds a deterministic boot in host time.
    job_timeout = None if clock.deterministic else max(30, timeout - 120)
    job = {"argv": argv, "env": env, "cwd": str(ROOT), "thp": thp, "cgroup": "ipclab",
           "timeout": job_timeout, "faults": faults, "kmemleak": kmemleak,
           "deterministic": clock.deterministic}
    command = f"{sys.executable} {GUEST_SCRIPT} {shared}"
    qemu_opts = (kvm_qemu_opts() if accel == "kvm" else []) + clock.qemu_opts(accel)
    append = list(kernel_args)
    if insn_counts is not None:
        qemu_opts += insn_plugin_opts(meta, insn_counts, memory=plugin_memory,
                                      extra=plugin_args)
        append += smp_code_args(meta) + fixed_layout_args(meta)
    if launcher is not None:
        vargv = launcher(image, cpus, memory, append, qemu_opts)
    else:
        vargv = vng_argv(image, accel, shared, command, cpus=cpus, memory=memory,
                         append=append, qemu_opts=qemu_opts, fs=host_fs(meta))
    clock_rec = clock.record(accel, cpus)
    if proc.would_run(vargv):
        log("guest job: " + json.dumps(job))
        return Boot(meta["variant"], meta["release"], accel, shared, True, 0, None, [], "",
                    {}, {}, clock_rec)
    shared.mkdir(parents=True, exist_ok=True)
    proc.write_json_atomic(shared / "job.json", job)
    console = shared / "console.log"
    timings: dict = {}
    seen: dict = {}
    t0 = time.monotonic()

    def poll():
        # Host-side milestones: guest userspace up, first result written.
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

    rc, text, elapsed = run_vng(vargv, timeout, console, poll)
    poll()
    timings["boot_total_s"] = round(elapsed, 2)
    status = {}
    with contextlib.suppress(OSError, ValueError):
        status = json.loads((shared / "status.json").read_text())
    dmesg = ""
    with contextlib.suppress(OSError):
        dmesg = (shared / "dmesg.txt").read_text(errors="replace")
    kml = ""
    with contextlib.suppress(OSError):
        kml = (shared / "kmemleak.txt").read_text(errors="replace")
    # The console too: a busy log (fault injection prints a line per failure) wraps the
    # kernel's ring buffer, and dmesg.txt then starts after what scrolled out of it.
    bad = scan(dmesg + "\n" + text)
    if kml.strip():
        bad.append("kmemleak: " + kml.strip().splitlines()[0])
    reason = None
    if rc is None:
        reason = f"guest killed by the watchdog after {timeout:.0f} s (hang or timeout)"
    elif not status:
        reason = f"guest ended without a status (panic or early failure; vng exit {rc})"
    elif bad:
        reason = f"kernel log: {bad[0]}"
    elif status.get("job_timed_out"):
        # The guest's own job timer fired first (it is set below the host watchdog so
        # that the evidence still gets written): the same verdict as the host watchdog.
        reason = f"job killed by the in-guest watchdog after {status['job_timed_out']} s"
    elif status.get("rc") != 0 and job_rc_fails:
        reason = f"job exited with {status.get('rc')}"
    if status and status.get("nproc") not in (None, cpus):
        # Results from a guest with fewer CPUs than asked are a different experiment.
        status.setdefault("notes", []).append(
            f"the guest has {status['nproc']} CPUs, {cpus} were asked for")
        log(f"warning: {meta['variant']}: the guest has {status['nproc']} CPUs, not {cpus}")
    tail = "\n".join(text.splitlines()[-40:])
    return Boot(meta["variant"], status.get("release") or meta["release"], accel, shared,
                reason is None, status.get("rc"), reason, bad, tail, timings, status, clock_rec)


# --------------------------------------------------------------------------- a suite's job


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


# --------------------------------------------------------------------------- the QEMU plugin


PLUGIN_SOURCE = ROOT / "kernel" / "qemu-plugin" / "insncount.c"
PLUGIN_HEADERS = [ROOT / "kernel" / "qemu-plugin" / h for h in ("x86-events.h", "a64-events.h",
                                                                 "cachesim.h")]
# The system calls the engine opens and closes its measured sections with (IPCBENCH_MARK,
# bench/src/counters.c): swapon(NULL, 0) and quotactl(0, NULL, 0, NULL), which fail and
# which nothing else calls; the profile's marker is swapoff (profile.MARKER_SYMBOL). Each
# must have its own entry point in the x86-64 table (uselib, say, has none: it goes to
# sys_ni_syscall, which every unwired number shares).
SAMPLE_MARKERS = {"open": "__x64_sys_swapon", "close": "__x64_sys_quotactl"}
# arm64's system call table names its entry points so instead.
SYSCALL_PREFIX = {"x86_64": "__x64_sys_", "arm64": "__arm64_sys_"}
# The file in a boot's shared directory that counts the engine's marks.
MARKS = "marks"


def insn_plugin() -> Path:
    """The QEMU plugin that counts instructions and costly events per code address, built
    once per source."""
    digest = cache.sha256_bytes("".join(cache.sha256_file(p) for p in
                                        [PLUGIN_SOURCE, *PLUGIN_HEADERS]).encode())[:12]
    so = cache_root() / "tools" / f"insncount-{digest}.so"
    if not so.exists():
        so.parent.mkdir(parents=True, exist_ok=True)
        # ab boots two guests from two threads: each builds to a name of its own.
        tmp = so.with_suffix(f".tmp{os.getpid()}-{threading.get_ident()}")
        done = proc.run(["gcc", "-O2", "-Wall", "-fPIC", "-shared", "-o", str(tmp),
                         str(PLUGIN_SOURCE)], 300, capture=True)
        if done.rc != 0:
            raise Error(f"building {PLUGIN_SOURCE.name} failed: {done.err.strip()[-300:]}",
                        EXIT_FAILED)
        os.replace(tmp, so)
    return so


def insn_plugin_opts(meta: dict, out: Path, memory: str = DEFAULT_PLUGIN_MEMORY,
                     extra: tuple[str, ...] = ()) -> list[str]:
    """-plugin options that count the guest's instructions and costly events per address
    into `out`: profile windows between swapoff markers, and the engine's sample windows
    (SAMPLE_MARKERS). memory: PLUGIN_MEMORY."""
    if memory not in PLUGIN_MEMORY:
        raise Error(f"plugin memory mode {memory!r}: want one of {', '.join(PLUGIN_MEMORY)}")
    opts = [f"memory={memory}"] + list(extra)
    if memory == "cache":
        opts += costmodel.plugin_options(costmodel.load_model())
    prefix = SYSCALL_PREFIX[meta.get("arch", "x86_64")]
    symbols = {opt: prefix + sym.removeprefix(SYSCALL_PREFIX["x86_64"])
               for opt, sym in {"marker": profile.MARKER_SYMBOL, **SAMPLE_MARKERS}.items()}
    if proc.is_dry_run():
        return ["-plugin", ",".join([f"file={PLUGIN_SOURCE.stem}.so,out={out}"]
                                    + [f"{k}=<{sym} in System.map>"
                                       for k, sym in symbols.items()] + opts)]
    smap = kernel.image_dir(meta["key"]) / "System.map"
    if meta.get("prebuilt") and not has_symbols(smap):
        map_from_kallsyms(meta, smap)
    if not smap.exists():
        raise Error(f"{meta['variant']}: the cached image has no System.map (built before "
                    f"profiles needed it): `ipclab kernel build {meta['variant']} --force`",
                    EXIT_FAILED)
    marks = {}
    for opt, sym in symbols.items():
        marks[opt] = profile.symbol_address(smap, sym)
        if marks[opt] is None:
            raise Error(f"{meta['variant']}: {sym} is not in System.map", EXIT_FAILED)
    return ["-plugin", ",".join([f"file={insn_plugin()},out={out}"]
                                + [f"{k}={v:x}" for k, v in marks.items()] + opts)]


def smp_code_args(meta: dict) -> list[str]:
    """Kernel arguments that keep a one-vCPU guest on the code an SMP machine runs.

    A kernel before 7.0 that boots on one CPU patches every LOCK prefix of its atomics into
    a DS prefix (SMP alternatives); the cost model would then count no atomics where every
    real machine, with more than one CPU, executes them. `noreplace-smp` keeps the LOCK.
    Instruction counts do not change: one prefix byte replaces another. Later kernels have
    no such patching, nor the argument (an unknown one would be handed to init), so it is
    given only to an image whose System.map has its handler."""
    smap = kernel.image_dir(meta["key"]) / "System.map"
    if proc.is_dry_run() or not smap.exists():
        return []
    return ["noreplace-smp"] if profile.symbol_address(smap, "setup_noreplace_smp") else []


def fixed_layout_args(meta: dict) -> list[str]:
    """`nokaslr` for an image built with KASLR (the production config): the plugin names
    functions by System.map's addresses, which a randomised base would move from boot to
    boot. The image's code is the same; only where it is loaded changes."""
    config = kernel.image_dir(meta["key"]) / "config"
    if proc.is_dry_run() or not config.exists():
        return []
    return ["nokaslr"] if kernel.config_value(config, "RANDOMIZE_BASE") == "y" else []


def virtiofsd() -> Path:
    """The Rust virtiofsd the lab builds (`make reference-deps`): vng needs one to boot a
    kernel without 9p, and Debian 12 has only QEMU's C one, which vng refuses."""
    return cache_root() / "tools" / "bin" / "virtiofsd"


def host_fs(meta: dict) -> str:
    """How the image's guest mounts the host's root: 9p, or virtiofs (Debian's cloud
    kernel); Error (exit 1) when that needs a virtiofsd the lab does not have."""
    config = kernel.image_dir(meta["key"]) / "config"
    fs = image.shared_fs(config.read_text(errors="replace")) if config.is_file() else None
    if fs == "virtiofs" and not proc.is_dry_run() and not os.access(virtiofsd(), os.X_OK):
        raise Error(f"{meta['variant']}: its kernel has virtiofs and no 9p, and {virtiofsd()} "
                    "is missing: run `make reference-deps`", EXIT_FAILED)
    return fs or "9p"


def has_symbols(smap: Path) -> bool:
    """A System.map with symbols in it: Debian's packages ship a one-line stub that sends
    the reader to the -dbg package."""
    with contextlib.suppress(OSError):
        return smap.stat().st_size > 4096
    return False


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
