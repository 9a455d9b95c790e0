# SPDX-License-Identifier: MIT
"""Kernel lab, what to build: the lab's variants (kernel/series), overlays of config and lab
patches, and what a name on the command line builds (NAME+PATCH, --patch, --config, a ref of
a user's git tree).

A variant is a file kernel/series/NAME: an optional `base: BASE` line (default mainline; see
bases.py), then one patch file name per line from kernel/patches/BASE/, applied in order;
`#` starts a comment.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from ipclab import EXIT_FAILED, ROOT, Error, proc

from . import bases, gittree, image
from .cache import cache_root, sha256_bytes, sha256_file

KERNEL_DIR = ROOT / "kernel"
LAB_FRAGMENT = "lab.config"
# --config NAME: `tiny` is tinyconfig + lab.config; `production` starts from the base's
# Debian config (bases.fetch_config) with production.config on top instead of lab.config.
FLAVOURS = ("tiny", "production")
PRODUCTION_FRAGMENT = "production.config"
# A base (bases.py) is what a variant is built on, never a variant: asked for the variant
# `base`, the error names the unpatched LTS kernel's.
RENAMED_LTS = "base"
# The architectures a variant builds for (the kernel's ARCH names; bases owns the list). x86_64
# is the lab's own; another gets its fragment kernel/config/arch/ARCH.config after the others
# (its machine's console, interrupt controller and virtio transport; ARCH-production.config on
# a Debian config, which has the rest) and a build dir and image of its own.
DEFAULT_ARCH = bases.DEFAULT_ARCH
ARCHES = tuple(bases.DEBIAN_ARCH)


@dataclasses.dataclass
class Variant:
    """What to build: a series of the lab's, or a commit of a user's git tree; then patches
    from outside the repository; with the lab's config fragments or the user's own config."""
    name: str
    patches: list[str]          # file names in kernel/patches/BASE, in order
    fragments: list[str]        # file names in kernel/config, in merge order
    base: str | None = None     # kernel/bases/BASE; None for a commit of a user's git tree
    extra: list[Path] = dataclasses.field(default_factory=list)  # the user's, after the series
    config: Path | None = None  # the user's own .config instead of tinyconfig + fragments
    flavour: str = "tiny"       # FLAVOURS; with `config`, the user's
    tree: Path | None = None    # a user's git tree, whose `commit` is built
    commit: str | None = None
    describe: str | None = None
    arch: str = DEFAULT_ARCH
    # What `kernel build` takes to resolve this very variant again elsewhere (a Slurm job),
    # its paths absolute: set by resolve().
    build_args: tuple[str, ...] = ()

    def patch_paths(self) -> list[Path]:
        own = bases.load(self.base).patch_dir if self.base else None
        return [own / p for p in self.patches] + list(self.extra) if own else list(self.extra)

    def fragment_paths(self) -> list[Path]:
        if self.config:
            return []
        flavour = "-production" if self.flavour == "production" else ""
        own = [] if self.arch == DEFAULT_ARCH else [f"arch/{self.arch}{flavour}.config"]
        return [KERNEL_DIR / "config" / c for c in self.fragments + own]

    @property
    def config_name(self) -> str:
        # Variants with the same config share a build dir; patches and commits only move
        # objects.
        if self.config:
            name = f"own-{sha256_file(self.config)[:12]}"
        else:
            name = "+".join(Path(f).stem for f in self.fragments)
        return name if self.arch == DEFAULT_ARCH else f"{name}@{self.arch}"


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
        moved = " (the unpatched LTS kernel is `lts`)" if name == RENAMED_LTS else ""
        raise Error(f"unknown variant {name!r}{moved} (known: {known})")
    patches, base = [], bases.DEFAULT_BASE
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.match(r"^base:\s*(\S+)$", line)
        if m:
            if patches:
                raise Error(f"kernel/series/{name}:{lineno}: `base:` comes before the patches",
                            EXIT_FAILED)
            base = m.group(1)
            if base not in bases.names():
                raise Error(f"kernel/series/{name}:{lineno}: unknown base {base!r} (known: "
                            f"{', '.join(bases.names())})", EXIT_FAILED)
            continue
        where = bases.PATCHES_DIR / base
        if "/" in line or not (where / line).is_file():
            raise Error(f"kernel/series/{name}:{lineno}: no patch {line!r} in "
                        f"kernel/patches/{base}", EXIT_FAILED)
        patches.append(line)
    # Convention instead of syntax, so series files stay plain patch lists: every variant gets
    # lab.config, plus kernel/config/<variant>.config when it exists (e.g. debug.config).
    fragments = [LAB_FRAGMENT]
    if name != "lab" and (KERNEL_DIR / "config" / f"{name}.config").is_file():
        fragments.append(f"{name}.config")
    if not (KERNEL_DIR / "config" / LAB_FRAGMENT).is_file():
        raise Error(f"missing kernel/config/{LAB_FRAGMENT}", EXIT_FAILED)
    return Variant(name, patches, fragments, base)


# --------------------------------------------------------------------------- kernels from outside


def resolve(spec: str, tree: str | None = None, patches=(), config: str | None = None,
            arch: str = DEFAULT_ARCH) -> Variant:
    """What `kernel build`, `vm run` and `ab` are asked to build, checked before anything is
    built: NAME[+PATCH...], where NAME is a variant of kernel/series or, with --tree of a git
    tree, a ref there; PATCH files (or mboxes, one commit per mail) and `patches` go on top,
    in order; `config` is the user's own .config or a flavour (FLAVOURS); `arch` one of
    ARCHES. Error (exit 2) for what does not exist."""
    if arch not in ARCHES:
        raise Error(f"--arch {arch}: want one of {', '.join(ARCHES)}")
    git_tree = check_tree(tree) if tree else None
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
    own = user_config(config) if config and config not in FLAVOURS else None
    if git_tree is not None:
        commit = gittree.resolve(git_tree, name)
        v = Variant(name, [], [LAB_FRAGMENT], tree=git_tree, commit=commit,
                    describe=gittree.describe(git_tree, commit))
    else:
        v = load_variant("+".join([name, *overlays]))
    files = [patch_file(p, v.base) for p in [*extra, *patches] if p not in overlays]
    v.name = "+".join([name, *overlays, *(f.name for f in files)])
    v.extra = split_mboxes(files)
    v.config = own
    if own:
        v.flavour = "own"
    elif config == "production":
        v.flavour = config
        v.fragments = [PRODUCTION_FRAGMENT] + [f for f in v.fragments if f != LAB_FRAGMENT]
    v.arch = arch
    v.build_args = _build_args(name, overlays, git_tree, files, own, config, arch)
    return v


def _build_args(name, overlays, git_tree, files, own, config, arch) -> tuple[str, ...]:
    args = ["+".join([name, *overlays])]
    if git_tree is not None:
        args += ["--tree", str(git_tree)]
    for f in files:
        args += ["--patch", str(f)]
    if own or config:
        args += ["--config", str(own or config)]
    return (*args, "--arch", arch)


def check_tree(tree: str) -> Path:
    """--tree: the top of a git work tree holding a kernel; Error (exit 2) for anything
    else, which the lab would otherwise ignore and build its own base instead."""
    path = Path(tree).resolve()
    if not path.is_dir():
        raise Error(f"--tree {tree}: no such directory")
    if not gittree.is_git_tree(path):
        raise Error(f"--tree {tree}: not the top of a git tree (the lab builds commits of a"
                    " git tree; a plain tree: `git init && git add -A && git commit` there)")
    if not (path / "Makefile").is_file() or not (path / "kernel").is_dir():
        raise Error(f"--tree {tree}: not a kernel tree (no Makefile and kernel/ at its top)")
    return path


def is_overlay(part: str) -> bool:
    return VARIANT_RE.match(part) is not None and part != "lab" and \
        (KERNEL_DIR / "config" / f"{part}.config").is_file()


def _is_ref(tree: Path, name: str) -> bool:
    try:
        gittree.resolve(tree, name)
    except Error:
        return False
    return True


def patch_file(given: str, base: str | None) -> Path:
    """A patch named on the command line: a path, or a file of the base's kernel/patches/BASE
    (of any base's, for a commit of a git tree, which has none)."""
    dirs = [bases.PATCHES_DIR / b for b in ([base] if base else bases.names())]
    for p in [Path(given), *(d / given for d in dirs)]:
        if p.is_file():
            return p.resolve()
    raise Error(f"no patch file {given!r}")


def config_arg(given: str | None) -> str | None:
    """--config as the lab passes it on: a flavour's name, or the user's file, checked."""
    if not given or given in FLAVOURS:
        return given
    return str(user_config(given))


def user_config(given: str) -> Path:
    """--config FILE: a kernel .config with what the suites need, or Error (exit 2)."""
    path = Path(given)
    if not path.is_file():
        raise Error(f"--config {given}: no such file (or a flavour: {', '.join(FLAVOURS)})")
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
    kernel/config/O.config and its lab patches after the series (overlay_patches). So one
    measurement configuration (counters, lock statistics, debug checks) applies to any
    variant without a series file per pair. A fragment that sets no option is left out of
    the config, so that a patch-only overlay builds in the variant's own build directory."""
    first, *overlays = name.split("+")
    v = load_variant(first)
    patches, fragments = list(v.patches), list(v.fragments)
    for o in overlays:
        frag = f"{o}.config"
        if o == "lab" or not (KERNEL_DIR / "config" / frag).is_file():
            known = ", ".join(sorted(p.stem for p in (KERNEL_DIR / "config").glob("*.config")
                                     if p.name != LAB_FRAGMENT)) or "none"
            raise Error(f"variant {name!r}: no overlay {o!r} (kernel/config/{o}.config; "
                        f"known: {known})")
        options = sets_options(KERNEL_DIR / "config" / frag)
        if options and frag not in fragments:
            fragments.append(frag)
        own = overlay_patches(o, v.base, patches)
        if not own and not options:
            raise Error(f"variant {name!r}: overlay {o!r} is a lab patch, and base {v.base} has"
                        f" none (kernel/patches/{v.base}/lab-{o}.patch)")
        patches += [p for p in own if p not in patches]
    return Variant(name, patches, fragments, v.base)


def sets_options(fragment: Path) -> bool:
    return re.search(r"^(CONFIG_\w+=|# CONFIG_\w+ is not set)", fragment.read_text(), re.M) \
        is not None


def overlay_patches(o: str, base: str, series: list[str]) -> list[str]:
    """Overlay O's lab patches for a series of base: lab-O.patch, then its pieces
    lab-O--PIECE.patch in name order. A piece touches lines that a patch of some series
    changes, and has a version for that patch, lab-O--PIECE@TAG.patch, taken instead when
    the series has the patch TAG.patch or one whose name starts with TAG-. Error when two versions of a piece
    both match (none was made for that combination)."""
    d = bases.PATCHES_DIR / base
    out = [f"lab-{o}.patch"] if (d / f"lab-{o}.patch").is_file() else []
    pieces = sorted(p.name for p in d.glob(f"lab-{o}--*.patch") if "@" not in p.name)
    for piece in pieces:
        stem = piece.removesuffix(".patch")
        fits = [v.name for v in sorted(d.glob(f"{stem}@*.patch"))
                if any(s == f"{tag}.patch" or s.startswith(f"{tag}-") for s in series
                       for tag in [v.stem.split("@", 1)[1]])]
        if len(fits) > 1:
            raise Error(f"overlay {o!r}: {', '.join(fits)} all fit this series; none is made"
                        " for them together")
        out.append(fits[0] if fits else piece)
    return out
