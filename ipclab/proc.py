# SPDX-License-Identifier: MIT
"""Running things: one process-group watchdog, one atomic file write, one run stamp, and
the dry-run switch.

Every child (the engine, make, patch, vng with its QEMU) runs in a session of its own, so
that a timeout, a Ctrl-C or the end of a guest kills the whole tree it started, not only
the process we forked.
"""

import contextlib
import errno
import hashlib
import json
import os
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ipclab import EXIT_FAILED, Error, safeio
from ipclab.progress import log

# Process groups running now: the deterministic `ab` runs two guests from two threads, and an
# interrupt must not leave either behind.
_LIVE = set()
_LIVE_LOCK = threading.Lock()


@dataclass
class Finished:
    rc: object          # exit status, or None when the watchdog killed it
    out: str            # captured stdout ("" when it went to a file)
    err: str
    seconds: float

    @property
    def timed_out(self):
        return self.rc is None


def _kill_group(pid, sig=signal.SIGKILL):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def kill_all():
    """Kill every process group started here that is still running."""
    with _LIVE_LOCK:
        pids = list(_LIVE)
    for pid in pids:
        _kill_group(pid)


def run(argv, timeout, *, capture=False, logfile=None, cwd=None, env=None, poll=None,
        grace=15.0, kill_group_at_end=False):
    """Run argv in its own session under a watchdog; never leaves the group behind on a
    timeout or an exception.

    capture: return stdout and stderr as text. logfile: append stdout and stderr there.
    Otherwise the child's output goes where ours goes. poll(), if given, is called about
    5 times a second; once it returns True the work is done, and a child that has not
    exited `grace` seconds later is killed without that being a timeout (rc 0).
    kill_group_at_end: also kill the group after a normal exit (helpers a guest leaves).
    """
    if logfile is not None:
        Path(logfile).parent.mkdir(parents=True, exist_ok=True)
        out = open_append(logfile)
        stdout, stderr = out, subprocess.STDOUT
    elif capture:
        out, stdout, stderr = None, subprocess.PIPE, subprocess.PIPE
    else:
        out, stdout, stderr = None, None, None
    t0 = time.monotonic()
    try:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                    cwd=cwd, env=env, text=capture, start_new_session=True)
        except FileNotFoundError:
            raise Error(f"{argv[0]} not found (make lab-deps installs the lab's tools)",
                        EXIT_FAILED) from None
        with _LIVE_LOCK:
            _LIVE.add(proc.pid)
        rc, o, e, done_at = None, "", "", None
        try:
            while True:
                step = 0.2 if poll else max(0.0, timeout - (time.monotonic() - t0))
                try:
                    if capture:
                        o, e = proc.communicate(timeout=step)
                    else:
                        proc.wait(timeout=step)
                    rc = proc.returncode
                    break
                except subprocess.TimeoutExpired:
                    now = time.monotonic()
                    if poll and done_at is None and poll():
                        done_at = now
                    if done_at is not None and now - done_at > grace:
                        rc = 0
                        break
                    if now - t0 >= timeout:
                        break
        except BaseException:
            # Ctrl-C: SIGTERM first, so that the engine can put back what it changed
            # (pipe-max-size, msg_max) before it goes.
            _kill_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            _kill_group(proc.pid)
            proc.wait()
            raise
        finally:
            if rc is None or kill_group_at_end or done_at is not None:
                _kill_group(proc.pid)
            if capture and proc.returncode is None:
                o2, e2 = proc.communicate()
                o, e = o or o2, e or e2
            proc.wait()
            with _LIVE_LOCK:
                _LIVE.discard(proc.pid)
    finally:
        if out is not None:
            out.close()
    return Finished(rc, o or "", e or "", time.monotonic() - t0)


def write_text_atomic(path, text):
    """A file written whole or not at all (temp file in the same directory, then rename).
    Error when something other than a regular file is at `path` (safeio); an OSError names
    `path`, never the temp file the user did not ask for.  `text` may be bytes (a plot)."""
    path = Path(path)
    safeio.check_replaceable(path)
    # A name of this process and thread (two guests' records may be written at once), made
    # with the usual permissions, not mkstemp's 0600; the name is cut so that a long but
    # valid `path` still leaves room for the temp file's.  O_EXCL after the unlink: a link
    # planted at the temp name is never followed.
    tmp = path.with_name(f".{path.name[:100]}.{os.getpid()}-{threading.get_ident()}.tmp")
    data = text if isinstance(text, bytes) else text.encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
        with open(fd, "wb") as f:
            f.write(data)
        # Checked again: the first check was before a write that may have taken a while.
        safeio.check_replaceable(path)
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.errno is not None:
            raise OSError(e.errno, e.strerror, str(path)) from None
        raise


def open_append(path):
    """`path` opened to append (bytes), created when missing: a log, a lock, a journal of
    lines. A link at `path` is not followed (O_NOFOLLOW) and anything but a regular file is
    refused (safeio), so a FIFO never blocks the run and a device is never written."""
    path = Path(path)
    safeio.check_replaceable(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW |
                     os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError as e:
        if e.errno == errno.ELOOP:      # a link planted after the check
            safeio.check_replaceable(path)
        raise OSError(e.errno, e.strerror, str(path)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        safeio.check_replaceable(path)
        raise Error(f"{path}: is not a regular file; it is only appended to as one")
    os.set_blocking(fd, True)
    return open(fd, "ab")


def append_text(path, text):
    """`text` added at the end of `path` in one write (open_append's rules)."""
    with open_append(path) as f:
        f.write(text.encode())


def write_json_atomic(path, obj):
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def sha256_file(path):
    """A file's content hash (hex), read in 1 MiB blocks: an engine, a patch, a kernel image."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def stamp():
    """The one run stamp, for file and directory names: UTC, sortable."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# ---- dry runs ---------------------------------------------------------------------------

_DRY_RUN = False


@contextlib.contextmanager
def dry_run(on=True):
    """While on, would_run() says what would run instead of letting it run."""
    global _DRY_RUN
    old, _DRY_RUN = _DRY_RUN, bool(on)
    try:
        yield
    finally:
        _DRY_RUN = old


def is_dry_run():
    return _DRY_RUN


def would_run(what):
    """True (after saying so) when this is a dry run and `what` must not happen."""
    if not _DRY_RUN:
        return False
    log("would run: " + (" ".join(map(str, what)) if isinstance(what, (list, tuple)) else what))
    return True
