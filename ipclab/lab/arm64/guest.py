# SPDX-License-Identifier: MIT
"""The arm64 guest's user space and its boot: the initramfs, cpio archives, QEMU's command
line, and one boot with a job of the init's.

The host's root and its Python cannot serve an arm64 guest, so its user space is the lab's
own initramfs: a static PID 1 (scripts/guest-init.c) and a static engine, both cross-built
with Debian's gcc-aarch64-linux-gnu and cached by their sources. The boot is
qemu-system-aarch64's virt machine (a Neoverse N1: ARMv8.2 with LSE atomics, as arm64
servers are), under TCG or, deterministic, icount, with the boot's shared directory as a 9p
export mounted at the host's path. Judging a boot is vm.boot's, as on x86.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ipclab import EXIT_FAILED, ROOT, Error, proc

from .. import cache, vm
from ..cache import cache_root

QEMU = "qemu-system-aarch64"
CC = "aarch64-linux-gnu-gcc"
# An ARMv8.2 server core: LSE atomics and RCpc loads, no pointer authentication (which
# QEMU's `max` CPU emulates several times slower than the rest).
CPU = "neoverse-n1"
GUEST_INIT = ROOT / "scripts" / "guest-init.c"
BENCH_SRC = ROOT / "bench" / "src"
GUEST_ENGINE = "/ipcbench"
JOB = "job.txt"
NINEP_TAG = "ipclab"


def digest(paths: list[Path]) -> str:
    return cache.sha256_bytes("".join(f"{p.name}:{cache.sha256_file(p)}"
                                      for p in sorted(paths)).encode())[:12]


# `ab` boots its two sides from two threads, and on a cold cache both need the guest's user
# space: one builds it, the other waits and finds it built.
_BUILD_LOCK = threading.Lock()


def temp_name(out: Path) -> Path:
    """Where to make `out` before it is moved into place: this process and thread's own."""
    return out.with_name(f"{out.name}.tmp{os.getpid()}-{threading.get_ident()}")


def _cross_build(out: Path, argv_tail: list[str]) -> Path:
    """A static arm64 program, built once per source into the lab's tools."""
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(out)
    done = proc.run([CC, "-O2", "-static", "-o", str(tmp), *argv_tail], 600, capture=True)
    if done.rc != 0:
        raise Error(f"cross-building {out.name} failed (is gcc-aarch64-linux-gnu installed? "
                    f"make lab-deps): {done.err.strip()[-300:]}", EXIT_FAILED)
    os.replace(tmp, out)
    return out


def initramfs() -> Path:
    """The guest's whole user space: /init and /ipcbench, as a newc cpio archive."""
    sources = sorted(BENCH_SRC.glob("*.[ch]"))
    tools = cache_root() / "tools"
    key = digest([GUEST_INIT, *sources])
    out = tools / f"initramfs-arm64-{key}.cpio"
    if proc.would_run([CC, "-static", str(GUEST_INIT), "...", str(BENCH_SRC / "*.c")]):
        return out
    with _BUILD_LOCK:
        if not out.exists():
            _build_initramfs(out, tools, sources)
    return out


def _build_initramfs(out: Path, tools: Path, sources: list[Path]) -> None:
    init = _cross_build(tools / f"guest-init-arm64-{digest([GUEST_INIT])}",
                        ["-Wall", str(GUEST_INIT)])
    bench = _cross_build(tools / f"ipcbench-arm64-{digest(sources)}",
                         ["-std=gnu11", f"-I{BENCH_SRC}",
                          *(str(p) for p in sources if p.suffix == ".c"),
                          "-lrt", "-lpthread", "-lm"])
    entries = [(d, 0o040755, b"") for d in ("dev", "proc", "sys", "tmp")]
    entries += [("init", 0o100755, init.read_bytes()),
                (GUEST_ENGINE.lstrip("/"), 0o100755, bench.read_bytes()),
                # The console, so that the kernel hands init a stdout and stderr.
                ("dev/console", 0o020600, b"", (5, 1))]
    write_atomic(out, cpio_archive(entries))


def write_atomic(out: Path, data: bytes) -> None:
    proc.write_text_atomic(out, data)


def cpio_archive(entries: list[tuple]) -> bytes:
    """A newc ("070701") archive, the format the kernel unpacks, of (name, mode, body[,
    (major, minor)]) entries. Archives may be concatenated: the kernel unpacks each."""
    data = b"".join(_cpio_entry(i + 1, *entry) for i, entry in enumerate(entries))
    return data + _cpio_entry(0, "TRAILER!!!", 0, b"")


def _cpio_entry(ino: int, name: str, mode: int, body: bytes, rdev=(0, 0)) -> bytes:
    fields = (ino, mode, 0, 0, 2 if mode & 0o040000 else 1, 0, len(body), 0, 0, rdev[0],
              rdev[1], len(name) + 1, 0)
    head = b"070701" + b"".join(b"%08x" % f for f in fields) + name.encode() + b"\0"
    pad = b"\0" * (-len(head) % 4)
    return head + pad + body + b"\0" * (-len(body) % 4)


def launcher(shared: Path, initrd: Path | None = None):
    """vm.boot's way to start an arm64 guest: the QEMU command line for the image, the
    initramfs (initramfs()'s unless given) and the shared directory."""
    def argv(image: Path, cpus: int, memory: str, append: list[str],
             qemu_opts: list[str]) -> list[str]:
        cmdline = ["console=ttyAMA0", f"ipclab.shared={shared}", "panic=-1", *append]
        # dtb-randomness=off: QEMU would put a fresh kaslr-seed and rng-seed in every boot's
        # device tree, and a guest seeded differently each boot counts differently.
        return [QEMU, "-M", "virt,dtb-randomness=off", "-cpu", CPU, "-smp", str(cpus), "-m", memory,
                "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot",
                # the virt machine's default NIC: the guest has no network stack
                "-nic", "none",
                "-kernel", str(image), "-initrd", str(initrd or initramfs()),
                "-append", " ".join(cmdline),
                "-fsdev", f"local,id=ipclab,path={shared},security_model=none",
                "-device", f"virtio-9p-device,fsdev=ipclab,mount_tag={NINEP_TAG}",
                *qemu_opts]
    return argv


def boot(meta: dict, shared: Path, job: str, label: list[str], *, initrd: Path | None = None,
         **kw) -> vm.Boot:
    """One arm64 boot: the init's `job` (steps.render's text) written to the shared
    directory, the guest started with the initramfs (initramfs()'s unless `initrd`) and
    judged by vm.boot, whose options `kw` are; `label` is what a dry run and the record say
    the guest ran. The host judges what the steps left: the job's exit status fails
    nothing."""
    if not proc.is_dry_run():
        shared.mkdir(parents=True, exist_ok=True)
        proc.write_text_atomic(shared / JOB, job)
    return vm.boot(meta, "tcg", label, shared=shared, job_rc_fails=False,
                   launcher=launcher(shared, initrd), **kw)
