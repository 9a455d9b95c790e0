# SPDX-License-Identifier: MIT
"""Kernel lab, the tree a variant is built from: a base's tarball extracted once, the lab's
clone of a user's git tree, or a user's own tree; and switching it between variants' patch
series.

Layout under the cache root, per base:

    src/BASE/linux-<version>/   the base's tree, extracted once from its tarball
    src/BASE/state.json         which series is applied, which files it touched
    src/BASE/pristine/<path>    pristine copy of every file a patch ever touched
    src/BASE/build/<configs>/   one O= build dir per set of config fragments

A variant switch restores only the files the old series touched and applies the new series;
every other file keeps its mtime, so make rebuilds only what the patches change.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from ipclab import EXIT_FAILED, Error, proc
from ipclab.progress import log

from . import bases, gittree
from .cache import cache_root, sha256_bytes, sha256_file
from .variants import Variant

PATCH_TIMEOUT_S = 120


@dataclasses.dataclass
class Source:
    tree: Path          # the kernel tree that gets patched and built
    work: Path          # state, pristine copies and build dirs for that tree
    ident: str          # goes into the image key
    version: str
    managed: bool       # True when the lab extracted it (it may re-extract)
    base: bases.Base | None = None          # the base whose tarball it is
    tarball: bases.Tarball | None = None

    @property
    def state_path(self) -> Path:
        return self.work / "state.json"

    def build_dir(self, variant: Variant) -> Path:
        return self.work / "build" / variant.config_name


def tree_version(tree: Path) -> str:
    fields = {}
    with (tree / "Makefile").open() as f:
        for line in f:
            m = re.match(r"^(VERSION|PATCHLEVEL|SUBLEVEL|EXTRAVERSION)\s*=\s*(\S*)", line)
            if m:
                fields[m.group(1)] = m.group(2)
            if len(fields) == 4:
                break
    try:
        return f"{fields['VERSION']}.{fields['PATCHLEVEL']}.{fields['SUBLEVEL']}{fields.get('EXTRAVERSION', '')}"
    except KeyError:
        raise Error(f"{tree}/Makefile: no kernel version found", EXIT_FAILED) from None


def extract_tarball(tarball: bases.Tarball, src: Path, create: bool = True) -> Path:
    """Extract once into src/linux-<version>; returns the tree (a name that does not exist
    when there is none yet and `create` is off, or in a dry run). A different tarball (a
    user's, given with the base's environment variable) replaces the tree and everything
    built from it."""
    trees = [p for p in src.glob("linux-*") if p.is_dir() and (p / "Makefile").is_file()]
    state, marker = src / "state.json", src / "tarball.sha256"
    same = marker.is_file() and marker.read_text().strip() == tarball.sha256
    if trees and state.is_file() and same:
        return trees[0]
    if not create or proc.would_run(["tar", "-xJf", tarball.path, "-C", src]):
        return src / "linux-?"
    # A tree without state.json is a half-finished extraction or unknown edits; one from
    # another tarball leaves nothing worth keeping either.
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=src, prefix=".extract-"))
    log(f"extracting {tarball.path} (once per machine)")
    run(["tar", "-xJf", str(tarball.path), "-C", str(tmp)], timeout=1800)
    tops = [p for p in tmp.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise Error(f"{tarball.path}: expected one top-level directory", EXIT_FAILED)
    tree = src / f"linux-{tree_version(tops[0])}"
    os.rename(tops[0], tree)
    tmp.rmdir()
    proc.write_json_atomic(state, CLEAN_STATE)
    proc.write_text_atomic(marker, tarball.sha256 + "\n")
    return tree


def run(argv: list[str], timeout: float, cwd: Path | None = None,
        logfile: Path | None = None) -> None:
    """One build step under proc's watchdog; Error (exit 1) if it fails or times out."""
    if proc.would_run(argv):
        return
    done = proc.run(argv, timeout, cwd=cwd, logfile=logfile)
    where = f" (log: {logfile})" if logfile else ""
    if done.timed_out:
        raise Error(f"timed out after {timeout:.0f} s: {' '.join(argv[:4])} ...{where}",
                    EXIT_FAILED)
    if done.rc != 0:
        raise Error(f"command failed with exit code {done.rc}: {' '.join(argv[:6])}{where}",
                    EXIT_FAILED)


CLEAN_STATE = {"applied": [], "touched": {}, "dirty": False}


def open_source(tree_arg: str | None, create: bool = True,
                variant: Variant | None = None) -> Source:
    """The tree to build from: the lab's clone of a git tree for a variant that is a commit
    there; --tree; else the variant's base's tarball (mainline's without a variant),
    extracted once. With `create` off (and in a dry run) nothing is extracted or written."""
    cache = cache_root()
    if variant is not None and variant.commit:
        work = cache / "git" / gittree.repo_key(variant.tree)
        clone = gittree.lab_clone(variant.tree, work) if create else work / "src"
        return Source(clone, work, f"git:{variant.commit}",
                      gittree.version_at(variant.tree, variant.commit), managed=True)
    if tree_arg:
        tree = Path(tree_arg).resolve()
        if not (tree / "Makefile").is_file() or not (tree / "kernel").is_dir():
            raise Error(f"--tree {tree_arg}: not a kernel source tree")
        if (tree / ".config").exists() or (tree / "include" / "config").is_dir():
            # Kbuild refuses O= builds from a tree that was built in place.
            raise Error(f"--tree {tree_arg}: it has an in-tree build; run `make mrproper` "
                        "there or pass a clean tree")
        version = tree_version(tree)
        work = cache / "trees" / sha256_bytes(str(tree).encode())[:16]
        ident = f"tree:{tree}:{version}:{git_head(tree)}"
        if not (work / "state.json").is_file() and create and not proc.is_dry_run():
            # A user tree is taken as the pristine state the first time we see it.
            proc.write_json_atomic(work / "state.json", CLEAN_STATE)
        return Source(tree, work, ident, version, managed=False)
    base = bases.load(variant.base if variant and variant.base else bases.DEFAULT_BASE)
    tarball = bases.require_tarball(base)
    src = cache / "src" / base.name
    tree = extract_tarball(tarball, src, create)
    version = tree_version(tree) if tree.is_dir() else "?"
    if tree.is_dir() and tarball.origin == "package" and version != base.release:
        raise Error(f"{tarball.path} holds Linux {version}, not {base.release} as "
                    f"kernel/bases/{base.name} says", EXIT_FAILED)
    ident = f"tarball:{tarball.path.name}:{tarball.sha256}"
    return Source(tree, src, ident, version, managed=True, base=base, tarball=tarball)


def git_head(tree: Path) -> str:
    if not (tree / ".git").exists():
        return "nogit"
    try:
        done = proc.run(["git", "-C", str(tree), "rev-parse", "HEAD"], 30, capture=True)
    except Error:           # no git
        return "nogit"
    return (done.rc == 0 and done.out.strip()) or "nogit"


# --------------------------------------------------------------------------- patches

PATCH_FILE_RE = re.compile(r"^(---|\+\+\+) (\S+)")


def patch_files(patch: Path) -> list[tuple[str, str]]:
    """(path, kind) for every file a -p1 patch touches; kind is modify, create or delete."""
    out: list[tuple[str, str]] = []
    old = None
    for line in patch.read_text(errors="replace").splitlines():
        m = PATCH_FILE_RE.match(line)
        if not m:
            continue
        name = m.group(2)
        if m.group(1) == "---":
            old = name
            continue
        if old is None:
            continue
        if name == "/dev/null":
            out.append((strip1(old), "delete"))
        elif old == "/dev/null":
            out.append((strip1(name), "create"))
        else:
            out.append((strip1(name), "modify"))
        old = None
    return out


def strip1(name: str) -> str:
    parts = name.split("/", 1)
    if len(parts) != 2 or ".." in Path(parts[1]).parts or parts[1].startswith("/"):
        raise Error(f"unsafe path in patch: {name}", EXIT_FAILED)
    return parts[1]


def explain_patch_failure(patch: Path, output: str) -> str:
    """Name the patch, the file and the hunk that failed, from GNU patch's output."""
    current = "?"
    failures = []
    for line in output.splitlines():
        m = re.match(r"^(?:patching|checking) file (.+)$", line)
        if m:
            current = m.group(1).strip("'")
        m = re.match(r"^Hunk #(\d+) FAILED at (\d+)", line)
        if m:
            failures.append(f"{current} hunk #{m.group(1)} (at line {m.group(2)})")
        if "can't find file to patch" in line:
            failures.append("a file it patches is missing from the tree")
        if "Reversed (or previously applied) patch detected" in line:
            failures.append(f"{current}: already applied (reversed patch detected)")
    detail = "; ".join(failures) if failures else (output.strip().splitlines() or ["?"])[-1]
    return f"patch {patch.name} does not apply: {detail}"


def patch_argv(tree: Path, patch: Path, dry: bool) -> list[str]:
    argv = ["patch", "-d", str(tree), "-p1", "--forward", "--batch", "--no-backup-if-mismatch",
            "-r", "-", "-i", str(patch)]
    if dry:
        argv.insert(1, "--dry-run")
    return argv


def apply_patch(tree: Path, patch: Path) -> None:
    """Check that the patch applies, then apply it; Error naming the failed hunk if not."""
    for dry in (True, False):
        done = proc.run(patch_argv(tree, patch, dry), PATCH_TIMEOUT_S, capture=True)
        if done.timed_out:
            raise Error(f"patch {patch.name}: timed out after {PATCH_TIMEOUT_S} s", EXIT_FAILED)
        if done.rc != 0:
            raise Error(explain_patch_failure(patch, done.out + done.err), EXIT_FAILED)


# --------------------------------------------------------------------------- tree switching


def load_state(src: Source) -> dict:
    try:
        return json.loads(src.state_path.read_text())
    except (OSError, ValueError):
        return dict(CLEAN_STATE)


def snapshot(tree: Path, paths) -> dict[str, tuple[str, int] | None]:
    snap: dict[str, tuple[str, int] | None] = {}
    for p in paths:
        f = tree / p
        snap[p] = (sha256_file(f), f.stat().st_mtime_ns) if f.is_file() else None
    return snap


def restore_pristine(src: Source, touched: dict[str, str]) -> None:
    pristine = src.work / "pristine"
    for rel, kind in touched.items():
        f = src.tree / rel
        if kind == "create":
            with contextlib.suppress(FileNotFoundError):
                f.unlink()
            continue
        # copyfile, not copy2: the restored file must look newer than objects built from
        # the patched one, or make would keep them.
        f.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pristine / rel, f)


def applied_ids(variant: Variant) -> list[dict]:
    return [{"name": p.name, "sha256": sha256_file(p)} for p in variant.patch_paths()]


def switch_tree(src: Source, variant: Variant) -> list[str]:
    """Make the tree hold exactly `variant`'s series. Returns what it did, for reports."""
    state = load_state(src)
    want = applied_ids(variant)
    if not state.get("dirty") and state.get("applied") == want:
        return []
    if proc.is_dry_run():
        for p in variant.patch_paths():
            proc.would_run(patch_argv(src.tree, p, False))
        return []
    old_touched: dict[str, str] = dict(state.get("touched", {}))
    before = snapshot(src.tree, old_touched)
    # Mark dirty first: if we die half way, the next run restores everything we track.
    state["dirty"] = True
    proc.write_json_atomic(src.state_path, state)
    restore_pristine(src, old_touched)
    touched: dict[str, str] = {}
    pristine = src.work / "pristine"
    try:
        for patch in variant.patch_paths():
            for rel, kind in patch_files(patch):
                if rel in touched:
                    continue
                f = src.tree / rel
                if kind == "create" or not f.exists():
                    touched[rel] = "create"
                    continue
                touched[rel] = "modify"
                keep = pristine / rel
                if not keep.exists():
                    keep.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(f, keep)
            # Record what we may have touched before touching it.
            state["touched"] = {**old_touched, **touched}
            proc.write_json_atomic(src.state_path, state)
            apply_patch(src.tree, patch)
    except BaseException:
        restore_pristine(src, {**old_touched, **touched})
        proc.write_json_atomic(src.state_path, CLEAN_STATE)
        raise
    # A file whose content ends up as it was before the switch gets its old mtime back, so
    # make rebuilds it exactly as it would an untouched file: not at all.
    kept = 0
    for rel, old in before.items():
        f = src.tree / rel
        if old and f.is_file() and sha256_file(f) == old[0]:
            os.utime(f, ns=(f.stat().st_atime_ns, old[1]))
            kept += 1
    proc.write_json_atomic(src.state_path, {"applied": want, "touched": touched, "dirty": False})
    changed = sorted(set(old_touched) | set(touched))
    return [f"{len(variant.patches)} patches applied; {len(changed) - kept} files changed "
            f"since the previous variant"]

