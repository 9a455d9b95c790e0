# SPDX-License-Identifier: MIT
"""virtme-ng: its command line for one boot, running it under proc's watchdog, and each
boot's fresh shared directory."""

from __future__ import annotations

import contextlib
import itertools
import os
from pathlib import Path

from ipclab import EXIT_FAILED, ROOT, Error, proc

from .. import image, kernel
from ..cache import cache_root


GUEST_SCRIPT = ROOT / "scripts" / "guest-run.py"
VNG = ROOT / ".venv" / "bin" / "vng"
DEFAULT_MEMORY = "2G"
DEFAULT_CPUS = 2
# The most vCPUs QEMU 7.2 (Debian 12's) boots on the machines the lab uses: "The max CPUs
# supported by machine 'pc-i440fx-7.2' is 255", and 'virt-7.2''s is 512.
MAX_CPUS = {"x86_64": 255, "arm64": 512}


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


_SHARED_SEQ = itertools.count(1)


def new_shared(variant: str, what: str | None = None) -> Path:
    """A fresh name for one boot's shared directory (created when the boot starts)."""
    name = "-".join([proc.stamp(), variant, *([what] if what else []),
                     f"{os.getpid()}.{next(_SHARED_SEQ)}"])
    return cache_root() / "runs" / name
