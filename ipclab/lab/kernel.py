# SPDX-License-Identifier: MIT
"""Kernel lab, build side: variants, patch series, one shared tree, a keyed image cache.

Layout under the cache root (default /var/cache/ipclab, env IPCLAB_CACHE), outside the repo so
that a fresh clone on the same machine reuses it:

    src/linux-<version>/       the one source tree (Debian tarball, extracted once)
    src/state.json             which series is applied, which files it touched
    src/pristine/<path>        pristine copy of every file a patch ever touched
    src/build/<configs>/       one O= build dir per set of config fragments
    images/<key>/bzImage       a built kernel; key = hash(source, fragments, patch contents)
    lock                       flock: one tree mutation/build at a time

A variant switch restores only the files the old series touched and applies the new series;
every other file keeps its mtime, so make rebuilds only what the patches change.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Iterator

from ipclab import EXIT_FAILED, ROOT, Error, proc
from ipclab.progress import log

from . import gittree, image

KERNEL_DIR = ROOT / "kernel"
DEFAULT_TARBALL = Path("/usr/src/linux-source-6.12.tar.xz")
# Bumped when the way an image is produced changes, so stale images are not reused.
RECIPE = "ipclab-kernel/1"
BASE_FRAGMENT = "lab.config"
BUILD_TIMEOUT_S = 3600
PATCH_TIMEOUT_S = 120


def cache_root() -> Path:
    return Path(os.environ.get("IPCLAB_CACHE", "/var/cache/ipclab"))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------- variants


@dataclasses.dataclass
class Variant:
    """What to build: a series of the lab's, or a commit of a user's git tree; then patches
    from outside the repository; with the lab's config fragments or the user's own config."""
    name: str
    patches: list[str]          # file names in kernel/patches, in order
    fragments: list[str]        # file names in kernel/config, in merge order
    extra: list[Path] = dataclasses.field(default_factory=list)  # the user's, after the series
    config: Path | None = None  # the user's own .config instead of tinyconfig + fragments
    tree: Path | None = None    # a user's git tree, whose `commit` is built
    commit: str | None = None
    describe: str | None = None

    def patch_paths(self) -> list[Path]:
        return [KERNEL_DIR / "patches" / p for p in self.patches] + list(self.extra)

    def fragment_paths(self) -> list[Path]:
        return [] if self.config else [KERNEL_DIR / "config" / c for c in self.fragments]

    @property
    def config_name(self) -> str:
        # Variants with the same config share a build dir; patches and commits only move
        # objects.
        if self.config:
            return f"own-{sha256_file(self.config)[:12]}"
        return "+".join(Path(f).stem for f in self.fragments)


def slug(name: str) -> str:
    """A variant's name as a piece of a file name (refs have slashes, patches paths)."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", name)[:80] or "_"


VARIANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# VARIANT+OVERLAY...: a variant built with more config (and optionally a lab patch) on top.
OVERLAID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\+[A-Za-z0-9][A-Za-z0-9._-]*)+$")


def list_variants() -> list[str]:
    d = KERNEL_DIR / "series"
    if not d.is_dir():
        return []
    return sorted(p.name for p in d.iterdir()
                  if p.is_file() and VARIANT_RE.match(p.name) and not p.name.endswith("~"))


def load_variant(name: str) -> Variant:
    if OVERLAID_RE.match(name):
        return load_overlaid(name)
    if not VARIANT_RE.match(name):
        raise Error(f"bad variant name {name!r}")
    path = KERNEL_DIR / "series" / name
    if not path.is_file():
        known = ", ".join(list_variants()) or "none"
        raise Error(f"unknown variant {name!r} (known: {known})")
    patches = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if "/" in line or not (KERNEL_DIR / "patches" / line).is_file():
            raise Error(f"kernel/series/{name}:{lineno}: no patch {line!r} in kernel/patches",
                        EXIT_FAILED)
        patches.append(line)
    # Convention instead of syntax, so series files stay plain patch lists: every variant gets
    # lab.config, plus kernel/config/<variant>.config when it exists (e.g. debug.config).
    fragments = [BASE_FRAGMENT]
    if name != "lab" and (KERNEL_DIR / "config" / f"{name}.config").is_file():
        fragments.append(f"{name}.config")
    if not (KERNEL_DIR / "config" / BASE_FRAGMENT).is_file():
        raise Error(f"missing kernel/config/{BASE_FRAGMENT}", EXIT_FAILED)
    return Variant(name, patches, fragments)


# --------------------------------------------------------------------------- kernels from outside


def resolve(spec: str, tree: str | None = None, patches=(), config: str | None = None) -> Variant:
    """What `kernel build`, `vm run` and `ab` are asked to build, checked before anything is
    built: NAME[+PATCH...], where NAME is a variant of kernel/series or, with --tree of a git
    tree, a ref there; PATCH files (or mboxes, one commit per mail) and `patches` go on top,
    in order; `config` is the user's own .config. Error (exit 2) for what does not exist."""
    git_tree = Path(tree).resolve() if tree else None
    if git_tree is not None and not gittree.is_git_tree(git_tree):
        git_tree = None
    name, extra = spec, []
    if "+" in spec and not (git_tree and _is_ref(git_tree, spec)):
        name, *extra = spec.split("+")
        if not name or not all(extra):
            raise Error(f"{spec!r}: want NAME+PATCH[+PATCH...] or NAME+OVERLAY")
    # A part naming kernel/config/PART.config is an overlay (load_overlaid), not a patch.
    overlays = [p for p in extra if is_overlay(p)]
    if overlays and git_tree is not None:
        raise Error(f"{spec!r}: overlays ({', '.join(overlays)}) apply to the lab's variants,"
                    " not to a git tree's refs")
    files = [patch_file(p) for p in [*extra, *patches] if p not in overlays]
    own = user_config(config) if config else None
    label = "+".join([name, *overlays, *(f.name for f in files)])
    if git_tree is not None:
        commit = gittree.resolve(git_tree, name)
        v = Variant(label, [], [BASE_FRAGMENT], tree=git_tree, commit=commit,
                    describe=gittree.describe(git_tree, commit))
    else:
        v = load_variant("+".join([name, *overlays]))
        v.name = label
    v.extra = split_mboxes(files)
    v.config = own
    return v


def is_overlay(part: str) -> bool:
    return VARIANT_RE.match(part) is not None and part != "lab" and \
        (KERNEL_DIR / "config" / f"{part}.config").is_file()


def _is_ref(tree: Path, name: str) -> bool:
    try:
        gittree.resolve(tree, name)
    except Error:
        return False
    return True


def patch_file(given: str) -> Path:
    """A patch named on the command line: a path, or a file of kernel/patches."""
    for p in (Path(given), KERNEL_DIR / "patches" / given):
        if p.is_file():
            return p.resolve()
    raise Error(f"no patch file {given!r}")


def user_config(given: str) -> Path:
    """--config FILE: a kernel .config with what the suites need, or Error (exit 2)."""
    path = Path(given)
    if not path.is_file():
        raise Error(f"--config {given}: no such file")
    text = path.read_text(errors="replace")
    if "CONFIG_" not in text:
        raise Error(f"--config {given}: not a kernel config (no CONFIG_ lines)")
    # The lab builds no modules: what the suites need must be built in.
    missing = image.missing_options(text, modules=False)
    if missing:
        raise Error(f"--config {given} lacks what the suites need: {', '.join(missing)}")
    return path.resolve()


MAIL_START = re.compile(r"^From \S+ +[A-Z][a-z]{2} [A-Z][a-z]{2} +\d+ ", re.M)


def split_mboxes(files: list[Path]) -> list[Path]:
    """Every patch file as itself, except an mbox of several mails: one file per mail that
    carries a diff (a cover letter carries none), named after its subject, in the cache
    (content-addressed), so that a failure names the mail."""
    out: list[Path] = []
    for f in files:
        text = f.read_text(errors="replace")
        starts = [m.start() for m in MAIL_START.finditer(text)]
        if len(starts) < 2:
            out.append(f)
            continue
        d = cache_root() / "patches" / sha256_bytes(text.encode())[:16]
        d.mkdir(parents=True, exist_ok=True)
        for i, (a, b) in enumerate(zip(starts, starts[1:] + [len(text)]), 1):
            mail = text[a:b]
            if not re.search(r"^\+\+\+ ", mail, re.M):
                continue
            m = re.search(r"^Subject: *(?:\[[^]]*\] *)?(.*)$", mail, re.M)
            what = re.sub(r"[^A-Za-z0-9]+", "-", m.group(1) if m else "").strip("-")[:48]
            part = d / f"{f.stem}-{i:02d}-{what or 'mail'}.patch"
            if not part.exists():
                proc.write_text_atomic(part, mail)
            out.append(part)
    return out


def load_overlaid(name: str) -> Variant:
    """VARIANT+O1+O2: VARIANT's patches and fragments, then for each overlay O its fragment
    kernel/config/O.config and, when it exists, kernel/patches/lab-O.patch after the series.
    So one measurement configuration (counters, lock statistics, debug checks) applies to
    any variant without a series file per pair."""
    base, *overlays = name.split("+")
    v = load_variant(base)
    patches, fragments = list(v.patches), list(v.fragments)
    for o in overlays:
        frag = f"{o}.config"
        if o == "lab" or not (KERNEL_DIR / "config" / frag).is_file():
            known = ", ".join(sorted(p.stem for p in (KERNEL_DIR / "config").glob("*.config")
                                     if p.name != BASE_FRAGMENT)) or "none"
            raise Error(f"variant {name!r}: no overlay {o!r} (kernel/config/{o}.config; "
                        f"known: {known})")
        if frag not in fragments:
            fragments.append(frag)
        lab_patch = f"lab-{o}.patch"
        if (KERNEL_DIR / "patches" / lab_patch).is_file() and lab_patch not in patches:
            patches.append(lab_patch)
    return Variant(name, patches, fragments)


# --------------------------------------------------------------------------- source tree


@dataclasses.dataclass
class Source:
    tree: Path          # the kernel tree that gets patched and built
    work: Path          # state, pristine copies and build dirs for that tree
    ident: str          # goes into the image key
    version: str
    managed: bool       # True when the lab extracted it (it may re-extract)

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


def tarball_id(tarball: Path, cache: Path) -> str:
    # Hashing 150 MB costs a second; remember it per (path, size, mtime).
    st = tarball.stat()
    memo = cache / "src" / "tarball.json"
    tag = f"{tarball.resolve()}:{st.st_size}:{st.st_mtime_ns}"
    try:
        data = json.loads(memo.read_text())
        if data.get("tag") == tag:
            return data["sha256"]
    except (OSError, ValueError, KeyError):
        pass
    digest = sha256_file(tarball)
    proc.write_json_atomic(memo, {"tag": tag, "sha256": digest})
    return digest


def extract_tarball(tarball: Path, src: Path, create: bool = True) -> Path:
    """Extract once into src/linux-<version>; returns the tree (a name that does not exist
    when there is none yet and `create` is off, or in a dry run)."""
    trees = [p for p in src.glob("linux-*") if p.is_dir() and (p / "Makefile").is_file()]
    state = src / "state.json"
    if trees and state.is_file():
        return trees[0]
    if not create or proc.would_run(["tar", "-xJf", tarball, "-C", src]):
        return src / "linux-?"
    for t in trees:
        # A tree without state.json is a half-finished extraction or unknown edits.
        shutil.rmtree(t)
    src.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=src, prefix=".extract-"))
    log(f"extracting {tarball} (once per machine)")
    run(["tar", "-xJf", str(tarball), "-C", str(tmp)], timeout=1800)
    tops = [p for p in tmp.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise Error(f"{tarball}: expected one top-level directory", EXIT_FAILED)
    tree = src / f"linux-{tree_version(tops[0])}"
    os.rename(tops[0], tree)
    tmp.rmdir()
    proc.write_json_atomic(state, CLEAN_STATE)
    return tree


CLEAN_STATE = {"applied": [], "touched": {}, "dirty": False}


def open_source(tree_arg: str | None, create: bool = True,
                variant: Variant | None = None) -> Source:
    """The tree to build from: the lab's clone of a git tree for a variant that is a commit
    there; --tree; else the Debian tarball's, extracted once. With `create` off (and in a
    dry run) nothing is extracted or written."""
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
    tarball = Path(os.environ.get("IPCLAB_KERNEL_TARBALL", DEFAULT_TARBALL))
    if not tarball.is_file():
        raise Error(f"{tarball} missing: run `make lab-deps` (Debian linux-source-6.12) "
                    "or pass --tree", EXIT_FAILED)
    src = cache / "src"
    tree = extract_tarball(tarball, src, create)
    version = tree_version(tree) if tree.is_dir() else "?"
    ident = f"tarball:{tarball.name}:{tarball_id(tarball, cache)}"
    return Source(tree, src, ident, version, managed=True)


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
    # the switch costs exactly what an untouched file would: nothing.
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


# --------------------------------------------------------------------------- build


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


def config_digest(variant: Variant) -> str:
    """The config a variant is built with: its fragments, or the user's own .config."""
    h = hashlib.sha256()
    if variant.config:
        h.update(b"own config\0" + variant.config.read_bytes())
    for p in variant.fragment_paths():
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def image_key(src: Source, variant: Variant) -> str:
    h = hashlib.sha256()
    h.update(f"{RECIPE}\0{src.ident}\0{config_digest(variant)}\0".encode())
    for p in variant.patch_paths():
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:20]


def image_dir(key: str) -> Path:
    return cache_root() / "images" / key


def image_path(meta: dict) -> Path:
    """The bzImage of a build's meta (as build() returns it)."""
    return image_dir(meta["key"]) / "bzImage"


def built_image(src: Source, variant: Variant) -> dict | None:
    d = image_dir(image_key(src, variant))
    try:
        meta = json.loads((d / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    return meta if (d / "bzImage").is_file() else None


def make_argv(src: Source, bdir: Path, *targets: str, jobs: int | None = None) -> list[str]:
    argv = ["nice", "-n", "10", "make", "-C", str(src.tree), f"O={bdir}", "ARCH=x86_64"]
    if jobs:
        argv.append(f"-j{jobs}")
    return argv + list(targets)


def configure(src: Source, variant: Variant, bdir: Path, logfile: Path, digest: str) -> bool:
    """tinyconfig + fragments + olddefconfig (or the user's config + olddefconfig), only
    when `digest` (what the config depends on) changed since the last time."""
    stamp = bdir / ".ipclab-config"
    if (bdir / ".config").is_file() and stamp.is_file() and stamp.read_text().strip() == digest:
        return False
    if variant.config:
        steps = [["cp", str(variant.config), str(bdir / ".config")]]
    else:
        merge = [str(src.tree / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(bdir),
                 str(bdir / ".config")] + [str(p) for p in variant.fragment_paths()]
        steps = [make_argv(src, bdir, "tinyconfig"), merge]
    steps.append(make_argv(src, bdir, "olddefconfig"))
    if proc.is_dry_run():
        for s in steps:
            proc.would_run(s)
        return True
    bdir.mkdir(parents=True, exist_ok=True)
    for s in steps:
        run(s, timeout=600, cwd=src.tree, logfile=logfile)
    check_config(variant, bdir)
    stamp.write_text(digest + "\n")
    return True


def check_config(variant: Variant, bdir: Path) -> None:
    """Kconfig silently drops options whose dependencies are off; say which ones did."""
    have = (bdir / ".config").read_text().splitlines()
    have_set = set(have)
    lost = []
    for frag in variant.fragment_paths():
        for line in frag.read_text().splitlines():
            line = line.strip()
            m = re.match(r"^(CONFIG_\w+)=(.*)$", line) or re.match(r"^# (CONFIG_\w+) is not set$", line)
            if not m:
                continue
            if line.startswith("#"):
                if any(h.startswith(m.group(1) + "=") and not h.endswith("=n") for h in have):
                    lost.append(f"{m.group(1)} (wanted off)")
            elif line not in have_set and not (m.group(2) == "n" and f"# {m.group(1)} is not set" in have_set):
                lost.append(m.group(1))
    if lost:
        log(f"warning: {variant.name}: config options not honoured (dependencies?): " + ", ".join(lost))


def build(variant: str | Variant, tree: str | None = None, jobs: int | None = None,
          force: bool = False, quiet: bool = False) -> dict:
    """Build (or find in the cache) the image for a variant (a name, or what resolve()
    made). Returns its meta.json; in a dry run, what is known before the build (release
    "?")."""
    if isinstance(variant, str):
        variant = resolve(variant, tree)
    src = open_source(tree, variant=variant)

    def cached():
        meta = built_image(src, variant)
        if meta and not force and not quiet:
            log(f"{variant.name}: cached image {image_dir(image_key(src, variant))}/bzImage"
                f" ({meta['release']})")
        if not meta or force:
            return None
        # The image is the commit's, whichever name built it first: name it as asked now.
        return {**meta, "variant": variant.name} if variant.commit else meta

    meta = cached()
    if meta:
        return meta
    jobs = jobs or os.cpu_count() or 1
    bdir = src.build_dir(variant)
    with tree_lock() as waited:
        # Whoever held the lock may have built this very image meanwhile.
        meta = cached()
        if meta:
            return meta
        key = image_key(src, variant)
        t0 = time.monotonic()
        if variant.commit:
            notes = [gittree.checkout(src.tree, variant.commit)]
            for p in variant.extra:
                if not proc.would_run(patch_argv(src.tree, p, False)):
                    apply_patch(src.tree, p)
            # Each commit is configured afresh (its Kconfig may differ); make then rebuilds
            # only what a changed option touches.
            config_stamp = key
        else:
            notes = switch_tree(src, variant)
            config_stamp = config_digest(variant)
        for n in filter(None, notes):
            log(f"{variant.name}: {n}")
        logfile = cache_root() / "logs" / f"build-{slug(variant.name)}-{proc.stamp()}.log"
        configure(src, variant, bdir, logfile, config_stamp)
        argv = make_argv(src, bdir, "bzImage", jobs=jobs)
        if proc.would_run(argv):
            return {"variant": variant.name, "key": key, "release": "?",
                    "patches": [{"name": p.name} for p in variant.patch_paths()],
                    "commit": variant.commit, "dry_run": True}
        log(f"{variant.name}: building in {bdir} (-j{jobs}, log {logfile})")
        run(argv, timeout=BUILD_TIMEOUT_S, cwd=src.tree, logfile=logfile)
        seconds = time.monotonic() - t0
        if image_key(src, variant) != key:
            # The image would be filed under inputs it was not built from.
            raise Error(f"{variant.name}: its patches or config changed during the build; "
                        "build again", EXIT_FAILED)
        release = proc.run(make_argv(src, bdir, "-s", "kernelrelease"), 120, capture=True,
                           cwd=src.tree).out.strip()
        d = image_dir(key)
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(bdir / "arch/x86/boot/bzImage", d / "bzImage.tmp")
        os.replace(d / "bzImage.tmp", d / "bzImage")
        shutil.copyfile(bdir / ".config", d / "config")
        # Addresses to function names, for instruction profiles of this image.
        shutil.copyfile(bdir / "System.map", d / "System.map")
        meta = {
            "variant": variant.name,
            "key": key,
            "release": release or src.version,
            "source": src.ident,
            "tree": str(variant.tree or src.tree),
            "commit": variant.commit,
            "describe": variant.describe,
            "patches": [{"name": p.name, "sha256": sha256_file(p)}
                        for p in variant.patch_paths()],
            "fragments": [p.name for p in variant.fragment_paths()],
            "config": str(variant.config) if variant.config else None,
            "config_sha256": sha256_file(d / "config"),
            "build_seconds": round(seconds, 1),
            "jobs": jobs,
            "built_at": proc.now_iso(),
        }
        proc.write_json_atomic(d / "meta.json", meta)
        log(f"{variant.name}: built {release} in {seconds:.0f} s -> {d}/bzImage")
        # Not kept in meta.json: this build's wait for others, for callers that time builds.
        return {**meta, "lock_wait_s": round(waited, 1)}


def _config_sha256(meta: dict) -> str | None:
    # Images built before meta.json kept it.
    f = image_dir(meta["key"]) / "config" if meta.get("key") else None
    return sha256_file(f) if f and f.is_file() else None


def prebuilt(path: str) -> dict:
    """A bzImage built elsewhere (--kernel PATH), filed in the image cache by its content,
    with its config (and System.map) when they can be found. Error (exit 2) when its config
    lacks what the suites need; a warning saying what was not checked when it cannot be
    read."""
    image_file = Path(path)
    if not image_file.is_file():
        raise Error(f"--kernel {path}: no such file")
    release = image.release_of(image_file)
    digest = sha256_file(image_file)
    key = f"prebuilt-{digest[:11]}"
    d = image_dir(key)
    with contextlib.suppress(OSError, ValueError):
        meta = json.loads((d / "meta.json").read_text())
        if (d / "bzImage").is_file():
            return meta
    text, where = image.read_config(image_file, release, extract_ikconfig_script())
    modules_here = Path("/lib/modules", release).is_dir()
    if text is None:
        log(f"warning: --kernel {path}: could not read its config ({where}); not checked: "
            f"{image.not_checked()}")
    else:
        missing = image.missing_options(text, modules=modules_here)
        if missing:
            raise Error(f"--kernel {path} ({release}, config from {where}) lacks what the "
                        f"suites need: {', '.join(missing)}")
    meta = {"variant": image_file.name, "key": key, "release": release,
            "source": f"prebuilt:{image_file.resolve()}", "image_sha256": digest,
            "patches": [], "prebuilt": True, "config_from": where if text else None,
            "config_sha256": sha256_bytes(text.encode()) if text else None}
    if proc.is_dry_run():
        return meta
    d.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(image_file, d / "bzImage.tmp")
    os.replace(d / "bzImage.tmp", d / "bzImage")
    if text:
        proc.write_text_atomic(d / "config", text)
    smap = image_file.parent / f"System.map-{release}"
    if smap.is_file():
        shutil.copyfile(smap, d / "System.map")
    proc.write_json_atomic(d / "meta.json", meta)
    return meta


def extract_ikconfig_script() -> Path | None:
    """scripts/extract-ikconfig of the lab's source tree, if it has been extracted."""
    src = cache_root() / "src"
    for tree in sorted(src.glob("linux-*")):
        if (tree / "scripts" / "extract-ikconfig").is_file():
            return tree / "scripts" / "extract-ikconfig"
    return None


def obtain(kern: Variant | dict, jobs: int | None = None, force: bool = False,
           quiet: bool = True) -> dict:
    """The image meta for what resolve() or prebuilt() gave: built (or found) for a variant,
    as it is for a prebuilt image."""
    if isinstance(kern, dict):
        return kern
    return build(kern, jobs=jobs, force=force, quiet=quiet)


def identity(meta: dict) -> dict:
    """Exactly what was measured, from an image's meta, for the results' meta.build: the
    release, the commit (and its git describe) or the source, the patches by hash, and the
    hash of the config the image was built with."""
    out = {"release": meta.get("release"), "source": meta.get("source"),
           "patches": [{"name": p["name"], "sha256": p.get("sha256")}
                       for p in meta.get("patches", [])],
           "config_sha256": meta.get("config_sha256") or _config_sha256(meta)}
    for k in ("commit", "describe", "image_sha256"):
        if meta.get(k):
            out[k] = meta[k]
    return out


@contextlib.contextmanager
def tree_lock() -> Iterator[float]:
    """One tree mutation or build at a time on this machine (none taken in a dry run).
    Yields how long it waited for another build, in seconds."""
    if proc.is_dry_run():
        yield 0.0
        return
    path = cache_root() / "lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        t0 = time.monotonic()
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another build to release {path}")
            fcntl.flock(f, fcntl.LOCK_EX)
            log(f"got {path} after {time.monotonic() - t0:.0f} s")
        yield time.monotonic() - t0


def describe(tree: str | None = None) -> list[dict]:
    """One row per variant for `kernel list`."""
    rows = []
    try:
        src = open_source(tree, create=False)
    except Error:
        src = None
    for name in list_variants():
        row = {"variant": name, "patches": [], "fragments": [], "built": False, "error": None}
        try:
            v = load_variant(name)
            row["patches"], row["fragments"] = v.patches, v.fragments
            if src and src.tree.is_dir():
                meta = built_image(src, v)
                if meta:
                    row["built"] = True
                    row["release"] = meta["release"]
                    row["image"] = str(image_path(meta))
        except Error as e:
            row["error"] = str(e)
        rows.append(row)
    return rows
