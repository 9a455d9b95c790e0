# SPDX-License-Identifier: MIT
"""Machine and kernel facts, and warnings that tell the user what to do."""

import os
import platform
import shutil
import statistics
import subprocess
from pathlib import Path
from types import SimpleNamespace

from ipclab import Error, engine
from ipclab.mode import Mode


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _bracketed(text):
    """'always [madvise] never' -> 'madvise'."""
    if text and "[" in text:
        return text.split("[", 1)[1].split("]", 1)[0]
    return text


def cpu_model():
    """This machine's CPU model name, as /proc/cpuinfo says it."""
    info = _read("/proc/cpuinfo") or ""
    for line in info.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _detect_virt(flag):
    if not shutil.which("systemd-detect-virt"):
        return None
    try:
        p = subprocess.run(["systemd-detect-virt", flag], capture_output=True, text=True,
                           timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    v = p.stdout.strip()
    return v if v and v != "none" else None


def virtualization():
    """'none', or the hypervisor this runs under (a VM or emulation)."""
    v = _detect_virt("--vm")
    if v:
        return v
    if " hypervisor" in (_read("/proc/cpuinfo") or ""):
        return _read("/sys/class/dmi/id/product_name") or "unknown hypervisor"
    return "none"


def container():
    return _detect_virt("--container") or "none"


def mem_total_gib():
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return round(int(line.split()[1]) / 1024 / 1024, 1)
    return None


def thp_mode():
    return _bracketed(_read("/sys/kernel/mm/transparent_hugepage/enabled"))


def collect():
    governors = set()
    base = Path("/sys/devices/system/cpu")
    for cpu in sorted(base.iterdir()) if base.is_dir() else []:
        g = _read(cpu / "cpufreq" / "scaling_governor")
        if g:
            governors.add(g)
    load = None
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    return {
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "nproc": os.cpu_count(),
        "mem_gib": mem_total_gib(),
        "governor": ",".join(sorted(governors)) if governors else None,
        "thp": thp_mode(),
        "pipe_max_size": _read("/proc/sys/fs/pipe-max-size"),
        "perf_event_paranoid": _read("/proc/sys/kernel/perf_event_paranoid"),
        "dev_mqueue": Path("/dev/mqueue").is_dir(),
        "mq_msg_max": _read("/proc/sys/fs/mqueue/msg_max"),
        "virtualization": virtualization(),
        "container": container(),
        "accel": os.environ.get("IPCBENCH_ACCEL", "native"),
        "clock": os.environ.get("IPCBENCH_CLOCK", "real"),
        "dev_kvm": os.access("/dev/kvm", os.R_OK | os.W_OK),
        "stress_ng": shutil.which("stress-ng") is not None,
        "loadavg": load,
    }


def warnings(env):
    """Advice, one string per problem found."""
    w = []
    gov = env.get("governor")
    if gov and gov != "performance":
        w.append(f"CPU frequency governor is {gov}: for stable timings run"
                 " `cpupower frequency-set -g performance` (as root)")
    if env.get("thp") == "always":
        w.append("THP is 'always': khugepaged can move timings; 'madvise' is steadier"
                 " (echo madvise > /sys/kernel/mm/transparent_hugepage/enabled)")
    elif env.get("thp") == "never":
        w.append("THP is 'never': the fast-pipes huge-pages step cannot get huge pages"
                 " (echo madvise > /sys/kernel/mm/transparent_hugepage/enabled)")
    if not env.get("dev_mqueue"):
        w.append("/dev/mqueue is not mounted: mq_open still works, but to inspect queues"
                 " run `mkdir -p /dev/mqueue && mount -t mqueue none /dev/mqueue`")
    virt = env.get("virtualization") or "none"
    if virt != "none":
        w.append(f"running in a VM ({virt}): timings include hypervisor noise; compare runs"
                 " on the same VM, never across machines")
    caveat = Mode.of_clock(env.get("clock")).caveat(env.get("accel") or "native")
    if caveat:
        w.append(caveat)
    if env.get("perf_event_paranoid") not in (None, "") and \
            int(env["perf_event_paranoid"]) > 2 and os.geteuid() != 0:
        w.append(f"perf_event_paranoid={env['perf_event_paranoid']}: token-ring (and --counters"
                 " perf) cannot open perf events and reports no CPU migrations"
                 " (sysctl kernel.perf_event_paranoid=1)")
    if not env.get("stress_ng"):
        w.append("stress-ng is missing: the memory-pressure sweep (full mode) cannot run"
                 " (apt-get install stress-ng)")
    load = env.get("loadavg")
    nproc = env.get("nproc") or 1
    if load and load[0] > 0.5 * nproc:
        w.append(f"load average {load[0]:.2f} on {int(nproc)} CPUs: other work is running and"
                 " will add noise; measure on an idle machine")
    return w


# Short on purpose: on the project's VM under load a cross-CPU round trip took 220-400 us,
# so the six runs took about 4 s.
WAKEUP_ROUND_TRIPS = 2000
WAKEUP_RUNS = 3


def wakeup_latency(engine_path=None):
    """How long waking the other CPU takes: pinned pipe-context round trips with both sides on
    one CPU and on two, WAKEUP_RUNS runs of each, alternating; the median microseconds per
    round trip of each. {"error": why} when it cannot be measured."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = list(range(os.cpu_count() or 1))
    if len(cpus) < 2:
        return {"error": "one CPU: there is no other CPU to wake"}
    try:
        path = engine.find_engine(engine_path)
    except Error as e:
        return {"error": str(e)}
    a, b = cpus[0], cpus[1]
    us = {"same": [], "cross": []}
    for _ in range(WAKEUP_RUNS):
        for name, pin in (("same", f"{a},{a}"), ("cross", f"{a},{b}")):
            cell = SimpleNamespace(workload="pipe-context", timeout=30,
                                   args=["--copies", "1", "--cpus", pin,
                                         "--count", str(WAKEUP_ROUND_TRIPS)])
            out = engine.run_cell(path, cell)
            rate = None
            if out.status == "ok":
                m = out.samples[0].get("metrics", {}).get("round_trips_per_s", {})
                rate = m.get("value") if isinstance(m, dict) else None
            if not isinstance(rate, (int, float)) or rate <= 0:
                return {"error": f"pipe-context --cpus {pin}: {out.error or 'no rate'}"}
            us[name].append(1e6 / rate)
    same, cross = statistics.median(us["same"]), statistics.median(us["cross"])
    return {"same_cpu_us": round(same, 3), "cross_cpu_us": round(cross, 3),
            "ratio": round(cross / same, 2), "cpus": [a, b], "round_trips": WAKEUP_ROUND_TRIPS,
            "runs": WAKEUP_RUNS}


def wakeup_text(w):
    """What wakeup_latency() found, in a sentence or two."""
    if not isinstance(w, dict):
        return ""
    if "error" in w:
        return f"cross-CPU wakeup latency not measured: {w['error']}"
    a, b = w.get("cpus", ["?", "?"])
    text = (f"pipe ping-pong, pinned: {w['same_cpu_us']:.2f} us per round trip with both sides"
            f" on CPU {a}, {w['cross_cpu_us']:.2f} us with them on CPUs {a} and {b}"
            f" ({w['ratio']:g}x; median of {w['runs']} runs of {w['round_trips']} each)")
    if w["ratio"] >= 1.5:
        text += (". Unpinned, the scheduler puts the two sides on one CPU or on two as it"
                 " likes, so ping-pong samples can split into two modes; --cpus A,B chooses")
    return text


def lab_advice(env):
    """Which kernel A/B mode fits this machine (for `ipclab env`)."""
    if env.get("dev_kvm"):
        return ("kernel A/B: /dev/kvm is here. If a stock guest boots under it (the lab probes"
                " once), `ipclab ab` measures real time; if not, or for a change of a few"
                " instructions per operation, add --deterministic: guest instruction counts"
                " under QEMU icount, the same on every boot (docs/lab.md)")
    return ("kernel A/B: no usable /dev/kvm, so lab guests run under emulation, where timings"
            " move by tens of percent between boots: use `ipclab ab OLD NEW --suite S"
            " --deterministic` (guest instruction counts under QEMU icount, docs/lab.md)")


def render(env, out):
    width = max(len(k) for k in env)
    for k, v in env.items():
        if k == "wakeup":
            continue
        if isinstance(v, list):
            v = " ".join(str(x) for x in v)
        out.write(f"{k:<{width}}  {v}\n")
    ws = warnings(env)
    if ws:
        out.write("\n")
        for line in ws:
            out.write(f"warning: {line}\n")
    if env.get("wakeup"):
        out.write(f"\nwakeup: {wakeup_text(env['wakeup'])}\n")
    out.write(f"\nadvice: {lab_advice(env)}\n")
    return ws
