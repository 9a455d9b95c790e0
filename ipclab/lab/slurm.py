# SPDX-License-Identifier: MIT
"""Kernel lab, the Slurm executor (`--executor slurm`): each build and each boot one Slurm
batch job, on a node of the cluster the Slurm commands here reach (SLURM_CONF). A build is
`kernel build` of this checkout's `python -m ipclab`, one job an image however many sides
need it, and only for an image the cache lacks. A boot is `vm run NAME SUITE --built KEY -o
OUT --record REC`, which boots the build of that cache key and writes the one results file a
local boot writes, where a local boot writes it.

It needs the lab's cache (IPCLAB_CACHE) and the results directory on a filesystem every node
shares, and each node what a local boot needs (QEMU, the engine, this checkout at the same
path).

Deterministic boots are submitted all at once (their counts do not depend on the host or on
what runs beside them), each behind its image's build job in Slurm's queue (afterok: a failed
build cancels its boots); timed boots one after another once the builds ended (the KVM probe
boots the image first), each with a node to itself, so that they alternate A B A B as local
ones do. Ctrl-C (or SIGTERM) cancels the jobs submitted here that have not ended, by their
ids, and nothing else.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from ipclab import EXIT_FAILED, Error, proc, results, safeio, suites
from ipclab.progress import fmt_duration, log

from . import kernel, variants, vm
from .boot_plan import ENV, BootOpts, Here, SuiteBoot
from .cache import cache_root

# Where the job runs `python -m ipclab` from: this checkout.
REPO = Path(__file__).resolve().parents[2]
# squeue says so until the job is purged (MinJobAge, 300 s by default); a job that is gone
# from squeue has ended too.
DONE_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
               "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED"}
SQUEUE_RETRIES = 5
# Ends the here document that hands an array's table to its tasks: a JSON line never is it.
TABLE_END = "IPCLAB_TABLE_END"


def vm_run_argv(b: SuiteBoot, o: BootOpts, record: Path) -> list[str]:
    """The job's command: `vm run` of this checkout, booting build meta["key"] under its
    name, with every option of the boot; the one place it is built."""
    meta, job = b.meta, o.job
    argv = [sys.executable, "-m", "ipclab", "vm", "run", meta["variant"], job.suite,
            "--built", meta["key"], "-o", str(b.out.resolve()), "--record", str(record),
            "--timeout", f"{o.timeout:g}", "--arch", meta.get("arch", variants.DEFAULT_ARCH)]
    if job.mode == suites.FULL:
        argv.append("--full")
    if o.clock.deterministic:
        argv.append("--deterministic")
    if o.cpus:
        argv += ["--cpus", str(o.cpus)]
    if o.thp:
        argv += ["--thp", o.thp]
    if job.reps:
        argv += ["--reps", str(job.reps)]
    if job.warmups is not None:
        argv += ["--warmups", str(job.warmups)]
    if job.profile_by:
        argv.append("--profile")
    for c in job.cells:
        argv += ["--cell", c]
    if o.memory != vm.DEFAULT_PLUGIN_MEMORY:
        argv.append("--cost")
    return argv


# Slurm's reasons for a pending job that no wait resolves: the job asks for what its
# partition, account or QOS never allows (Slurm's squeue(1), JOB REASON CODES). Others
# (Resources, Priority, a node down or drained, a limit on jobs at once) pass in time.
NEVER_STARTS = {"BadConstraints", "InvalidAccount", "InvalidQOS", "PartitionNodeLimit",
                "PartitionTimeLimit", "PartitionConfig", "QOSMaxCpuPerJobLimit",
                "QOSMaxNodePerJobLimit", "QOSMaxWallDurationPerJobLimit",
                "AssocMaxCpuPerJobLimit", "AssocMaxNodePerJobLimit",
                "AssocMaxWallDurationPerJobLimit"}


class Watch:
    """What the jobs of one run are doing, as one line: how many pending (and why), running
    and ended, with an ETA from how long the ended ones ran; logged when it changes."""

    def __init__(self, total: int, clock: Callable[[], float] = time.monotonic,
                 who: str = "ab"):
        self.total, self.clock, self.who = total, clock, who
        self.state: dict[str, tuple[str, str]] = {}
        self.started: dict[str, float] = {}
        self.took: list[float] = []
        self.last = ""

    def saw(self, job_id: str, state: str, reason: str) -> None:
        self.state[job_id] = (state, reason)
        if state != "PENDING":
            self.started.setdefault(job_id, self.clock())

    def ended(self, job_id: str) -> None:
        self.state.pop(job_id, None)
        if job_id in self.started:
            self.took.append(self.clock() - self.started.pop(job_id))

    def line(self, live) -> str:
        pending = [self.state.get(j, ("PENDING", ""))[1] for j in live
                   if self.state.get(j, ("PENDING", ""))[0] == "PENDING"]
        running = len(live) - len(pending)
        done = self.total - len(live)
        why = sorted({r for r in pending if r and r != "None"})
        text = (f"slurm: {len(pending)} pending" + (f" ({', '.join(why)})" if why else "")
                + f", {running} running, {done} of {self.total} ended")
        if self.took and live:
            each = sum(self.took) / len(self.took)
            # the boots still to start run as many at once as run now
            left = each * -(-len(live) // max(1, running))
            text += f"; ETA ~{fmt_duration(left)}"
        return text

    def show(self, live) -> None:
        text = self.line(live)
        # the ETA alone moving is no news
        if text.split("; ETA")[0] != self.last.split("; ETA")[0]:
            log(f"{self.who}: {text}")
        self.last = text


class Slurm:
    """Each build a batch job, each boot one (timed) or a task of a job array
    (deterministic); polled with squeue, cancelled with scancel."""
    name = "slurm"

    def __init__(self, partition: str | None = None, account: str | None = None,
                 time_limit: str | None = None, poll_s: float = 2.0, who: str = "ab",
                 by: str = "--executor"):
        self.partition, self.account, self.time_limit = partition, account, time_limit
        self.who = who          # the command whose jobs these are, for its messages
        self.by = by            # what chose Slurm: --executor, or ENV (a default)
        self.poll_s = poll_s
        self.live: dict[str, int | None] = {}  # job id -> its boot's index (a build: None)
        self.builds: dict[str, tuple[str, Path, str]] = {}  # build job id -> (variant,
        #                                                     its log, its image's key)
        # image key -> the job that builds it, until it built it (a job that failed stays:
        # its boots say so)
        self.build_of: dict[str, str] = {}
        self.failed_builds: dict[str, str] = {}  # build job id -> what became of it

    def _sbatch(self, name: str, log_path: Path, command: list[str], cores: int | None,
                exclusive: bool, after: str | None = None, tasks: int = 0,
                stdin: str | None = None) -> list[str]:
        """sbatch of one job (`tasks`: an array of that many): `command` run from this
        checkout, as a local run of it (its own `ipclab` must not submit again), after job
        `after` succeeded; `stdin`, one line, its standard input, held in the job's script."""
        argv = ["sbatch", "--parsable", "--job-name", f"ipclab-{name}",
                "--output", str(log_path), "--chdir", str(REPO),
                "--export", f"ALL,{ENV}=local", "--ntasks", "1"]
        if tasks:
            argv += ["--array", f"0-{tasks - 1}"]
        if cores:
            argv += ["--cpus-per-task", str(cores)]
        if exclusive:
            argv.append("--exclusive")
        if after:
            argv += ["--dependency", f"afterok:{after}", "--kill-on-invalid-dep", "yes"]
        for opt, v in (("--partition", self.partition), ("--account", self.account),
                       ("--time", self.time_limit)):
            if v:
                argv += [opt, v]
        script = "exec " + shlex.join(command)
        if stdin is not None:
            script += f" <<'{TABLE_END}'\n{stdin}\n{TABLE_END}"
        return argv + ["--wrap", script]

    def sbatch_argv(self, b: SuiteBoot, o: BootOpts) -> list[str]:
        files = self.files(b)
        # A deterministic boot is one single-threaded QEMU: one core, as locally. A timed
        # one has the node to itself, as a local timed boot has the machine.
        cores = 1 if o.clock.deterministic else (o.cpus or vm.DEFAULT_CPUS)
        return self._sbatch(b.out.stem, files["log"], vm_run_argv(b, o, files["record"]),
                            cores, not o.clock.deterministic, self.build_of.get(b.meta["key"]))

    def build_argv(self, kern: variants.Variant, log_path: Path) -> list[str]:
        # A build is make -j of the whole node, as a local build has the machine.
        return self._sbatch(f"build-{variants.slug(kern.name)}", log_path,
                            [sys.executable, "-m", "ipclab", "kernel", "build",
                             *kern.build_args], None, True)

    def images(self, kerns: dict, clock: vm.Clock) -> dict:
        """Each side's image meta: found in the cache, or built by a job of its own, one per
        image. A deterministic run's boots wait for their build in Slurm's queue; a timed
        run waits here, and an image that did not build is an Error (exit 1)."""
        metas = {}
        for side, kern in kerns.items():
            meta, built = kernel.find(kern)
            if not built and meta["key"] not in self.build_of:
                self.submit_build(kern, meta["key"])
            # a dry run's plan (step_times) tells a build from a cached image so
            metas[side] = {**meta, "dry_run": True} if not built and proc.is_dry_run() \
                else meta
        if self.build_of and not clock.deterministic and not proc.is_dry_run():
            try:
                self.wait(None, Watch(len(self.builds), who=self.who))
            except BaseException:
                self.cancel()
                raise
            if self.failed_builds:
                raise Error(next(iter(self.failed_builds.values())), EXIT_FAILED)
            self.build_of.clear()
            metas = {side: kernel.built_meta(m) for side, m in metas.items()}
        return metas

    def submit_build(self, kern: variants.Variant, key: str) -> None:
        log_path = _cache_log(f"build-{variants.slug(kern.name)}")
        argv = self.build_argv(kern, log_path)
        if proc.would_run(argv):
            # what the boots' --dependency will name
            self.build_of[key] = f"<job id of the build of {kern.name}>"
            return
        log_path.parent.mkdir(parents=True, exist_ok=True)
        job_id = self._submit(argv)
        self.live[job_id] = None
        self.builds[job_id] = (kern.name, log_path, key)
        self.build_of[key] = job_id
        log(f"{self.who}: build of {kern.name}: slurm job {job_id} (log {log_path})")

    def run_command(self, name: str, argv: list[str], key: str, clock: vm.Clock, cpus: int,
                    out: Path | None = None) -> tuple[str, Path, Path]:
        """`python -m ipclab ARGV -o RECORD` of this checkout as one job, after the build job
        of image `key` when one is queued, its RECORD `out` (else its log's name with .json);
        waits for it: (its final state, its log, RECORD). Ctrl-C cancels it."""
        log_path = _cache_log(name)
        record = out.resolve() if out else log_path.with_suffix(".json")
        argv = self._sbatch(name, log_path, [sys.executable, "-m", "ipclab", *argv, "-o",
                                             str(record)],
                            1 if clock.deterministic else cpus, not clock.deterministic,
                            self.build_of.get(key))
        if proc.would_run(argv):
            return "", log_path, record
        log_path.parent.mkdir(parents=True, exist_ok=True)
        _clear_earlier(record)
        ended = {}
        try:
            job_id = self._submit(argv)
            self.live[job_id] = 0
            log(f"{self.who}: slurm job {job_id} (log {log_path})")
            self.wait(lambda index, job, state: ended.update(state=state),
                      Watch(len(self.live), who=self.who))
        except BaseException:
            self.cancel()
            raise
        return ended["state"], log_path, record

    def build_ended(self, job_id: str, state: str) -> None:
        name, log_path, key = self.builds[job_id]
        if state in ("COMPLETED", "ENDED"):
            log(f"{self.who}: build of {name} (slurm job {job_id}) ended")
            # in the cache now: a boot submitted later has nothing to wait for
            self.build_of.pop(key, None)
            return
        tail = last_lines(log_path, 1)
        why = f"the build of {name} (slurm job {job_id}) ended {state.lower()}" + \
            (f": {tail[:200]}" if tail else "") + f" (log {log_path})"
        self.failed_builds[job_id] = why
        log(f"{self.who}: {why}")

    @staticmethod
    def files(b: SuiteBoot) -> dict[str, Path]:
        # Beside the results, in a directory of their own: the results directory holds what
        # a local `ab` leaves, and only that.
        d = b.out.resolve().parent / "slurm"
        return {"log": d / f"{b.out.stem}.log", "record": d / f"{b.out.stem}.boot.json"}

    def run_boots(self, boots: list[SuiteBoot], o: BootOpts, here: Here) -> list[tuple]:
        if proc.is_dry_run():
            if o.clock.deterministic:
                self.submit_arrays(boots, o)
            else:
                for b in boots:
                    proc.would_run(self.sbatch_argv(b, o))
            return [(None, None)] * len(boots)
        done: dict[int, tuple] = {}
        watch = Watch(len(boots) + len(self.live), who=self.who)

        def ended(index, job_id, state):
            # as each job ends, so that its boot is reported when it happens
            done[index] = self.collect(boots[index], o, here, job_id, state)
        try:
            if o.clock.deterministic:
                self.submit_arrays(boots, o)
                self.wait(ended, watch)
            else:
                for i, b in enumerate(boots):
                    self.submit(b, o, i)
                    self.wait(ended, watch)
        except BaseException:
            self.cancel()
            raise
        return [done[i] for i in range(len(boots))]

    def submit(self, b: SuiteBoot, o: BootOpts, index: int) -> str:
        files = self.files(b)
        files["log"].parent.mkdir(parents=True, exist_ok=True)
        _clear_earlier(b.out, files["record"])
        job_id = self._submit(self.sbatch_argv(b, o))
        self.live[job_id] = index
        log(f"{self.who}: {b.label} ({b.meta['variant']}, {o.clock.mode}): slurm job {job_id}")
        return job_id

    def submit_arrays(self, boots: list[SuiteBoot], o: BootOpts) -> None:
        """Deterministic boots as job arrays: one for the boots of each build job they wait
        for (so that a failed build cancels only its own), one for those of cached images."""
        groups: dict[str | None, list[int]] = {}
        for i, b in enumerate(boots):
            groups.setdefault(self.build_of.get(b.meta["key"]), []).append(i)
        for after, indexes in groups.items():
            self.submit_array([(i, boots[i]) for i in indexes], o, after)

    def submit_array(self, group: list[tuple[int, SuiteBoot]], o: BootOpts,
                     after: str | None) -> None:
        d = self.files(group[0][1])["log"].parent
        tasks = [{"argv": vm_run_argv(b, o, self.files(b)["record"]),
                  "log": str(self.files(b)["log"])} for _, b in group]
        argv = self._sbatch(f"{group[0][1].out.parent.name}-boots", d / "array-%A_%a.log",
                            [sys.executable, "-m", "ipclab.lab.array_task"],
                            1, False, after, tasks=len(group), stdin=json.dumps(tasks))
        if proc.would_run(argv):
            return
        d.mkdir(parents=True, exist_ok=True)
        for _, b in group:
            _clear_earlier(b.out, self.files(b)["record"])
        array = self._submit(argv)
        for k, (i, b) in enumerate(group):
            self.live[f"{array}_{k}"] = i
            log(f"{self.who}: {b.label} ({b.meta['variant']}, {o.clock.mode}): slurm job"
                f" {array}_{k}")

    def _submit(self, argv: list[str]) -> str:
        r = self._run(argv)
        job_id = r.stdout.strip().split(";")[0]
        if r.returncode != 0 or not job_id.isdigit():
            raise Error(f"sbatch: {_first_line(r.stderr or r.stdout) or f'exit {r.returncode}'}")
        return job_id

    def wait(self, ended: Callable, watch: Watch) -> None:
        """Until every live job has ended, polling squeue: ended(index, job id, state) for
        each as it ends, and a progress line whenever what the jobs do changes. A job that
        Slurm holds for a reason no wait resolves (NEVER_STARTS) cancels the run."""
        errors = 0
        while self.live:
            states, err = self.states(list(self.live))
            if err:
                errors += 1
                if errors >= SQUEUE_RETRIES:
                    raise Error(f"squeue: {err}", EXIT_FAILED)
            else:
                errors = 0
                for job_id in list(self.live):
                    state, reason = states.get(job_id, ("ENDED", ""))
                    if state == "PENDING" and reason in NEVER_STARTS:
                        raise Error(f"slurm job {job_id} cannot start: Slurm holds it for "
                                    f"{reason} (the partition, account or --time asked for "
                                    "does not allow it)")
                    if state in DONE_STATES or state == "ENDED":
                        watch.ended(job_id)
                        index = self.live.pop(job_id)
                        if job_id in self.builds:
                            self.build_ended(job_id, state)
                        else:
                            ended(index, job_id, state)
                    else:
                        watch.saw(job_id, state, reason)
                watch.show(self.live)
            if self.live:
                time.sleep(self.poll_s)

    def states(self, ids: list[str]) -> tuple[dict[str, tuple[str, str]], str | None]:
        """{job id: (state, reason)} of the jobs squeue still knows; (_, error) when it
        failed."""
        # --array: one line per task of an array, a pending one too
        r = self._run(["squeue", "--noheader", "--array", "--states", "all", "--jobs",
                       ",".join(ids), "--format", "%i %T %r"])
        if r.returncode != 0:
            if "invalid job id" in r.stderr.lower():
                return {}, None         # all of them purged: ended
            return {}, _first_line(r.stderr) or f"exit {r.returncode}"
        out = {}
        for line in r.stdout.splitlines():
            parts = line.split(None, 2)
            if len(parts) >= 2:
                out[parts[0]] = (parts[1], parts[2].strip() if len(parts) > 2 else "")
        return out, None

    def cancel(self) -> None:
        """scancel the jobs submitted here that have not ended: by id, no others."""
        if not self.live:
            return
        ids = sorted(self.live, key=lambda j: [int(x) for x in j.split("_")])
        log(f"{self.who}: cancelling slurm job(s) {', '.join(ids)}")
        try:
            self._run(["scancel", *ids])
        except (OSError, subprocess.SubprocessError) as e:
            log(f"warning: scancel {' '.join(ids)}: {e}")
        self.live.clear()

    def collect(self, b: SuiteBoot, o: BootOpts, here: Here, job_id: str, state: str) -> tuple:
        """(results, boot) of an ended job, as a local boot returns them: the job's results
        file and boot record; a job that left none (cancelled, out of time, a node lost)
        is a failed boot whose one failed cell says which job and why."""
        files = self.files(b)
        boot = None
        try:
            safeio.check_readable(files["record"], "boot record")
            boot = vm.Boot.from_record(json.loads(files["record"].read_text()))
        except (Error, OSError, ValueError, KeyError):
            pass
        res = None
        if b.out.exists():
            try:
                res = results.load(b.out)
            except Error:
                res = None
        if boot is None:
            tail = last_lines(files["log"], 5)
            why = f"slurm job {job_id} {state.lower()} without a boot record"
            if tail:
                why += f" ({tail.splitlines()[-1][:200]})"
            build = self.failed_builds.get(self.build_of.get(b.meta["key"], ""))
            if build:
                why = f"slurm job {job_id} not booted: {build}"
            boot = vm.Boot(b.meta["variant"], b.meta.get("release"), o.accel, files["log"],
                           False, None, why, [], tail, {}, {})
        if res is None:
            if boot.ok:
                boot.ok, boot.reason = False, f"slurm job {job_id} {state.lower()}: no results"
            res = here.failed(b, boot, f"slurm-{job_id}")
            results.save(res, b.out)
        here.report(boot)
        return res, boot

    @staticmethod
    def _run(argv: list[str]) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=120)
        except FileNotFoundError:
            raise Error(f"{argv[0]} not found (Slurm's client commands)", EXIT_FAILED) from None
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, 1, "", f"{argv[0]}: no answer in 120 s")


def _cache_log(name: str) -> Path:
    """A new log of a job that no results folder holds (a build, a census), in the lab's
    cache, which the nodes share."""
    return cache_root() / "logs" / f"slurm-{name}-{proc.stamp()}.log"


def _clear_earlier(*paths: Path) -> None:
    """What an earlier run left at a job's paths (the same -o) must not pass for its own;
    Error (one line) for a path that is no regular file, which is never removed."""
    for path in paths:
        safeio.check_replaceable(path)
        path.unlink(missing_ok=True)


def _first_line(text: str) -> str:
    lines = [t for t in (text or "").strip().splitlines() if t.strip()]
    return lines[0][:300] if lines else ""


def last_lines(path: Path, n: int) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])
