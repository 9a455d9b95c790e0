# SPDX-License-Identifier: MIT
"""The accelerator: KVM if a stock guest really boots under it (probed once per machine and
cached), else TCG; the deterministic mode is TCG by definition."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from ipclab import Error, proc
from ipclab.progress import log

from ..cache import cache_root
from .clock import Clock
from .vng import run_vng, vng_argv


PROBE_TIMEOUT_S = 60


def machine_id() -> str:
    mid = ""
    with contextlib.suppress(OSError):
        mid = Path("/etc/machine-id").read_text().strip()
    return f"{mid}:{os.uname().release}"


def probed_accel() -> dict | None:
    """What the KVM probe found on this machine, if it ran here: no boot, no image needed."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        cached = json.loads((cache_root() / "accel.json").read_text())
        if cached.get("machine") == machine_id():
            return cached
    return None


def probe_accel(image: Path) -> dict:
    """KVM if a stock guest really boots under it, else TCG. Cached per machine; a dry run
    says what it would boot and assumes TCG."""
    forced = os.environ.get("IPCLAB_ACCEL")
    if forced:
        if forced not in ("kvm", "tcg"):
            raise Error(f"IPCLAB_ACCEL={forced}: must be kvm or tcg")
        return {"accel": forced, "reason": "forced by IPCLAB_ACCEL"}
    cached = probed_accel()
    if cached is not None:
        return cached
    path = cache_root() / "accel.json"
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


def accel_for(image: Path, clock: Clock, arch: str | None = None) -> str:
    """kvm or tcg for booting `image`. The deterministic mode is TCG by definition: no KVM
    probe, no TCG warning; so is another architecture than the host's (arm64)."""
    if clock.deterministic:
        return "tcg"
    if arch not in (None, "x86_64"):
        log(f"warning: an {arch} guest runs under QEMU TCG on this host. "
            f"{clock.caveat('tcg')}")
        return "tcg"
    res = probe_accel(image)
    if res["accel"] == "tcg":
        log(f"warning: using QEMU TCG, not KVM: {res['reason']}. "
            f"{clock.caveat('tcg')}")
    return res["accel"]


def kvm_qemu_opts() -> list[str]:
    """QEMU options the KVM probe needed to boot a guest (e.g. a plain CPU model)."""
    with contextlib.suppress(OSError, ValueError):
        return list(json.loads((cache_root() / "accel.json").read_text()).get("qemu_opts") or [])
    return []
