# SPDX-License-Identifier: MIT
"""The QEMU plugin that counts a deterministic guest's instructions and costly events per
code address (kernel/qemu-plugin/insncount.c): building it, its options for one boot, and
the kernel arguments that keep a one-vCPU guest on SMP code."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from ipclab import EXIT_FAILED, ROOT, Error, proc, profile
from ipclab.deterministic import cost

from .. import cache, kernel
from ..cache import cache_root

# What the plugin counts of memory: cache (loads, stores and the cache model's misses: every
# access calls the plugin, several times the boot's time; `--cost`), or off (the events it
# decodes from the instructions only: a few per cent).
PLUGIN_MEMORY = ("cache", "off")
DEFAULT_PLUGIN_MEMORY = "off"
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
        opts += cost.plugin_options(cost.load_model())
    prefix = SYSCALL_PREFIX[meta.get("arch", "x86_64")]
    symbols = {opt: prefix + sym.removeprefix(SYSCALL_PREFIX["x86_64"])
               for opt, sym in {"marker": profile.MARKER_SYMBOL, **SAMPLE_MARKERS}.items()}
    if proc.is_dry_run():
        return ["-plugin", ",".join([f"file={PLUGIN_SOURCE.stem}.so,out={out}"]
                                    + [f"{k}=<{sym} in System.map>"
                                       for k, sym in symbols.items()] + opts)]
    smap = kernel.image_dir(meta["key"]) / "System.map"
    if meta.get("prebuilt") and not has_symbols(smap):
        # boot.ensure_symbols reads them from the guest first; this is its guard.
        raise Error(f"{meta['variant']}: its System.map has no symbols to name a profile's "
                    "addresses by", EXIT_FAILED)
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


def has_symbols(smap: Path) -> bool:
    """A System.map with symbols in it: Debian's packages ship a one-line stub that sends
    the reader to the -dbg package."""
    with contextlib.suppress(OSError):
        return smap.stat().st_size > 4096
    return False
