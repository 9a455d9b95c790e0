#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Guest side of `ipclab vm run`: set the guest up, run one job, leave the evidence.

Runs as init's child inside a virtme-ng guest (PID 1 is virtme-ng-init, we are root).
Input:  SHARED/job.json   {"argv": [...], "env": {...}, "cwd": ..., "thp": "madvise",
                           "cgroup": "ipclab", "timeout": s,
                           "faults": {"fail_page_alloc"|"failslab": {knobs}} | null,
                           "kmemleak": bool, "deterministic": bool}
Output: SHARED/started    written first, so the host can time boot-to-userspace
        SHARED/job.out    the job's stdout and stderr
        SHARED/status.json rc, kernel release, what the setup did, memcg usage
        SHARED/dmesg.txt  the kernel log after the job (and kmemleak.txt when asked)
Only the standard library: the guest shares the host's Python, not its site-packages.
"""

import ctypes
import json
import os
import platform
import signal
import subprocess
import sys
import time


def write(path, text):
    try:
        with open(path, "w") as f:
            f.write(text)
        return None
    except OSError as e:
        return f"{path}: {e.strerror}"


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def mounted(target):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == target for line in f)


def mount(fstype, target, notes):
    if mounted(target):
        return True
    os.makedirs(target, exist_ok=True)
    rc = subprocess.run(["mount", "-t", fstype, "none", target], capture_output=True, text=True)
    if rc.returncode != 0:
        notes.append(f"mount {fstype} {target}: {rc.stderr.strip()}")
        return False
    return True


def setup(job, notes):
    setup = {}
    # mq_open() needs no mount, but tests and the engine read limits and queue files there.
    setup["mqueue"] = mount("mqueue", "/dev/mqueue", notes)
    setup["debugfs"] = mount("debugfs", "/sys/kernel/debug", notes)
    thp = job.get("thp") or "madvise"
    err = write("/sys/kernel/mm/transparent_hugepage/enabled", thp)
    if err:
        notes.append(f"thp: {err}")
    setup["thp"] = read("/sys/kernel/mm/transparent_hugepage/enabled")
    # Memory cgroup: the workload runs in a non-root cgroup so that pipe buffers and
    # mqueue messages are charged (__GFP_ACCOUNT) the way they are on a real system.
    cg = None
    if mount("cgroup2", "/sys/fs/cgroup", notes):
        err = write("/sys/fs/cgroup/cgroup.subtree_control", "+memory")
        if err:
            notes.append(f"memcg: {err}")
        cg = "/sys/fs/cgroup/" + (job.get("cgroup") or "ipclab")
        os.makedirs(cg, exist_ok=True)
        if not os.path.exists(cg + "/memory.current"):
            notes.append("memcg: memory controller not available in the cgroup")
            cg = None
    setup["cgroup"] = cg
    if job.get("deterministic"):
        # Under icount a run is an instruction count; randomized stack and mmap placement
        # would change alignments, and so counts, from one boot to the next.
        err = write("/proc/sys/kernel/randomize_va_space", "0")
        if err:
            notes.append(f"aslr: {err}")
        setup["randomize_va_space"] = read("/proc/sys/kernel/randomize_va_space")
    for k, v in (job.get("sysctl") or {}).items():
        err = write("/proc/sys/" + k.replace(".", "/"), str(v))
        if err:
            notes.append(f"sysctl {k}: {err}")
    return setup


def arm_faults(faults, notes):
    """fail_page_alloc and failslab through debugfs; task-filter limits them to the tasks
    with make-it-fail. `faults` maps each facility to its knobs."""
    ok = True
    for kind, knobs in faults.items():
        ok = arm_one(kind, knobs, notes) and ok
    return ok


def arm_one(kind, faults, notes):
    base = f"/sys/kernel/debug/{kind}"
    if not os.path.isdir(base):
        notes.append(f"{kind}: not in this kernel (use the debug variant or overlay)")
        return False
    knobs = {
        "task-filter": "Y",
        # Pipe and mqueue buffers are order-0 allocations that may sleep; the defaults
        # (min-order 1, ignore-gfp-wait Y) would never fail them.
        "ignore-gfp-wait": "N" if not faults.get("ignore_gfp_wait") else "Y",
        "probability": faults.get("probability", 10),
        "interval": faults.get("interval", 1),
        "times": faults.get("times", -1),
        # A budget the filtered tasks allocate before failures start, so exec and program
        # start-up get through and the failures land in the workload proper. fail_page_alloc
        # charges `1 << order` per call against it (pages, not bytes); failslab bytes.
        "space": faults.get("space", 0) // (os.sysconf("SC_PAGE_SIZE")
                                            if kind == "fail_page_alloc" else 1),
        # With a bounded number of failures, a stack per failure shows who was hit (and that
        # only the job was); unbounded runs would flood an emulated console with them.
        "verbose": faults.get("verbose", 2 if 0 < int(faults.get("times", -1)) <= 50 else 1),
    }
    if kind == "fail_page_alloc":
        knobs.update({"min-order": faults.get("min_order", 0), "ignore-gfp-highmem": "N"})
    ok = True
    for k, v in knobs.items():
        err = write(f"{base}/{k}", str(v))
        if err:
            notes.append(f"{kind} {k}: {err}")
            ok = False
    return ok


def disarm_faults(faults):
    """Disarm each facility; returns how many failures each bounded one injected."""
    injected = {}
    for kind, knobs in faults.items():
        left = read(f"/sys/kernel/debug/{kind}/times")
        write(f"/sys/kernel/debug/{kind}/probability", "0")
        write(f"/sys/kernel/debug/{kind}/times", "0")
        times = int(knobs.get("times", -1))
        if times > 0 and left is not None:
            injected[kind] = times - int(left)
    return injected


def main():
    shared = sys.argv[1]
    write(f"{shared}/started", f"{time.time()}\n")
    with open(f"{shared}/job.json") as f:
        job = json.load(f)
    notes = []
    status = {"release": platform.release(), "notes": notes, "nproc": os.cpu_count()}
    status["setup"] = setup(job, notes)
    faults = job.get("faults")
    if faults:
        status["faults_armed"] = arm_faults(faults, notes)
    env = dict(os.environ)
    env.update(job.get("env") or {})
    # The command's own tasks are marked to fail, or it marks its workers itself.
    mark = bool(faults) and any(k.get("tasks", "command") == "command"
                                for k in faults.values())
    if faults and not mark:
        env["CT_MAKE_IT_FAIL"] = "1"
    cg = status["setup"].get("cgroup")

    def child_setup():
        # In the child, before exec: join the memcg, and opt in to fault injection.
        if cg:
            write(cg + "/cgroup.procs", str(os.getpid()))
        if mark:
            write("/proc/self/make-it-fail", "1")

    t0 = time.time()
    with open(f"{shared}/job.out", "wb") as out:
        try:
            proc = subprocess.Popen(job["argv"], stdout=out, stderr=subprocess.STDOUT,
                                    cwd=job.get("cwd") or "/", env=env,
                                    preexec_fn=child_setup, start_new_session=True)
            try:
                rc = proc.wait(timeout=job.get("timeout") or None)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc = 124
                status["job_timed_out"] = job.get("timeout")
                notes.append(f"job timed out after {job.get('timeout')} s inside the guest")
        except OSError as e:
            rc = 127
            notes.append(f"cannot run {job['argv'][0]}: {e.strerror}")
    status["rc"] = rc
    status["job_seconds"] = round(time.time() - t0, 3)
    if faults:
        injected = disarm_faults(faults)
        if injected:
            status["faults_injected"] = sum(injected.values())
            status["faults_injected_by"] = injected
    if cg:
        # Evidence that the workload was charged: peak usage and the kernel-memory share.
        status["memcg"] = {k: read(f"{cg}/{k}") for k in ("memory.peak", "memory.current")}
        for line in (read(f"{cg}/memory.stat") or "").splitlines():
            k, _, v = line.partition(" ")
            if k in ("kernel", "anon", "file"):
                status["memcg"][k] = v
    if job.get("kmemleak"):
        # Two scans: kmemleak only reports objects that stay unreferenced across scans.
        for _ in range(2):
            write("/sys/kernel/debug/kmemleak", "scan")
        write(f"{shared}/kmemleak.txt", read("/sys/kernel/debug/kmemleak") or "")
    # Whether lockdep still watches at the end: it turns itself off after its first report
    # (and on a taint), and a debug kernel's log may have wrapped past its banner.
    for line in (read("/proc/lockdep_stats") or "").splitlines():
        if line.strip().startswith("debug_locks:"):
            status["debug_locks"] = int(line.split(":")[1])
    dmesg = subprocess.run(["dmesg"], capture_output=True, text=True)
    if faults:
        # Unbounded runs (times -1) leave no count in the knob; the messages are the count.
        status["fault_messages"] = dmesg.stdout.count("FAULT_INJECTION: forcing a failure")
    write(f"{shared}/dmesg.txt", dmesg.stdout)
    write(f"{shared}/status.json.tmp", json.dumps(status, indent=2) + "\n")
    os.replace(f"{shared}/status.json.tmp", f"{shared}/status.json")
    os.sync()
    # The lab kernel has no ACPI, so virtme-ng-init's power-off only halts and QEMU would
    # sit there. A restart ends QEMU at once (vng runs it with -no-reboot).
    if not job.get("no_reboot"):
        ctypes.CDLL(None, use_errno=True).reboot(0x01234567)   # RB_AUTOBOOT
    return 0


if __name__ == "__main__":
    sys.exit(main())
