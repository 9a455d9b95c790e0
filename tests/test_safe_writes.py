# SPDX-License-Identifier: MIT
"""Issue 42, case 3: every file ipclab writes goes through the one safe write of
ipclab/proc.py (write_text_atomic: whole or not at all, never through a link, never over a
device or a FIFO; open_append and append_text for logs, locks and journals: never through a
link, only to a regular file). This test reads ipclab/ and finds every other way to write a
file; each that is left is on the list below with its reason."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "ipclab"

# (file, function): why it may write directly.
ALLOWED = {
    ("proc.py", "write_text_atomic"): "the safe write itself: O_EXCL|O_NOFOLLOW temp, rename",
    ("proc.py", "open_append"): "the safe append itself: O_NOFOLLOW, regular files only",
    ("upstream.py", "_restore"): "puts back a kernel setting in /proc/sys, which is written in"
                                 " place (a rename cannot replace it)",
    ("lab/kernel.py", "_file_image"): "a kernel image of tens of MB, copied to a temp name in"
                                      " the lab's own cache folder, then renamed into place",
    ("lab/kernel.py", "prebuilt"): "the same, for a prebuilt (distribution's) kernel image",
    ("lab/source.py", "restore_pristine"): "puts back a file of the lab's own kernel tree from"
                                           " its pristine copy (make must see it as newer)",
    ("lab/source.py", "switch_tree"): "keeps a pristine copy of a kernel tree's file in the"
                                      " lab's own state folder, before a patch touches it",
    ("upstream.py", "stage"): "copies a program built here, its mode bits kept, into the"
                              " shared folder the lab made for one guest's boot",
}

WRITE_METHODS = {"write_text", "write_bytes", "savefig"}
COPIES = {"copy", "copy2", "copyfile", "copytree", "move"}


def _mode(call):
    """The mode of an open() call: its string, or None when it is not a constant."""
    args = call.args[1:2] or [k.value for k in call.keywords if k.arg == "mode"]
    if not args:
        return "r"
    return args[0].value if isinstance(args[0], ast.Constant) else None


def _writes(tree):
    """[(function, line, what)] of the direct writes in one module."""
    out = []

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                else func
            if isinstance(child, ast.Call):
                f = child.func
                what = None
                if isinstance(f, ast.Attribute) and f.attr in WRITE_METHODS:
                    # A figure rendered into memory is no file.
                    if not (f.attr == "savefig" and child.args and
                            isinstance(child.args[0], ast.Name) and child.args[0].id == "buf"):
                        what = f.attr
                elif isinstance(f, ast.Name) and f.id == "open":
                    mode = _mode(child)
                    if mode is None or any(c in mode for c in "wax+"):
                        what = f"open(..., {mode!r})"
                elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                        ((f.value.id == "os" and f.attr == "open") or
                         (f.value.id == "shutil" and f.attr in COPIES)):
                    what = f"{f.value.id}.{f.attr}"
                if what:
                    out.append((func, child.lineno, what))
            visit(child, name)

    visit(tree, None)
    return out


def test_every_write_goes_through_the_safe_write():
    found, used = [], set()
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        for func, line, what in _writes(ast.parse(path.read_text(), str(path))):
            if (rel, func) in ALLOWED:
                used.add((rel, func))
            else:
                found.append(f"ipclab/{rel}:{line} in {func}(): {what}")
    assert not found, "direct writes outside ipclab/proc.py's safe write:\n" + "\n".join(found)
    assert used == set(ALLOWED), f"allowed but no longer there: {set(ALLOWED) - used}"


def test_the_check_finds_a_direct_write():
    src = ("def f(p):\n    p.write_text('x')\n    open(p, 'a')\n    open(p)\n"
           "    import os, shutil\n    os.open(p, 1)\n    shutil.copyfile(p, p)\n")
    assert [w[2] for w in _writes(ast.parse(src))] == \
        ["write_text", "open(..., 'a')", "os.open", "shutil.copyfile"]


def test_an_append_follows_no_link_and_writes_only_a_regular_file(tmp_path):
    """The bisect log's lines, a run's lock, a build's log: a link at the path is refused
    and its target untouched, a FIFO is refused rather than blocked on."""
    import os

    import pytest

    from ipclab import Error, proc
    from ipclab.lab.bisect import BisectLog, Measurement
    target = tmp_path / "precious"
    target.write_text("keep\n")
    link = tmp_path / "bisect.jsonl"
    link.symlink_to(target)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (link, fifo):
        with pytest.raises(Error, match="symbolic link|FIFO"):
            BisectLog(path).add(Measurement("abc"))
        with pytest.raises(Error):
            proc.open_append(path)
    assert target.read_text() == "keep\n"
    log = tmp_path / "log"
    proc.append_text(log, "a\n")
    proc.append_text(log, "b\n")
    assert log.read_text() == "a\nb\n"
