# SPDX-License-Identifier: MIT
"""Kernel lab, the source of a base: which kernel release a variant is built on, and where its
tarball comes from.

A base is a file `kernel/bases/NAME` (`key: value` lines, `#` comments): the Debian source
package that carries the tarball (`package`, `version`, `suite`), the kernel release it holds
and the tarball's sha256. Its patches live in `kernel/patches/NAME/`.

The tarball is looked for, in order, at `$IPCLAB_<NAME>_TARBALL` (a user's own, e.g. from
kernel.org: any sha256 is taken, and recorded), `/usr/src/<tarball>` when its sha256 is the
base's (the package installed by apt), and the sources directory (`$IPCLAB_SOURCES`, default
/var/cache/ipclab-sources), where `fetch` puts it: a plain package download (`apt-get
download`) through a private apt configuration that reuses the Debian mirror the system's apt
already uses, with the base's suite. Nothing is added to the system's apt sources and nothing
is installed. The sources directory is not the lab's cache (IPCLAB_CACHE): a cold cache, as
for a clean build, still finds the sources, as it finds what apt put in /usr/src.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from ipclab import EXIT_FAILED, ROOT, Error, proc
from ipclab.progress import log

from .cache import sha256_file

BASES_DIR = ROOT / "kernel" / "bases"
PATCHES_DIR = ROOT / "kernel" / "patches"
# A series file without a `base:` line builds on this one: new work targets mainline.
DEFAULT_BASE = "mainline"
FIELDS = ("package", "version", "suite", "release", "sha256")
# The distribution's own kernel config for the release (the `production` flavour), from the
# same suite: Debian's linux-config package and the file in it, pinned by its sha256.
CONFIG_FIELDS = ("config-package", "config-version", "config-file", "config-sha256")
# Another architecture's config: the same package as Debian builds it for that architecture,
# e.g. `arm64-config-file` and `arm64-config-sha256` (the lab's --arch name first).
ARCH_CONFIG_FIELDS = ("config-file", "config-sha256")
# The lab's architectures (the kernel's ARCH names) as Debian names them; the first is the
# lab's own, the one CONFIG_FIELDS describe.
DEBIAN_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
DEFAULT_ARCH = next(iter(DEBIAN_ARCH))
# Debian's own binary kernel of the release, the production build's reference (`--kernel
# debian`): the package with its vmlinuz, the one with its config, their version, and the
# vmlinuz's sha256.
REFERENCE_FIELDS = ("reference-image", "reference-config", "reference-version",
                    "reference-sha256")
NAME_RE = re.compile(r"^[a-z][a-z0-9-]*$")
APT_TIMEOUT_S = 900


@dataclasses.dataclass(frozen=True)
class Base:
    name: str
    package: str        # Debian source-tarball package, e.g. linux-source-7.3
    version: str        # its Debian version, e.g. 7.3.4-1~bpo13+1
    suite: str          # the archive suite that carried that version when it was pinned
    release: str        # the kernel release in the tarball, e.g. 7.3.4
    sha256: str         # the tarball's
    distro_configs: "tuple[DistroConfig, ...]" = ()
    reference: "Reference | None" = None

    def config_for(self, arch: str = DEFAULT_ARCH) -> "DistroConfig | None":
        """Debian's config of this release for the lab's architecture `arch`, or None."""
        return next((c for c in self.distro_configs if c.arch == arch), None)

    @property
    def tarball_name(self) -> str:
        return f"{self.package}.tar.xz"

    @property
    def patch_dir(self) -> Path:
        return PATCHES_DIR / self.name

    @property
    def env_var(self) -> str:
        return f"IPCLAB_{self.name.upper().replace('-', '_')}_TARBALL"

    def cached_tarball(self) -> Path:
        return sources_root() / self.name / self.tarball_name

    def label(self) -> str:
        return f"{self.name} ({self.release}, {self.package} {self.version})"


@dataclasses.dataclass(frozen=True)
class DistroConfig:
    """Debian's config for a base's release: `file` (xz) in the package `package` as Debian
    builds it for `arch`."""
    package: str        # e.g. linux-config-7.3
    version: str
    file: str           # e.g. config.amd64_none_cloud-amd64.xz (cloud: made for VMs)
    sha256: str         # of `file` as the package carries it
    arch: str = DEFAULT_ARCH    # the lab's name of the architecture (DEBIAN_ARCH)

    def cached(self, base: str) -> Path:
        return sources_root() / base / self.file

    def record(self) -> dict:
        rec = {"package": self.package, "version": self.version, "file": self.file,
               "sha256": self.sha256}
        return rec if self.arch == DEFAULT_ARCH else {**rec, "arch": DEBIAN_ARCH[self.arch]}


@dataclasses.dataclass(frozen=True)
class Reference:
    """Debian's binary kernel: `image` carries usr/lib/modules/RELEASE/vmlinuz, `config`
    the same release's config."""
    image: str          # e.g. linux-binary-7.3.4+deb13-cloud-amd64
    config: str         # e.g. linux-base-7.3.4+deb13-cloud-amd64
    version: str
    sha256: str         # of the vmlinuz

    @property
    def release(self) -> str:
        return self.image.removeprefix("linux-binary-")

    def cached(self, base: str) -> Path:
        return sources_root() / base / "debian" / f"vmlinuz-{self.release}"


def sources_root() -> Path:
    return Path(os.environ.get("IPCLAB_SOURCES", "/var/cache/ipclab-sources"))


def names() -> list[str]:
    if not BASES_DIR.is_dir():
        return []
    return sorted(p.name for p in BASES_DIR.iterdir() if p.is_file() and NAME_RE.match(p.name))


def load(name: str) -> Base:
    path = BASES_DIR / name
    if not NAME_RE.match(name) or not path.is_file():
        raise Error(f"unknown base {name!r} (known: {', '.join(names()) or 'none'})")
    arch_groups = {arch: tuple(f"{arch}-{f}" for f in ARCH_CONFIG_FIELDS)
                   for arch in list(DEBIAN_ARCH)[1:]}
    known = FIELDS + CONFIG_FIELDS + sum(arch_groups.values(), ()) + REFERENCE_FIELDS
    fields: dict[str, str] = {}
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition(":")
        if not sep or key.strip() not in known:
            raise Error(f"kernel/bases/{name}:{lineno}: want one of {', '.join(known)}: "
                        "VALUE", EXIT_FAILED)
        fields[key.strip()] = value.strip()
    missing = [f for f in FIELDS if not fields.get(f)]
    # the optional groups come whole or not at all
    groups = {}
    for group in (CONFIG_FIELDS, *arch_groups.values(), REFERENCE_FIELDS):
        given = [f for f in group if fields.get(f)]
        if given and len(given) < len(group):
            missing += [f for f in group if f not in given]
        values = [fields.pop(f, None) for f in group]
        groups[group] = values if given else None
    if missing:
        raise Error(f"kernel/bases/{name}: missing {', '.join(missing)}", EXIT_FAILED)
    configs = []
    if groups[CONFIG_FIELDS]:
        package, version, file, sha256 = groups[CONFIG_FIELDS]
        configs.append(DistroConfig(package, version, file, sha256))
        configs += [DistroConfig(package, version, *groups[group], arch=arch)
                    for arch, group in arch_groups.items() if groups[group]]
    for group in arch_groups.values():
        if groups[group] and not groups[CONFIG_FIELDS]:
            raise Error(f"kernel/bases/{name}: {group[0]} needs {', '.join(CONFIG_FIELDS)}",
                        EXIT_FAILED)
    ref = Reference(*groups[REFERENCE_FIELDS]) if groups[REFERENCE_FIELDS] else None
    return Base(name, distro_configs=tuple(configs), reference=ref, **fields)


@dataclasses.dataclass(frozen=True)
class Tarball:
    path: Path
    sha256: str
    origin: str         # "package" (the base's own), or the user's override


def tarball(base: Base) -> Tarball | None:
    """The base's tarball on this machine, or None when it has not been fetched. A user's
    override is taken whatever its hash; a package's tarball only with the pinned hash."""
    own = os.environ.get(base.env_var)
    if own:
        p = Path(own)
        if not p.is_file():
            raise Error(f"{base.env_var}={own}: no such file")
        return Tarball(p, memo_sha256(p), f"${base.env_var}")
    for p in (Path("/usr/src") / base.tarball_name, base.cached_tarball()):
        if p.is_file() and memo_sha256(p) == base.sha256:
            return Tarball(p, base.sha256, "package")
    return None


def require_tarball(base: Base) -> Tarball:
    found = tarball(base)
    if found is None:
        raise Error(f"base {base.name}: {base.tarball_name} {base.release} is not on this "
                    f"machine: run `make lab-deps` (or `ipclab kernel fetch {base.name}`)",
                    EXIT_FAILED)
    return found


def memo_sha256(path: Path) -> str:
    """A tarball's sha256, remembered per (path, size, mtime): hashing 160 MB takes a second."""
    st = path.stat()
    memo = sources_root() / "sha256.json"
    tag = f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}"
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    if tag in known:
        return known[tag]
    digest = sha256_file(path)
    if not proc.is_dry_run():
        with_writable(memo, lambda: proc.write_json_atomic(memo, {**known, tag: digest}))
    return digest


def with_writable(path: Path, write) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write()
    except OSError:
        pass            # a read-only cache only makes the next caller hash again


# --------------------------------------------------------------------------- fetching


def fetch(base: Base) -> Tarball:
    """Download the base's package into the cache and take its tarball out, unless the
    tarball is already here. Error naming what the archive has when the pinned version is
    gone."""
    have = tarball(base)
    if have:
        return have
    deb = download(base, base.package, base.version,
                   f"rebase kernel/patches/{base.name} onto it and update kernel/bases/"
                   f"{base.name}, or set {base.env_var} to a kernel.org tarball, or build a "
                   "git tree with --tree")
    dest = base.cached_tarball()
    digest = extract_pinned(base, deb, f"usr/src/{base.tarball_name}", dest, base.sha256)
    log(f"base {base.name}: {dest} ({base.release}, sha256 {digest[:12]})")
    return Tarball(dest, digest, "package")


def download(base: Base, package: str, version: str, advice: str,
             arch: str | None = None) -> Path:
    """`package` at `version` from the base's suite, as a .deb in the sources directory; Error
    naming what the archive has (and `advice`) when that version is gone. `arch`: Debian's
    name of the architecture whose build of the package to take (None: the system's)."""
    apt = AptConfig(sources_root() / "apt", mirrors_for(base.suite), base.suite)
    log(f"base {base.name}: fetching {package} {version} from {base.suite} "
        f"({', '.join(apt.mirrors)})")
    apt.update()
    found = apt.versions(package, arch)
    if version not in found:
        raise Error(f"base {base.name}: Debian's archive no longer has {package} {version} "
                    f"{arch or ''} ({base.suite} has {describe_found(apt, package, found)}); "
                    f"{advice}", EXIT_FAILED)
    return apt.download(package, version, sources_root() / "debs", arch)


def distro_config(base: Base, arch: str = DEFAULT_ARCH) -> Path | None:
    """The base's Debian config (xz) for `arch` on this machine with its pinned sha256, or
    None."""
    dc = base.config_for(arch)
    if dc is None:
        return None
    p = dc.cached(base.name)
    return p if p.is_file() and memo_sha256(p) == dc.sha256 else None


def fetch_config(base: Base, arch: str = DEFAULT_ARCH) -> Path:
    """Download the base's Debian config package for `arch` and take the config file out,
    unless it is here already. Error when the base names none, or the archive has another."""
    dc = base.config_for(arch)
    if dc is None:
        which = "" if arch == DEFAULT_ARCH else f"{arch}-"
        raise Error(f"base {base.name} has no distribution config for {arch} "
                    f"(kernel/bases/{base.name}: "
                    f"{', '.join(which + f for f in CONFIG_FIELDS[-2:])}): it builds only the "
                    "tiny config there")
    have = distro_config(base, arch)
    if have:
        return have
    deb = download(base, dc.package, dc.version,
                   f"update kernel/bases/{base.name}'s config-version and config-sha256",
                   DEBIAN_ARCH[arch])
    dest = dc.cached(base.name)
    digest = extract_pinned(base, deb, f"usr/src/{dc.package}/{dc.file}", dest, dc.sha256)
    log(f"base {base.name}: {dest} ({dc.package} {dc.version} {DEBIAN_ARCH[arch]}, "
        f"sha256 {digest[:12]})")
    return dest


def fetch_reference(base: Base) -> Path:
    """Debian's own kernel of the base's release, as a vmlinuz with its config-RELEASE
    beside it (where kernel.prebuilt looks), downloaded unless here with its sha256."""
    ref = base.reference
    if ref is None:
        raise Error(f"base {base.name} names no Debian kernel (kernel/bases/{base.name}: "
                    f"{', '.join(REFERENCE_FIELDS)})")
    dest = ref.cached(base.name)
    config = dest.parent / f"config-{ref.release}"
    if dest.is_file() and config.is_file() and memo_sha256(dest) == ref.sha256:
        return dest
    advice = f"update kernel/bases/{base.name}'s reference-version and reference-sha256"
    inside = f"usr/lib/modules/{ref.release}"
    deb = download(base, ref.config, ref.version, advice)
    extract_from_deb(deb, f"{inside}/config", config)
    deb.unlink()
    deb = download(base, ref.image, ref.version, advice)
    extract_from_deb(deb, f"{inside}/vmlinuz", dest)
    deb.unlink()
    digest = memo_sha256(dest)
    if digest != ref.sha256:
        dest.unlink()
        raise Error(f"base {base.name}: {ref.image} {ref.version} holds a vmlinuz with sha256 "
                    f"{digest[:12]}, not {ref.sha256[:12]} as kernel/bases/{base.name} says",
                    EXIT_FAILED)
    log(f"base {base.name}: Debian's kernel {dest} (sha256 {digest[:12]})")
    return dest


def describe_found(apt: "AptConfig", package: str, versions: list[str]) -> str:
    kind = re.sub(r"[0-9.]+$", "", package)         # linux-source-7.3 -> linux-source-
    others = [p for p in apt.packages(kind) if p != package] if kind != package else []
    parts = [f"{package} {', '.join(versions)}" if versions else f"no {package}"]
    for p in others:
        parts.append(f"{p} {', '.join(apt.versions(p))}")
    return "; ".join(parts)


def mirrors_for(suite: str) -> list[str]:
    """The Debian archive URIs the system's apt uses for suites of the same kind as `suite`
    (a -security suite lives on the security archive, the others on the main one)."""
    done = proc.run(["apt-get", "indextargets", "--format", "$(REPO_URI)\t$(ORIGIN)\t$(RELEASE)"],
                    60, capture=True)
    if done.rc != 0:
        raise Error("apt-get indextargets failed: is this a Debian system with apt?",
                    EXIT_FAILED)
    security = suite.endswith("-security")
    uris: list[str] = []
    for line in done.out.splitlines():
        uri, origin, release = (line.split("\t") + ["", ""])[:3]
        if origin != "Debian" or release.endswith("-security") != security:
            continue
        if uri not in uris:
            uris.append(uri)
    if not uris:
        raise Error(f"the system's apt uses no Debian {'security ' if security else ''}archive "
                    f"that could carry {suite}: run `apt-get update`, or set the base's "
                    "tarball with IPCLAB_<BASE>_TARBALL", EXIT_FAILED)
    return uris


class AptConfig:
    """apt with its own sources, lists and cache under `work`: the system's mirrors with one
    suite, and nothing of the system's own apt state touched."""

    def __init__(self, work: Path, mirrors: list[str], suite: str):
        self.work, self.mirrors, self.suite = work, mirrors, suite
        self.sources = work / "sources.list.d"

    def options(self) -> list[str]:
        w = self.work
        return ["-o", f"Dir::Etc::SourceList={self.sources / 'ipclab.list'}",
                "-o", f"Dir::Etc::SourceParts={self.sources}",
                "-o", f"Dir::Etc::PreferencesParts={w / 'preferences.d'}",
                "-o", f"Dir::State::Lists={w / 'lists'}",
                "-o", f"Dir::Cache={w / 'cache'}",
                "-o", "Dir::State::status=/dev/null",
                "-o", "Acquire::Languages=none",
                # the lists of every architecture the lab builds for (a config package is
                # built per architecture)
                *sum((["-o", f"APT::Architectures::={a}"] for a in DEBIAN_ARCH.values()), []),
                # root's downloads would otherwise be handed to the _apt user, who cannot
                # write to the lab's cache
                *(["-o", "APT::Sandbox::User=root"] if os.geteuid() == 0 else [])]

    def update(self) -> None:
        for d in (self.sources, self.work / "preferences.d", self.work / "lists" / "partial",
                  self.work / "cache" / "archives" / "partial"):
            d.mkdir(parents=True, exist_ok=True)
        keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
        signed = f" [signed-by={keyring}]" if Path(keyring).is_file() else ""
        lines = [f"deb{signed} {m} {self.suite} main" for m in self.mirrors]
        proc.write_text_atomic(self.sources / "ipclab.list", "\n".join(lines) + "\n")
        self.apt("apt-get", "update", "-q")

    def apt(self, *argv: str, cwd: Path | None = None) -> str:
        done = proc.run([argv[0], *self.options(), *argv[1:]], APT_TIMEOUT_S, capture=True,
                        cwd=cwd)
        if done.timed_out or done.rc != 0:
            last = (done.err.strip().splitlines() or ["?"])[-1]
            raise Error(f"{' '.join(argv[:2])} ({self.suite}) failed: {last}", EXIT_FAILED)
        return done.out

    def versions(self, package: str, arch: str | None = None) -> list[str]:
        spec = f"{package}:{arch}" if arch else package
        out = self.apt("apt-cache", "madison", spec) if self.packages(package) else ""
        return [f.split("|")[1].strip() for f in out.splitlines() if f.count("|") >= 2]

    def packages(self, prefix: str) -> list[str]:
        out = self.apt("apt-cache", "pkgnames", prefix)
        return sorted(p for p in out.split() if p.startswith(prefix))

    def download(self, package: str, version: str, dest: Path,
                 arch: str | None = None) -> Path:
        dest.mkdir(parents=True, exist_ok=True)
        spec = f"{package}:{arch}" if arch else package
        self.apt("apt-get", "download", "-q", f"{spec}={version}", cwd=dest)
        debs = sorted(dest.glob(f"{package}_*_{arch}.deb" if arch else f"{package}_*.deb"))
        if not debs:
            raise Error(f"apt-get download {package}={version} left no .deb in {dest}",
                        EXIT_FAILED)
        return debs[-1]


def extract_pinned(base: Base, deb: Path, member: str, dest: Path, sha256: str) -> str:
    """Take member out of deb into dest and check it against the sha256 that kernel/bases/
    pins; the .deb goes once it matched. Its digest, or Error with dest removed (the .deb kept
    for a look) when it does not."""
    extract_from_deb(deb, member, dest)
    digest = memo_sha256(dest)
    if digest != sha256:
        dest.unlink()
        raise Error(f"base {base.name}: {deb.name} holds a {Path(member).name} with sha256 "
                    f"{digest[:12]}, not {sha256[:12]} as kernel/bases/{base.name} says",
                    EXIT_FAILED)
    deb.unlink()
    return digest


def extract_from_deb(deb: Path, member: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".deb-"))
    try:
        done = proc.run(["dpkg-deb", "-x", str(deb), str(tmp)], 600, capture=True)
        inside = tmp / member
        if done.rc != 0 or not inside.is_file():
            raise Error(f"{deb.name}: no {member} in it ({done.err.strip()[-200:]})",
                        EXIT_FAILED)
        os.replace(inside, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

