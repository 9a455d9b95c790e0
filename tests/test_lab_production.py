# SPDX-License-Identifier: MIT
"""The `production` config flavour without building a kernel: the base's Debian config is
pinned, fetched and checked by its sha256, and a production variant builds from it with
kernel/config/production.config instead of tinyconfig plus lab.config, in a build directory
and an image key of its own."""

import hashlib
import lzma
import shutil
import subprocess

import pytest

from ipclab import EXIT_FAILED, EXIT_USAGE, Error
from ipclab.lab import bases, kernel, variants, vm

pytestmark = pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb needed")

CONFIG = "CONFIG_SMP=y\nCONFIG_RANDOMIZE_BASE=y\nCONFIG_CC_VERSION_TEXT=\"gcc-14 (Debian)\"\n"
ARM64_CONFIG = "CONFIG_ARM64=y\nCONFIG_SMP=y\n"


def fake_deb(tmp_path, package, member_name, text):
    """A .deb carrying usr/src/PACKAGE/MEMBER (xz), as Debian's linux-config packages do."""
    root = tmp_path / "debroot"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {package}\nVersion: 1\nArchitecture: all\nMaintainer: t <t@t>\n"
        "Description: test\n")
    inside = root / "usr" / "src" / package
    inside.mkdir(parents=True)
    data = lzma.compress(text.encode())
    (inside / member_name).write_bytes(data)
    deb = tmp_path / f"{package}_1_all.deb"
    subprocess.run(["dpkg-deb", "-Zxz", "--build", str(root), str(deb)], check=True,
                   capture_output=True)
    return deb, hashlib.sha256(data).hexdigest()


@pytest.fixture
def base_with_config(tmp_path, monkeypatch):
    """A base file naming a Debian config, a sources directory, and apt replaced by a .deb."""
    monkeypatch.setenv("IPCLAB_SOURCES", str(tmp_path / "sources"))
    deb, digest = fake_deb(tmp_path, "linux-config-9.9", "config.amd64_none_cloud-amd64.xz",
                           CONFIG)
    arm_deb, arm_digest = fake_deb(tmp_path / "arm64", "linux-config-9.9",
                                   "config.arm64_none_cloud-arm64.xz", ARM64_CONFIG)
    bdir = tmp_path / "bases"
    bdir.mkdir()
    (bdir / "mainline").write_text(
        "package: linux-source-9.9\nversion: 9.9-1\nsuite: s\nrelease: 9.9.1\nsha256: 00\n"
        "config-package: linux-config-9.9\nconfig-version: 9.9-1\n"
        "config-file: config.amd64_none_cloud-amd64.xz\n"
        f"config-sha256: {digest}\n"
        "arm64-config-file: config.arm64_none_cloud-arm64.xz\n"
        f"arm64-config-sha256: {arm_digest}\n")
    monkeypatch.setattr(bases, "BASES_DIR", bdir)
    calls = []

    def download(base, package, version, advice, arch=None):
        calls.append((package, version) + ((arch,) if arch else ()))
        which = arm_deb if arch == "arm64" else deb
        copy = tmp_path / "sources" / "debs" / which.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(which, copy)
        return copy
    monkeypatch.setattr(bases, "download", download)
    return bdir, calls


def test_the_repositorys_bases_pin_a_debian_cloud_config():
    for name in bases.names():
        dc = bases.load(name).config_for(variants.DEFAULT_ARCH)
        assert dc is not None, f"kernel/bases/{name} names no production config"
        assert dc.package.startswith("linux-config-") and "cloud" in dc.file
        assert len(dc.sha256) == 64


def test_the_config_is_fetched_once_and_checked_by_its_sha256(base_with_config):
    bdir, calls = base_with_config
    b = bases.load("mainline")
    assert bases.distro_config(b) is None
    got = bases.fetch_config(b)
    assert lzma.open(got, "rt").read() == CONFIG and calls == [("linux-config-9.9", "9.9-1", "amd64")]
    assert bases.fetch_config(b) == got and len(calls) == 1      # here already: no apt
    got.unlink()
    text = (bdir / "mainline").read_text()
    (bdir / "mainline").write_text(text.replace(b.config_for().sha256, "1" * 64))
    with pytest.raises(Error) as e:
        bases.fetch_config(bases.load("mainline"))
    assert e.value.code == EXIT_FAILED and "not 111111111111" in str(e.value)
    assert not got.exists()         # a config with another hash is not left to be used


def keep_lines(path, keep):
    """Rewrite a base file with only the lines `keep` takes."""
    path.write_text("\n".join(line for line in path.read_text().splitlines() if keep(line)))


def test_a_base_names_its_config_whole_or_not_at_all(base_with_config):
    bdir, _ = base_with_config
    base = bdir / "mainline"
    whole = base.read_text()
    keep_lines(base, lambda line: not line.startswith("config-sha256"))
    with pytest.raises(Error, match="missing config-sha256"):
        bases.load("mainline")
    base.write_text(whole)
    keep_lines(base, lambda line: not line.startswith("config-"))
    with pytest.raises(Error, match="arm64-config-file needs config-package"):
        bases.load("mainline")
    keep_lines(base, lambda line: "config-" not in line)
    b = bases.load("mainline")
    assert b.config_for() is None and b.config_for("arm64") is None
    with pytest.raises(Error, match="builds only the tiny config"):
        bases.fetch_config(b)


def test_each_architecture_has_its_own_config_from_its_own_package(base_with_config):
    _, calls = base_with_config
    b = bases.load("mainline")
    arm = bases.fetch_config(b, "arm64")
    assert lzma.open(arm, "rt").read() == ARM64_CONFIG
    assert calls == [("linux-config-9.9", "9.9-1", "arm64")]
    assert bases.fetch_config(b) != arm and calls[-1] == ("linux-config-9.9", "9.9-1", "amd64")
    assert b.config_for("arm64").record()["arch"] == "arm64"
    assert "arch" not in b.config_for().record()       # x86 records stay as they were
    prod = variants.resolve("mainline", config="production", arch="arm64")
    assert [p.name for p in prod.fragment_paths()] == ["production.config",
                                                       "arm64-production.config"]
    assert prod.config_name == "production@arm64"
    assert kernel.config_digest(prod) != kernel.config_digest(
        variants.resolve("mainline", config="production"))


def test_production_needs_the_bases_config_for_that_architecture(base_with_config):
    bdir, _ = base_with_config
    keep_lines(bdir / "mainline", lambda line: not line.startswith("arm64-"))
    with pytest.raises(Error, match="pins no Debian config for arm64"):
        kernel.distro_base(variants.resolve("mainline", config="production", arch="arm64"))
    with pytest.raises(Error, match="no distribution config for arm64"):
        bases.fetch_config(bases.load("mainline"), "arm64")


def test_a_production_variant_replaces_lab_config_and_keeps_its_overlays():
    tiny = variants.resolve("mainline+counters")
    prod = variants.resolve("mainline+counters", config="production")
    assert tiny.flavour == "tiny" and tiny.fragments == ["lab.config", "counters.config"]
    assert prod.flavour == "production"
    assert prod.fragments == ["production.config", "counters.config"]
    assert prod.config_name == "production+counters" != tiny.config_name
    assert kernel.distro_base(prod).name == bases.DEFAULT_BASE
    assert kernel.distro_base(tiny) is None
    assert kernel.config_digest(prod) != kernel.config_digest(tiny)
    assert variants.config_arg("production") == "production"
    assert variants.config_arg(None) is None
    with pytest.raises(Error) as e:
        variants.config_arg("nosuch-flavour")
    assert e.value.code == EXIT_USAGE and "production" in str(e.value)


def test_the_production_fragment_keeps_every_core_option_as_shipped():
    text = (variants.KERNEL_DIR / "config" / variants.PRODUCTION_FRAGMENT).read_text()
    set_here = {line.split("=")[0] for line in text.splitlines()
                if line.startswith("CONFIG_")}
    core = ("CC_OPTIMIZE", "MITIGATION", "STACKPROTECTOR", "INIT_STACK", "PREEMPT", "HZ",
            "MEMCG", "LSM", "SECURITY", "NR_CPUS", "RANDOMIZE", "FORTIFY", "HARDENED",
            "UBSAN", "FUNCTION_TRACER", "SLAB")
    touched = [o for o in set_here if any(k in o for k in core)]
    assert not touched, f"production.config changes core options: {touched}"


def test_write_distro_config_and_config_value(tmp_path):
    xz = tmp_path / "c.xz"
    xz.write_bytes(lzma.compress(CONFIG.encode()))
    dest = tmp_path / "build" / ".config"
    dest.parent.mkdir()
    kernel.write_distro_config(xz, dest)
    assert dest.read_text() == CONFIG
    assert kernel.config_value(dest, "CC_VERSION_TEXT") == "gcc-14 (Debian)"
    assert kernel.config_value(dest, "NOSUCH") is None


def test_a_randomised_image_boots_deterministic_runs_without_kaslr(tmp_path, monkeypatch):
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    d = kernel.image_dir("k1")
    d.mkdir(parents=True)
    (d / "config").write_text(CONFIG)
    assert vm.fixed_layout_args({"key": "k1"}) == ["nokaslr"]
    (d / "config").write_text("CONFIG_SMP=y\n# CONFIG_RANDOMIZE_BASE is not set\n")
    assert vm.fixed_layout_args({"key": "k1"}) == []


def test_debians_own_kernel_is_fetched_with_its_config_beside_it(tmp_path, monkeypatch):
    monkeypatch.setenv("IPCLAB_SOURCES", str(tmp_path / "sources"))
    release = "9.9.1+deb13-cloud-amd64"
    image = b"HdrS-not-really-a-kernel"
    debs = {}
    for package, name, data in ((f"linux-binary-{release}", "vmlinuz", image),
                                (f"linux-base-{release}", "config", CONFIG.encode())):
        root = tmp_path / package
        (root / "DEBIAN").mkdir(parents=True)
        (root / "DEBIAN" / "control").write_text(
            f"Package: {package}\nVersion: 1\nArchitecture: all\nMaintainer: t <t@t>\n"
            "Description: test\n")
        (root / "usr" / "lib" / "modules" / release).mkdir(parents=True)
        (root / "usr" / "lib" / "modules" / release / name).write_bytes(data)
        debs[package] = tmp_path / f"{package}.deb"
        subprocess.run(["dpkg-deb", "--build", str(root), str(debs[package])], check=True,
                       capture_output=True)
    fetched = []

    def download(base, package, version, advice):
        fetched.append(package)
        copy = tmp_path / "sources" / "debs" / debs[package].name
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(debs[package], copy)
        return copy
    monkeypatch.setattr(bases, "download", download)
    ref = bases.Reference(f"linux-binary-{release}", f"linux-base-{release}", "1",
                          hashlib.sha256(image).hexdigest())
    b = bases.Base("mainline", "p", "v", "s", "9.9.1", "00", reference=ref)
    got = bases.fetch_reference(b)
    assert got.name == f"vmlinuz-{release}" and got.read_bytes() == image
    assert (got.parent / f"config-{release}").read_text() == CONFIG     # prebuilt reads it
    assert bases.fetch_reference(b) == got and len(fetched) == 2
    wrong = bases.Base("mainline", "p", "v", "s", "9.9.1", "00",
                       reference=bases.Reference(ref.image, ref.config, "1", "2" * 64))
    with pytest.raises(Error, match="not 222222222222"):
        bases.fetch_reference(wrong)
    assert not got.exists()
    with pytest.raises(Error, match="names no Debian kernel"):
        bases.fetch_reference(bases.Base("lts", "p", "v", "s", "9.9.1", "00"))


def test_floors_are_kept_per_base_and_config():
    from ipclab import results

    def res(build):
        return {"meta": {"build": build}}
    base = {"name": "mainline", "release": "7.3.4"}
    assert results.kernel_base(res({"base": base})) == "mainline"       # before flavours
    assert results.kernel_base(res({"base": base, "config_flavour": "tiny"})) == "mainline"
    assert results.kernel_base(res({"base": base, "config_flavour": "production"})) == \
        "mainline/production"
    assert results.kernel_base(res({"release": "x"})) is None
