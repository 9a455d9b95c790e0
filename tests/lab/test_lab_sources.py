# SPDX-License-Identifier: MIT
"""Kernels from outside the repository, without building one: refs of a user's git tree and
the lab's own checkout of them, NAME+PATCH and mboxes, --config and --kernel checks, and how
results say what was measured."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import from_lab_source

from ipclab import EXIT_USAGE, Error, report
from ipclab.cli import main
from ipclab.lab import bases, cache, gittree, image, kernel, source, variants

pytestmark = pytest.mark.skipif(shutil.which("git") is None or shutil.which("patch") is None,
                                reason="git and GNU patch needed")

FULL_CONFIG = "".join(f"{opt}=y\n" for opt in [*(o for o, _, _ in image.REQUIRED),
                                                  *image.SHARED_FS["9p"]])


def git(repo, *args):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """A user's git tree of three commits, a repo kernel/ dir, and a cache of their own."""
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    kdir = tmp_path / "kernel"
    for d in ("series", "patches", "config"):
        (kdir / d).mkdir(parents=True)
    (kdir / "config" / "lab.config").write_text("CONFIG_SMP=y\n")
    (kdir / "series" / "lts").write_text("# none\n")
    monkeypatch.setattr(variants, "KERNEL_DIR", kdir)
    # kernel/patches is the default base's patch directory here.
    (tmp_path / "per-base").mkdir()
    (tmp_path / "per-base" / bases.DEFAULT_BASE).symlink_to(kdir / "patches")
    monkeypatch.setattr(bases, "PATCHES_DIR", tmp_path / "per-base")
    tree = tmp_path / "linux"
    (tree / "kernel").mkdir(parents=True)
    (tree / "fs").mkdir()
    (tree / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 13\nSUBLEVEL = 0\n"
                                   "EXTRAVERSION = -rc1\n")
    (tree / "fs" / "pipe.c").write_text("".join(f"line {i}\n" for i in range(30)))
    (tree / "ipc.c").write_text("ipc\n")
    git(tree, "init", "-q", "-b", "main")
    git(tree, "add", "-A")
    git(tree, "commit", "-qm", "first")
    git(tree, "tag", "v1")
    (tree / "ipc.c").write_text("ipc 2\n")
    git(tree, "commit", "-qam", "ipc: second")
    (tree / "fs" / "pipe.c").write_text("".join(f"line {i}\n" for i in range(31)))
    git(tree, "commit", "-qam", "pipe: third")
    return tree, kdir


def diff(tree, rel, new):
    """A -p1 patch of `rel` in `tree` to `new`, as git would mail it."""
    old = (tree / rel).read_text()
    (tree / rel).write_text(new)
    out = git(tree, "diff")
    (tree / rel).write_text(old)
    return out + "\n"


def test_a_ref_of_a_git_tree_resolves_to_its_commit(lab):
    tree, _ = lab
    v = variants.resolve("HEAD~1", str(tree))
    assert v.commit == git(tree, "rev-parse", "HEAD~1")
    assert v.describe.startswith("v1-1-g") and v.name == "HEAD~1" and v.tree == tree
    assert source.open_source(str(tree), create=False, variant=v).version == "6.13.0-rc1"
    with pytest.raises(Error) as e:
        variants.resolve("nosuch", str(tree))
    assert e.value.code == EXIT_USAGE and "no commit named 'nosuch'" in str(e.value)


def test_the_lab_builds_from_its_own_clone_and_leaves_the_users_tree_alone(lab):
    tree, _ = lab
    (tree / "ipc.c").write_text("the user's own edit\n")      # uncommitted work
    index = tree / ".git" / "index"
    status = git(tree, "status", "--porcelain")     # (git status itself may rewrite the index)
    before = (index.read_bytes(), index.stat().st_mtime_ns, git(tree, "rev-parse", "HEAD"))
    work = Path(os.environ["IPCLAB_CACHE"]) / "git" / gittree.repo_key(tree)
    clone = gittree.lab_clone(tree, work)
    first, second, third = git(tree, "rev-list", "--reverse", "HEAD").split()
    assert "first checkout" in gittree.checkout(clone, first)
    pipe = clone / "fs" / "pipe.c"
    old = pipe.stat().st_mtime_ns
    assert "1 files differ" in gittree.checkout(clone, second)
    # A file the two commits share keeps its mtime: make rebuilds only what changed.
    assert pipe.stat().st_mtime_ns == old
    assert (clone / "ipc.c").read_text() == "ipc 2\n"
    # A patch applied for one build is gone at the next, and so is a file it created.
    (clone / "fs" / "pipe.c").write_text("patched\n")
    (clone / "new.c").write_text("created\n")
    gittree.checkout(clone, third)
    assert not (clone / "new.c").exists() and "line 30" in pipe.read_text()
    after = (index.read_bytes(), index.stat().st_mtime_ns, git(tree, "rev-parse", "HEAD"))
    assert after == before and git(tree, "status", "--porcelain") == status
    assert (tree / "ipc.c").read_text() == "the user's own edit\n"


def test_image_key_follows_commit_config_and_patches_not_the_ref_name(lab, tmp_path):
    tree, _ = lab
    src = lambda v: source.open_source(str(tree), create=False, variant=v)   # noqa: E731
    head = variants.resolve("HEAD", str(tree))
    same = variants.resolve("main", str(tree))
    assert kernel.image_key(src(head), head) == kernel.image_key(src(same), same)
    prev = variants.resolve("HEAD~1", str(tree))
    assert kernel.image_key(src(prev), prev) != kernel.image_key(src(head), head)
    p = tmp_path / "fix.patch"
    p.write_text(diff(tree, "ipc.c", "ipc 3\n"))
    patched = variants.resolve(f"HEAD+{p}", str(tree))
    assert patched.name == "HEAD+fix.patch" and patched.extra == [p]
    assert kernel.image_key(src(patched), patched) != kernel.image_key(src(head), head)
    cfg = tmp_path / "my.config"
    cfg.write_text(FULL_CONFIG)
    own = variants.resolve("HEAD", str(tree), config=str(cfg))
    assert own.config_name.startswith("own-") and not own.fragment_paths()
    assert kernel.image_key(src(own), own) != kernel.image_key(src(head), head)


def test_first_parent_range_is_the_commits_after_good_up_to_bad(lab):
    tree, _ = lab
    first, second, third = git(tree, "rev-list", "--reverse", "HEAD").split()
    assert gittree.first_parent_range(tree, first, third) == [second, third]
    with pytest.raises(Error, match="not an ancestor"):
        gittree.first_parent_range(tree, third, first)
    with pytest.raises(Error, match="same commit"):
        gittree.first_parent_range(tree, first, first)


def test_name_plus_patch_and_an_mbox_split_per_mail(lab, tmp_path):
    tree, kdir = lab
    one = diff(tree, "ipc.c", "ipc 3\n")
    two = diff(tree, "fs/pipe.c", "short\n")
    mails = [("0/2", "cover", ""), ("1/2", "ipc: three", one), ("2/2", "pipe: short", two)]
    mbox = tmp_path / "series.mbox"
    mbox.write_text("".join(
        f"From 1234567890abcdef1234567890abcdef12345678 Mon Sep 17 00:00:00 2001\n"
        f"From: t <t@t>\nSubject: [PATCH {n}] {s}\n\n{body or 'words'}\n" for n, s, body in mails))
    v = variants.resolve(f"lts+{mbox}", None, patches=[str(mbox)])
    names = [p.name for p in v.extra]
    # The cover letter carries no diff; each mail is a patch named after its subject.
    assert names == ["series-02-ipc-three.patch", "series-03-pipe-short.patch"] * 2
    assert v.name == "lts+series.mbox+series.mbox"
    with pytest.raises(Error) as e:
        variants.resolve("lts+nosuch.patch")
    assert e.value.code == EXIT_USAGE and "no patch file 'nosuch.patch'" in str(e.value)
    # A mail that does not apply is named, with its file and hunk.
    src_tree = tmp_path / "plain"
    (src_tree / "fs").mkdir(parents=True)
    (src_tree / "fs" / "pipe.c").write_text("something else\n" * 5)
    with pytest.raises(Error) as e:
        source.apply_patch(src_tree, v.extra[1])
    assert "series-03-pipe-short.patch does not apply: fs/pipe.c hunk #1" in str(e.value)


def test_own_config_must_have_what_the_suites_need(tmp_path):
    cfg = tmp_path / "c"
    cfg.write_text(FULL_CONFIG.replace("CONFIG_POSIX_MQUEUE=y", "# CONFIG_POSIX_MQUEUE is not set")
                   .replace("CONFIG_9P_FS=y", "CONFIG_9P_FS=m"))
    with pytest.raises(Error) as e:
        variants.user_config(str(cfg))
    msg = str(e.value)
    assert e.value.code == EXIT_USAGE and "\n" not in msg
    assert "CONFIG_POSIX_MQUEUE (POSIX mqueue)" in msg
    assert "the host's root for vng: 9p (CONFIG_NET_9P, CONFIG_NET_9P_VIRTIO, CONFIG_9P_FS)" \
        " or virtiofs (CONFIG_FUSE_FS, CONFIG_VIRTIO_FS)" in msg
    cfg.write_text(FULL_CONFIG)
    assert variants.user_config(str(cfg)) == cfg.resolve()
    # Debian's cloud kernels have virtiofs and no 9p: either serves.
    virtiofs = "CONFIG_FUSE_FS=y\nCONFIG_VIRTIO_FS=y\n"
    cfg.write_text("".join(line + "\n" for line in FULL_CONFIG.splitlines()
                           if "9P" not in line) + virtiofs)
    assert variants.user_config(str(cfg)) == cfg.resolve()
    assert image.shared_fs(cfg.read_text()) == "virtiofs"
    assert image.shared_fs(FULL_CONFIG + virtiofs) == "9p"


def fake_bzimage(path, release):
    """Enough of an x86 boot image for the lab: the HdrS magic and a version string."""
    data = bytearray(0x1000)
    data[0x202:0x206] = b"HdrS"
    at = 0x800
    data[0x20E:0x210] = (at - 0x200).to_bytes(2, "little")
    text = f"{release} (builder@host) #1 SMP".encode()
    data[at:at + len(text)] = text
    path.write_bytes(bytes(data))
    return path


def test_prebuilt_image_config_is_checked(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    img = fake_bzimage(tmp_path / "vmlinuz-6.99.1-test", "6.99.1-test")
    assert image.release_of(img) == "6.99.1-test"
    # No IKCONFIG and no config beside it: say what was not checked, and go on.
    meta = kernel.prebuilt(str(img))
    err = capsys.readouterr().err
    assert "could not read its config" in err and "not checked: POSIX mqueue, THP" in err
    assert meta["release"] == "6.99.1-test" and kernel.image_path(meta).is_file()
    assert kernel.identity(meta)["image_sha256"] == cache.sha256_file(img)
    # A config beside it that lacks options: one line naming them, exit 2.
    img2 = fake_bzimage(tmp_path / "vmlinuz-6.99.2", "6.99.2")
    (tmp_path / "config-6.99.2").write_text(FULL_CONFIG.replace("CONFIG_MEMCG=y\n", ""))
    assert main(["kernel", "build", "--kernel", str(img2)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "lacks what the suites need: CONFIG_MEMCG (memcg)" in err
    (tmp_path / "config-6.99.2").write_text(FULL_CONFIG)
    assert kernel.prebuilt(str(img2))["config_from"] == str(tmp_path / "config-6.99.2")
    not_image = tmp_path / "x"
    not_image.write_text("hello")
    with pytest.raises(Error, match="not a bzImage"):
        kernel.prebuilt(str(not_image))


def test_kernel_arguments_fill_base_and_new(lab, tmp_path, capsys, monkeypatch):
    img = fake_bzimage(tmp_path / "vmlinuz-6.99.3", "6.99.3")
    (tmp_path / "config-6.99.3").write_text(FULL_CONFIG)
    assert main(["ab", "lts", "--suite", "seed-skip-wakeups"]) == 2
    assert "want OLD and NEW" in capsys.readouterr().err
    assert main(["ab", "--kernel", str(img), "--suite", "seed-skip-wakeups",
                 "--patch", str(img)]) == 2
    assert "want OLD and NEW" in capsys.readouterr().err
    assert main(["ab", "lts", "--kernel", str(img), "--suite", "seed-skip-wakeups",
                 "--patch", str(img)]) == 2
    assert "--patch needs a kernel the lab builds" in capsys.readouterr().err
    assert main(["vm", "run", "--kernel", str(img), "seeds", "icount-check"]) == 2
    assert "--kernel names the kernel" in capsys.readouterr().err


def test_build_text_says_what_was_measured():
    build = {"release": "6.13.0-rc1", "source": "git:abc", "commit": "a" * 40,
             "describe": "v6.13-rc1-3-gaaaaaaa", "config_sha256": "c" * 64,
             "patches": [{"name": "fix.patch", "sha256": "f" * 64}]}
    text = report.build_text(build)
    assert text == ("6.13.0-rc1, commit aaaaaaaaaaaa (v6.13-rc1-3-gaaaaaaa), patches "
                    "fix.patch ffffffff, config sha256 cccccccccccc")
    tar = report.build_text({"release": "6.12.117", "source": "tarball:linux.tar.xz:" + "d" * 64,
                             "patches": []})
    assert tar == "6.12.117, linux.tar.xz sha256 dddddddddddd, no patches, config unknown"
    base = {"name": "mainline", "release": "7.3.4", "package": "linux-source-7.3",
            "version": "7.3.4-1~bpo13+1", "sha256": "e" * 64}
    ml = report.build_text({"release": "7.3.4", "source": "tarball:linux-source-7.3.tar.xz:"
                            + "e" * 64, "base": base, "patches": []})
    assert ml == ("7.3.4, base mainline (linux-source-7.3 7.3.4-1~bpo13+1), linux-source-7.3.tar.xz"
                  " sha256 eeeeeeeeeeee, no patches, config unknown")
    res = {"id": "x", "meta": {"build": build}, "cells": []}
    assert json.dumps(res) and report.build_text(res["meta"]["build"]) in _show(res)


def _show(res):
    import io
    buf = io.StringIO()
    report.show(res, buf)
    return buf.getvalue()


def test_the_clone_recovers_when_its_commit_was_pruned_from_the_users_repo(lab, capsys):
    tree, _ = lab
    work = Path(os.environ["IPCLAB_CACHE"]) / "git" / gittree.repo_key(tree)
    clone = gittree.lab_clone(tree, work)
    gittree.checkout(clone, git(tree, "rev-parse", "HEAD"))
    (tree / "ipc.c").write_text("rewritten\n")
    git(tree, "commit", "-qa", "--amend", "-m", "pipe: third, rewritten")
    git(tree, "reflog", "expire", "--expire=now", "--all")
    git(tree, "gc", "-q", "--prune=now")
    new = git(tree, "rev-parse", "HEAD")
    assert gittree.checkout(clone, new) == f"checked out {new[:12]}"
    assert (clone / "ipc.c").read_text() == "rewritten\n"
    assert subprocess.run(["git", "-C", str(clone), "status", "--porcelain"], capture_output=True,
                          text=True).stdout == ""


def test_prebuilt_config_is_read_from_ikconfig(tmp_path, monkeypatch, capsys):
    """The IKCONFIG blob (what /proc/config.gz serves) inside the image, read with the
    kernel's own scripts/extract-ikconfig from the lab's source tree."""
    import gzip
    script = from_lab_source(kernel.extract_ikconfig_script)
    if script is None:
        pytest.skip("no extracted kernel source in the lab's cache")
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(kernel, "extract_ikconfig_script", lambda: script)
    img = fake_bzimage(tmp_path / "bzImage", "6.99.4")
    blob = gzip.compress(FULL_CONFIG.replace("CONFIG_PERF_EVENTS=y\n", "").encode())
    img.write_bytes(img.read_bytes() + b"IKCFG_ST" + blob + b"IKCFG_ED")
    with pytest.raises(Error) as e:
        kernel.prebuilt(str(img))
    assert "config from IKCONFIG in the image" in str(e.value)
    assert "CONFIG_PERF_EVENTS (perf events)" in str(e.value)
