# SPDX-License-Identifier: MIT
"""Paths the user hands us: what may be written over, what may be read as a file, and
which names may become part of a path.

Three rules, each a reason for a refusal rather than a surprise:
- a save replaces only a regular file or creates a new one: renaming a temp file over
  /dev/null, a FIFO or a symbolic link would destroy what was there;
- a results file is read only when it is a regular file: opening a FIFO blocks forever;
- a name read from a file (a run's id) becomes a folder name only when it is one name,
  never a path that climbs out of the folder it is put in.
"""

import gzip
import os
import stat
from pathlib import Path

from ipclab import Error


def _kind(mode):
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_replaceable(path):
    """Error unless `path` is free or a regular file (not followed if it is a link)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise Error(f"{path}: cannot write: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise Error(f"{path}: is {_kind(st.st_mode)}; a save only replaces a regular file:"
                    " give another path")


def check_readable(path, what="results file"):
    """Error unless `path` is a regular file (after links): a FIFO or a device would block
    or never end. A missing path is left to the reader, which says so in its own words."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as e:
        raise Error(f"{path}: cannot read: {e.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise Error(f"{path}: is a directory, not a {what}")
    if not stat.S_ISREG(st.st_mode):
        raise Error(f"{path}: is {_kind(st.st_mode)}, not a {what}")


def open_text(path):
    """`path` opened for reading as text; FILE.gz is read through gzip, as gzip wrote it."""
    return gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)


def plain_name(text):
    """True when `text` is one file name: no separator, not '.' or '..', no NUL."""
    return isinstance(text, str) and text not in ("", ".", "..") and "/" not in text and \
        "\\" not in text and "\0" not in text and Path(text).name == text
