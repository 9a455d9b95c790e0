# SPDX-License-Identifier: MIT
"""Kernel lab, builds: configure and build a variant in its tree's build directory, the image
cache, prebuilt images, what a build was (`identity`), and `kernel list`.

    images/<key>/bzImage       a built kernel (arm64: Image), with meta.json, config and
                               System.map; key = hash(source, config fragments, patch
                               contents, the architecture when not x86_64)
    lock                       flock: one tree mutation or build at a time on the machine
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import lzma
import os
import re
import shutil
import time
from pathlib import Path
from typing import Iterator

from ipclab import EXIT_FAILED, Error, proc
from ipclab.progress import log

from . import bases, gittree, image, source
from .cache import cache_root, sha256_bytes, sha256_file
from .source import Source
from .variants import DEFAULT_ARCH, Variant, list_variants, load_variant, resolve, slug

# Bumped when the way an image is produced changes, so stale images are not reused.
RECIPE = "ipclab-kernel/1"
BUILD_TIMEOUT_S = 3600
# Per architecture (variants.ARCHES): make's ARCH and CROSS_COMPILE, the image target and
# where kbuild leaves it, and the name it is kept under in the cache.
ARCH_BUILD = {
    "x86_64": {"make": ["ARCH=x86_64"], "target": "bzImage",
               "image": "arch/x86/boot/bzImage", "file": "bzImage"},
    # Debian's cross compiler (gcc-aarch64-linux-gnu, make lab-deps).
    "arm64": {"make": ["ARCH=arm64", "CROSS_COMPILE=aarch64-linux-gnu-"], "target": "Image",
              "image": "arch/arm64/boot/Image", "file": "Image"},
}


def distro_base(variant: Variant) -> bases.Base | None:
    """The base whose Debian config a `production` variant starts from (a git tree's commit
    takes the default base's), else None."""
    if variant.flavour != "production":
        return None
    base = bases.load(variant.base or bases.DEFAULT_BASE)
    if base.config_for(variant.arch) is None:
        raise Error(f"{variant.name}: --config production: kernel/bases/{base.name} pins no "
                    f"Debian config for {variant.arch}")
    return base


def config_digest(variant: Variant) -> str:
    """The config a variant is built with: its fragments on tinyconfig or on the base's
    Debian config, or the user's own .config."""
    h = hashlib.sha256()
    if variant.config:
        h.update(b"own config\0" + variant.config.read_bytes())
    distro = distro_base(variant)
    if distro:
        h.update(f"distro config\0{distro.config_for(variant.arch).sha256}\0".encode())
    for p in variant.fragment_paths():
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def image_key(src: Source, variant: Variant) -> str:
    h = hashlib.sha256()
    h.update(f"{RECIPE}\0{src.ident}\0{config_digest(variant)}\0".encode())
    if variant.arch != DEFAULT_ARCH:
        # Only then, so that the x86 images built before arm64 existed keep their keys.
        h.update(f"arch {variant.arch}\0".encode())
    for p in variant.patch_paths():
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:20]


def image_dir(key: str) -> Path:
    return cache_root() / "images" / key


def image_path(meta: dict) -> Path:
    """The kernel image of a build's meta (as build() returns it): bzImage, or arm64's
    Image."""
    return image_dir(meta["key"]) / ARCH_BUILD[meta.get("arch", DEFAULT_ARCH)]["file"]


def built_image(src: Source, variant: Variant) -> dict | None:
    d = image_dir(image_key(src, variant))
    try:
        meta = json.loads((d / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    return meta if (d / ARCH_BUILD[variant.arch]["file"]).is_file() else None


def make_argv(src: Source, bdir: Path, *targets: str, jobs: int | None = None,
              arch: str = DEFAULT_ARCH) -> list[str]:
    # Run from a make (`make test`), the kernel's make would inherit that make's flags: -w
    # prints "Entering directory" into `kernelrelease`'s output, -n or -k change the build.
    argv = ["nice", "-n", "10", "env", "-u", "MAKEFLAGS", "-u", "MFLAGS", "-u", "MAKELEVEL",
            "make", "-C", str(src.tree), f"O={bdir}", *ARCH_BUILD[arch]["make"]]
    if jobs:
        argv.append(f"-j{jobs}")
    return argv + list(targets)


def configure(src: Source, variant: Variant, bdir: Path, logfile: Path, digest: str) -> bool:
    """tinyconfig + fragments + olddefconfig (or the user's config + olddefconfig), only
    when `digest` (what the config depends on) changed since the last time."""
    stamp = bdir / ".ipclab-config"
    if (bdir / ".config").is_file() and stamp.is_file() and stamp.read_text().strip() == digest:
        return False
    distro = distro_base(variant)
    merge = [str(src.tree / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(bdir),
             str(bdir / ".config")] + [str(p) for p in variant.fragment_paths()]
    if variant.config:
        steps = [["cp", str(variant.config), str(bdir / ".config")]]
    elif distro:
        # fetch before the dry-run return: a dry run says so when the config is not here
        arch = variant.arch
        found = (bases.distro_config(distro, arch) if proc.is_dry_run()
                 else bases.fetch_config(distro, arch))
        cached = distro.config_for(arch).cached(distro.name)
        steps = [["xz", "-dc", str(found or cached)], merge]
    else:
        steps = [make_argv(src, bdir, "tinyconfig", arch=variant.arch), merge]
    steps.append(make_argv(src, bdir, "olddefconfig", arch=variant.arch))
    if proc.is_dry_run():
        for s in steps:
            proc.would_run(s)
        return True
    bdir.mkdir(parents=True, exist_ok=True)
    for s in steps:
        if s[0] == "xz":
            write_distro_config(Path(s[-1]), bdir / ".config")
            continue
        source.run(s, timeout=600, cwd=src.tree, logfile=logfile)
    check_config(variant, bdir, src.tree)
    proc.write_text_atomic(stamp, digest + "\n")
    return True


def write_distro_config(xz: Path, dest: Path) -> None:
    """Debian's config as the start of a `production` build. Its CONFIG_CC_VERSION_TEXT and
    the like name Debian's compiler; olddefconfig rewrites them for ours, and the build's
    meta records both (`compiler`)."""
    with lzma.open(xz, "rt") as f:
        proc.write_text_atomic(dest, f.read())


def check_config(variant: Variant, bdir: Path, tree: Path) -> None:
    """Kconfig silently drops options whose dependencies are off; say which ones did. The
    fragments serve every base, so an option this release does not have (renamed or folded
    into another) is only noted."""
    have = (bdir / ".config").read_text().splitlines()
    have_set = set(have)
    lost = []
    # A later fragment overrides an earlier one (arm64's turns off lab.config's x86 choices).
    wanted: dict[str, tuple[str, re.Match]] = {}
    for frag in variant.fragment_paths():
        for line in frag.read_text().splitlines():
            line = line.strip()
            m = re.match(r"^(CONFIG_\w+)=(.*)$", line) or re.match(r"^# (CONFIG_\w+) is not set$", line)
            if m:
                wanted[m.group(1)] = (line, m)
    for line, m in wanted.values():
        if line.startswith("#"):
            if any(h.startswith(m.group(1) + "=") and not h.endswith("=n") for h in have):
                lost.append(f"{m.group(1)} (wanted off)")
        elif line not in have_set and not (m.group(2) == "n" and f"# {m.group(1)} is not set" in have_set):
            lost.append(m.group(1))
    if not lost:
        return
    known = kconfig_symbols(tree)
    absent = [o for o in lost if o.split()[0].removeprefix("CONFIG_") not in known]
    lost = [o for o in lost if o not in absent]
    if absent:
        log(f"{variant.name}: config options this release does not have: " + ", ".join(absent))
    if lost:
        log(f"warning: {variant.name}: config options not honoured (dependencies?): " + ", ".join(lost))


def kconfig_symbols(tree: Path) -> set[str]:
    """Every symbol some Kconfig file of the tree defines."""
    found: set[str] = set()
    for f in tree.rglob("Kconfig*"):
        with contextlib.suppress(OSError):
            found.update(re.findall(r"^\s*(?:menu)?config\s+(\w+)", f.read_text(errors="replace"),
                                    re.M))
    return found


def build(variant: str | Variant, tree: str | None = None, jobs: int | None = None,
          force: bool = False, quiet: bool = False) -> dict:
    """Build (or find in the cache) the image for a variant (a name, or what resolve()
    made). Returns its meta.json; in a dry run, what is known before the build (release
    "?")."""
    if isinstance(variant, str):
        variant = resolve(variant, tree)
    src = source.open_source(tree, variant=variant)

    def cached():
        meta = built_image(src, variant)
        if meta and not force and not quiet:
            log(f"{variant.name}: cached image {image_path(meta)} ({meta['release']})")
        if not meta or force:
            return None
        return _as_named(meta, variant)

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
                if not proc.would_run(source.patch_argv(src.tree, p, False)):
                    source.apply_patch(src.tree, p)
            # Each commit is configured afresh (its Kconfig may differ); make then rebuilds
            # only what a changed option touches.
            config_stamp = key
        else:
            notes = source.switch_tree(src, variant)
            config_stamp = config_digest(variant)
        for n in filter(None, notes):
            log(f"{variant.name}: {n}")
        # A tree that holds a build recompiles only what changed: the estimate's two kinds.
        incremental = (bdir / "vmlinux").is_file()
        logfile = cache_root() / "logs" / f"build-{slug(variant.name)}-{proc.stamp()}.log"
        configure(src, variant, bdir, logfile, config_stamp)
        built = ARCH_BUILD[variant.arch]
        argv = make_argv(src, bdir, built["target"], jobs=jobs, arch=variant.arch)
        if proc.would_run(argv):
            return {**_before_build(variant, key), "incremental": incremental,
                    "build_dir": str(bdir), "dry_run": True}
        log(f"{variant.name}: building in {bdir} (-j{jobs}, log {logfile})")
        source.run(argv, timeout=BUILD_TIMEOUT_S, cwd=src.tree, logfile=logfile)
        seconds = time.monotonic() - t0
        if image_key(src, variant) != key:
            # The image would be filed under inputs it was not built from.
            raise Error(f"{variant.name}: its patches or config changed during the build; "
                        "build again", EXIT_FAILED)
        meta = _file_image(src, variant, bdir, key, round(seconds, 1), jobs, incremental)
        log(f"{variant.name}: built {meta['release']} in {seconds:.0f} s -> "
            f"{image_path(meta)}")
        # Not kept in meta.json: this build's wait for others, for callers that time builds.
        return {**meta, "lock_wait_s": round(waited, 1)}


def _file_image(src: Source, variant: Variant, bdir: Path, key: str, seconds: float,
                jobs: int, incremental: bool) -> dict:
    """Copy a finished build's image, config and System.map into the cache under key, and
    write its meta.json; returns the meta."""
    built = ARCH_BUILD[variant.arch]
    release = proc.run(make_argv(src, bdir, "-s", "kernelrelease", arch=variant.arch), 120,
                       capture=True, cwd=src.tree).out.strip()
    d = image_dir(key)
    d.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(bdir / built["image"], d / f"{built['file']}.tmp")
    os.replace(d / f"{built['file']}.tmp", d / built["file"])
    proc.write_text_atomic(d / "config", (bdir / ".config").read_bytes())
    # Addresses to function names, for instruction profiles of this image.
    proc.write_text_atomic(d / "System.map", (bdir / "System.map").read_bytes())
    meta = {
        "variant": variant.name,
        "key": key,
        "arch": variant.arch,
        "release": release or src.version,
        "source": src.ident,
        "tree": str(variant.tree or src.tree),
        "base": base_record(src),
        "commit": variant.commit,
        "describe": variant.describe,
        "patches": [{"name": p.name, "sha256": sha256_file(p)}
                    for p in variant.patch_paths()],
        "fragments": [p.name for p in variant.fragment_paths()],
        "config": str(variant.config) if variant.config else None,
        "config_flavour": variant.flavour,
        "config_sha256": sha256_file(d / "config"),
        "compiler": config_value(d / "config", "CC_VERSION_TEXT"),
        "build_seconds": seconds,
        "incremental": incremental,
        "jobs": jobs,
        "built_at": proc.now_iso(),
    }
    distro = distro_base(variant)
    if distro:
        meta["distro_config"] = distro_record(distro, variant.arch)
    proc.write_json_atomic(d / "meta.json", meta)
    return meta


def config_value(config: Path, option: str) -> str | None:
    """CONFIG_<option>'s value in a .config, unquoted, or None."""
    with contextlib.suppress(OSError):
        m = re.search(rf"^CONFIG_{option}=(.*)$", config.read_text(errors="replace"), re.M)
        if m:
            return m.group(1).strip().strip('"')
    return None


def distro_record(base: bases.Base, arch: str) -> dict:
    """What a `production` build started from: Debian's package, file and sha256, and the
    compiler Debian built its own kernel with (the config names it)."""
    dc = base.config_for(arch)
    rec = dc.record()
    with contextlib.suppress(OSError, lzma.LZMAError):
        with lzma.open(dc.cached(base.name), "rt") as f:
            m = re.search(r'^CONFIG_CC_VERSION_TEXT="(.*)"$', f.read(), re.M)
        if m:
            rec["compiler"] = m.group(1)
    return rec


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
        proc.write_text_atomic(d / "System.map", smap.read_bytes())
    proc.write_json_atomic(d / "meta.json", meta)
    return meta


def cached(key: str, name: str | None = None) -> dict:
    """The meta of the cache's build `key` (`vm run --built KEY`: what a Slurm job boots),
    named `name` as the run that built it named it; Error (exit 2) when the cache here has
    no such build."""
    d = image_dir(key)
    try:
        if "/" in key or key.startswith("."):
            raise ValueError(key)
        meta = json.loads((d / "meta.json").read_text())
        if not image_path(meta).is_file():
            raise OSError(key)
    except (OSError, ValueError):
        raise Error(f"--built {key}: no such build in {cache_root() / 'images'} (is the lab's"
                    " cache, IPCLAB_CACHE, shared with this machine?)") from None
    return {**meta, "variant": name} if name else meta


def built_meta(meta: dict) -> dict:
    """Once its build job ended: the cache's meta of an image find() said was still to
    build; the meta as it was if it did not build (its boots failed, and say why)."""
    if not meta.get("to_build") or proc.is_dry_run():
        return meta
    try:
        return cached(meta["key"], meta["variant"])
    except Error:
        return meta


def extract_ikconfig_script() -> Path | None:
    """scripts/extract-ikconfig of a base's source tree, if one has been extracted."""
    src = cache_root() / "src"
    for tree in sorted(src.glob("*/linux-*")):
        if (tree / "scripts" / "extract-ikconfig").is_file():
            return tree / "scripts" / "extract-ikconfig"
    return None


def _as_named(meta: dict, variant: Variant) -> dict:
    # The image is the commit's, whichever name built it first: name it as asked now.
    return {**meta, "variant": variant.name} if variant.commit else meta


def find(kern: Variant | dict) -> tuple[dict, bool]:
    """Without building: (meta, True) for an image in the cache or a prebuilt one; for one
    still to build, (what is known before: variant, key, arch, release "?", to_build;
    False)."""
    if isinstance(kern, dict):
        return kern, True
    src = source.open_source(None, variant=kern)
    meta = built_image(src, kern)
    if meta:
        return _as_named(meta, kern), True
    return {**_before_build(kern, image_key(src, kern)), "to_build": True}, False


def _before_build(variant: Variant, key: str) -> dict:
    """What is known of an image before it is built."""
    return {"variant": variant.name, "key": key, "release": "?", "arch": variant.arch,
            "patches": [{"name": p.name} for p in variant.patch_paths()],
            "commit": variant.commit, "config_flavour": variant.flavour}


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
    for k in ("base", "commit", "describe", "image_sha256", "config_flavour",
              "distro_config", "compiler"):
        if meta.get(k):
            out[k] = meta[k]
    if meta.get("arch", DEFAULT_ARCH) != DEFAULT_ARCH:
        out["arch"] = meta["arch"]
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
    with proc.open_append(path) as f:
        t0 = time.monotonic()
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another build to release {path}")
            fcntl.flock(f, fcntl.LOCK_EX)
            log(f"got {path} after {time.monotonic() - t0:.0f} s")
        yield time.monotonic() - t0


def base_record(src: Source) -> dict | None:
    """The base a build came from, for meta.json and the results' meta.build: its name, the
    Debian package and version, the kernel release and the tarball's sha256 (a user's own
    tarball says where it came from instead of a package)."""
    if src.base is None or src.tarball is None:
        return None
    b, tb = src.base, src.tarball
    rec = {"name": b.name, "release": src.version, "sha256": tb.sha256}
    if tb.origin == "package":
        rec.update(package=b.package, version=b.version)
    else:
        rec["tarball"] = f"{tb.path} ({tb.origin})"
    return rec


def describe_bases() -> list[dict]:
    """One row per base for `kernel list`: what it is, and whether its tarball is here."""
    rows = []
    for name in bases.names():
        row: dict = {"base": name, "error": None, "tarball": None}
        try:
            b = bases.load(name)
            row.update(release=b.release, package=b.package, version=b.version,
                       suite=b.suite, sha256=b.sha256,
                       distro_configs=[{**c.record(), "arch": bases.DEBIAN_ARCH[c.arch],
                                        "here": bases.distro_config(b, c.arch) is not None}
                                       for c in b.distro_configs])
            found = bases.tarball(b)
            if found:
                row.update(tarball=str(found.path), tarball_sha256=found.sha256,
                           origin=found.origin)
        except Error as e:
            row["error"] = str(e)
        rows.append(row)
    return rows


def describe(tree: str | None = None) -> list[dict]:
    """One row per variant for `kernel list`, with its base and whether it is built."""
    rows, sources = [], {}
    for name in list_variants():
        row = {"variant": name, "base": None, "patches": [], "fragments": [], "built": False,
               "error": None}
        try:
            v = load_variant(name)
            row["base"] = v.base
            row["patches"], row["fragments"] = v.patches, v.fragments
            if v.base not in sources:
                try:
                    sources[v.base] = source.open_source(tree, create=False, variant=v)
                except Error:
                    sources[v.base] = None
            src = sources[v.base]
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
