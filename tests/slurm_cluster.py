# SPDX-License-Identifier: MIT
"""A one-node Slurm cluster for the tests, from Debian's slurm-wlm and munge: a minimal
slurm.conf for this host's CPUs and memory (`slurmd -C`), a munge key, and munged, slurmctld
and slurmd started here, in the foreground of their own sessions, with every file in one
private directory (no /etc, /run or /var is touched, and no systemd is needed). The ports
are free ones, so that a cluster already on the machine is neither used nor disturbed.

    with Cluster(tmp_path) as c:
        subprocess.run(["sbatch", ...], env=c.env())

When a daemon cannot start, ClusterError carries its own last log lines: the test that
wanted a cluster fails with them (it never skips)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
# What `sinfo` must show of the node within this bound; slurmd registers in about a second.
START_TIMEOUT_S = 60


class ClusterError(Exception):
    pass


def missing_tools() -> str | None:
    """What of Debian's packages is missing (`make lab-deps` installs them)."""
    for tool in (*DAEMONS, "sinfo", "sbatch", "squeue", "scancel"):
        if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
            return f"{tool} missing (make lab-deps installs slurm-wlm and munge)"
    return None


def _which(tool: str) -> str:
    return shutil.which(tool) or str(Path("/usr/sbin", tool))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_facts() -> dict:
    """NodeName, CPUs, ..., RealMemory as `slurmd -C` finds them on this host."""
    r = subprocess.run([_which("slurmd"), "-C"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise ClusterError(f"slurmd -C: {(r.stderr or r.stdout).strip()}")
    first = r.stdout.splitlines()[0]
    return dict(re.findall(r"(\w+)=(\S+)", first))


def slurm_conf(d: Path, facts: dict, ctld_port: int, slurmd_port: int) -> str:
    """The least slurm.conf a one-node cluster runs on: root runs everything, no cgroups
    (proctrack/linuxproc), no accounting database, and each core schedulable on its own
    (cons_tres, CR_Core) so that two one-core jobs run side by side as `ab`'s boots do; a
    job cancelled or past its limit gets 2 s between SIGTERM and SIGKILL (KillWait), not 30,
    and pending jobs are looked at every 2 s (sched_interval), not 60, so that a job held by a
    drained node starts soon after the node is back."""
    node = facts["NodeName"]
    hw = " ".join(f"{k}={facts[k]}" for k in ("CPUs", "Boards", "SocketsPerBoard",
                                              "CoresPerSocket", "ThreadsPerCore",
                                              "RealMemory") if k in facts)
    return f"""\
ClusterName=ipclab-test
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={d}/munge.socket
CredType=cred/munge
StateSaveLocation={d}/ctld
SlurmdSpoolDir={d}/slurmd
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=600
KillWait=2
NodeName={node} NodeAddr=127.0.0.1 {hw} State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


class Cluster:
    """The one-node cluster in directory `d` (a new one in /tmp when None): the cluster's
    alone, its parents searchable by everyone (munged's socket)."""

    def __init__(self, d: Path | None = None, start_timeout: float = START_TIMEOUT_S):
        self.made = d is None
        self.d = Path(d or tempfile.mkdtemp(prefix="ipclab-slurm-"))
        self.start_timeout = start_timeout
        self.procs: dict[str, subprocess.Popen] = {}
        self.node = None

    # ------------------------------------------------------------------ setup

    def env(self, base: dict | None = None) -> dict:
        """The environment Slurm's commands find this cluster with."""
        env = dict(os.environ if base is None else base)
        env["SLURM_CONF"] = str(self.d / "slurm.conf")
        return env

    def job(self, job_id: str) -> dict:
        """What `scontrol show job` says of one job (or one task of an array, JOB_INDEX):
        its KEY=VALUE fields (JobState, StartTime, EndTime, ...)."""
        r = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True,
                           env=self.env(), timeout=60)
        if r.returncode != 0:
            raise ClusterError(f"scontrol show job {job_id}: {r.stderr.strip()}")
        return dict(re.findall(r"(\w+)=(\S*)", r.stdout))

    def write_files(self) -> None:
        d = self.d
        for sub in ("ctld", "slurmd"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        # munged wants nobody but its user able to write its key or the directories above its
        # socket and logs, and everyone able to reach the socket: mode 0711 (and so a
        # directory whose parents all let everyone through, such as mkdtemp's in /tmp).
        d.chmod(0o711)
        key = d / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        facts = node_facts()
        self.node = facts["NodeName"]
        (d / "slurm.conf").write_text(slurm_conf(d, facts, free_port(), free_port()))

    def _start(self, name: str, argv: list[str]) -> None:
        log = open(self.d / f"{name}.out", "ab")
        try:
            self.procs[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                                stderr=subprocess.STDOUT, env=self.env(),
                                                start_new_session=True)
        finally:
            log.close()

    def start(self) -> "Cluster":
        if (why := missing_tools()) is not None:
            raise ClusterError(why)
        self.write_files()
        d = self.d
        try:
            self._start("munged", [_which("munged"), "-F", f"--key-file={d}/munge.key",
                                   f"--socket={d}/munge.socket", f"--pid-file={d}/munged.pid",
                                   f"--log-file={d}/munged.log", f"--seed-file={d}/munged.seed"])
            self._wait(lambda: (d / "munge.socket").exists(), "munged", "its socket")
            # -i: no state from an earlier cluster (there is none: the directory is new).
            self._start("slurmctld", [_which("slurmctld"), "-D", "-i",
                                      "-f", str(d / "slurm.conf")])
            self._start("slurmd", [_which("slurmd"), "-D", "-N", self.node,
                                   "-f", str(d / "slurm.conf")])
            self._wait(self.node_idle, "slurmd", f"node {self.node} idle in sinfo")
        except BaseException:
            self.stop()
            raise
        return self

    def _wait(self, ready, who: str, what: str) -> None:
        """Until ready() (bounded: the watchdog); a daemon that exits first, or the bound
        passing, is a ClusterError with the daemons' own last log lines."""
        deadline = time.monotonic() + self.start_timeout
        while True:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise ClusterError(f"{name} exited ({p.returncode}) before {what}:\n"
                                       + self.log_tail(name))
            if ready():
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"no {what} within {self.start_timeout:.0f} s:\n"
                                   + self.log_tail(who))
            time.sleep(0.25)

    def node_idle(self) -> bool:
        r = subprocess.run(["sinfo", "-h", "-N", "-n", self.node, "-o", "%T"],
                           capture_output=True, text=True, env=self.env(), timeout=30)
        return r.returncode == 0 and r.stdout.strip() == "idle"

    def log_tail(self, name: str, lines: int = 5) -> str:
        """The daemon's own last lines: its log file (errors first), else what it printed."""
        out = []
        for f in (self.d / f"{name}.log", self.d / f"{name}.out"):
            with contextlib.suppress(OSError):
                text = f.read_text(errors="replace").splitlines()
                errors = [t for t in text if re.search(r"error|fatal|failed", t, re.I)]
                out += (errors or text)[-lines:]
        return "\n".join(f"  {name}: {t}" for t in out) or f"  {name}: (no log)"

    # ------------------------------------------------------------------ teardown

    def stop(self) -> None:
        """SIGTERM to each daemon started here (slurmd first, munged last), then SIGKILL to
        what has not gone within 10 s; nothing else on the machine is signalled. The jobs
        still in the cluster (all of them were submitted to it alone) are cancelled first, so
        that no job step outlives its slurmd."""
        if self.procs.get("slurmctld") and self.procs["slurmctld"].poll() is None:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(["scancel", "--full", "--quiet", "--user", "root"],
                               env=self.env(), timeout=30, capture_output=True)
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline and subprocess.run(
                        ["squeue", "-h", "-o", "%i"], env=self.env(), capture_output=True,
                        text=True, timeout=30).stdout.strip():
                    time.sleep(0.5)
        for name in reversed(DAEMONS):
            p = self.procs.get(name)
            if p is None or p.poll() is not None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs.clear()

    def remove(self) -> None:
        """stop(), and the directory gone if this cluster made it (a cluster that failed to
        start keeps it: its logs are the evidence)."""
        self.stop()
        if self.made:
            shutil.rmtree(self.d, ignore_errors=True)

    def __enter__(self) -> "Cluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.remove()
