# SPDX-License-Identifier: MIT
"""Kernel lab, images made elsewhere: a bzImage's release (from its boot header), its config
(built in with IKCONFIG, or a config file beside it), and whether a config has what the
suites and virtme-ng need.
"""

from __future__ import annotations

import re
from pathlib import Path

from ipclab import Error, proc

# What a kernel needs for the lab: (option, what it is for, may it be a module). A module
# serves only when the image's modules are installed where virtme-ng looks for them.
REQUIRED = [
    ("CONFIG_POSIX_MQUEUE", "POSIX mqueue", False),
    ("CONFIG_TRANSPARENT_HUGEPAGE", "THP", False),
    ("CONFIG_MEMCG", "memcg", False),
    ("CONFIG_PERF_EVENTS", "perf events", False),
    ("CONFIG_VIRTIO_PCI", "virtio PCI for vng", True),
]
# How the guest reaches the host's root: 9p, which the lab builds in, or virtiofs, which
# Debian's cloud kernel has instead (virtme-ng then needs a virtiofsd: vm.virtiofsd).
SHARED_FS = {"9p": ("CONFIG_NET_9P", "CONFIG_NET_9P_VIRTIO", "CONFIG_9P_FS"),
             "virtiofs": ("CONFIG_FUSE_FS", "CONFIG_VIRTIO_FS")}
EXTRACT_TIMEOUT_S = 120


def release_of(path: Path) -> str:
    """The kernel release a bzImage says it is (x86 boot protocol: the kernel_version
    pointer at 0x20e, relative to 0x200); Error (exit 2) if `path` is not a bzImage."""
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    if head[0x202:0x206] != b"HdrS":
        raise Error(f"--kernel {path}: not a bzImage (no x86 boot header)")
    at = int.from_bytes(head[0x20E:0x210], "little") + 0x200
    text = head[at:at + 256].split(b"\0", 1)[0].decode(errors="replace").split()
    if not text or at >= len(head):
        raise Error(f"--kernel {path}: its boot header names no kernel version")
    return text[0]


def read_config(path: Path, release: str, extract_script: Path | None) -> tuple[str | None, str]:
    """(config text, where it came from), or (None, why it could not be read): IKCONFIG in
    the image (the kernel's own scripts/extract-ikconfig, the same data as /proc/config.gz),
    else config-RELEASE or .config beside the image, else /boot/config-RELEASE."""
    tried = []
    if extract_script is not None and extract_script.is_file():
        done = proc.run(["sh", str(extract_script), str(path)], EXTRACT_TIMEOUT_S, capture=True)
        if done.rc == 0 and "CONFIG_" in done.out:
            return done.out, "IKCONFIG in the image"
        tried.append("no IKCONFIG in the image")
    else:
        tried.append("no kernel source to take scripts/extract-ikconfig from")
    for f in (path.parent / f"config-{release}", path.parent / ".config",
              Path("/boot") / f"config-{release}"):
        if f.is_file():
            return f.read_text(errors="replace"), str(f)
    tried.append(f"no config-{release} beside it or in /boot")
    return None, "; ".join(tried)


def options(text: str) -> dict[str, str]:
    """CONFIG_X -> y, m or a value; options set off are absent."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(CONFIG_\w+)=(.*)$", line.strip())
        if m and m.group(2) != "n":
            out[m.group(1)] = m.group(2)
    return out


def missing_options(text: str, modules: bool) -> list[str]:
    """What of REQUIRED a config lacks, each as 'CONFIG_X (what for)'. `modules`: a module
    counts (its modules are installed for virtme-ng to load)."""
    have = options(text)
    missing = []
    for opt, what, may_be_module in REQUIRED:
        v = have.get(opt)
        if v == "y" or (v == "m" and may_be_module and modules):
            continue
        note = ", a module, not built in" if v == "m" else ""
        missing.append(f"{opt} ({what}{note})")
    if shared_fs(text, modules) is None:
        missing.append("the host's root for vng: " + " or ".join(
            f"{fs} ({', '.join(opts)})" for fs, opts in SHARED_FS.items()))
    return missing


def shared_fs(text: str, modules: bool = False) -> str | None:
    """The file system the guest mounts the host's root with: 9p where the config has it
    (virtme-ng's most tested path), else virtiofs, else None."""
    have = options(text)
    for fs, opts in SHARED_FS.items():
        if all(have.get(o) == "y" or (have.get(o) == "m" and modules) for o in opts):
            return fs
    return None


def not_checked() -> str:
    """What the suites need, in words, for a kernel whose config cannot be read."""
    return ", ".join([what for _, what, _ in REQUIRED] + ["9p or virtiofs for vng"])
