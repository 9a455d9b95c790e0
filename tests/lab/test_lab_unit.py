# SPDX-License-Identifier: MIT
"""Kernel lab logic that needs no kernel build and no VM, on the kernel's side: series and
overlays, patch switching in a tree, cache keys (tests/lab/test_lab_boots.py has the boots').
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ipclab import Error
from ipclab.lab import bases, kernel, source, variants

pytestmark = pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch not installed")

PIPE_C = "".join(f"line {i}\n" for i in range(1, 41))


def make_patch(path: Path, rel: str, old: str, new: str) -> Path:
    """A -p1 unified diff made by diff(1) itself, so the fixture is a real patch."""
    a = path.parent / "a" / rel
    b = path.parent / "b" / rel
    for f, text in ((a, old), (b, new)):
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    out = subprocess.run(["diff", "-u", f"a/{rel}", f"b/{rel}"], cwd=path.parent,
                         capture_output=True, text=True).stdout
    shutil.rmtree(path.parent / "a")
    shutil.rmtree(path.parent / "b")
    path.write_text(out)
    return path


@pytest.fixture
def labdir(tmp_path, monkeypatch):
    """A fake repo kernel/ dir, whose kernel/patches is the default base's patch directory,
    and a fake kernel tree with two source files."""
    kdir = tmp_path / "kernel"
    for d in ("series", "patches", "config", "bases", "per-base/lts"):
        (kdir / d).mkdir(parents=True)
    (kdir / "per-base" / bases.DEFAULT_BASE).symlink_to(kdir / "patches")
    for b in (bases.DEFAULT_BASE, "lts"):
        (kdir / "bases" / b).write_text("package: linux-source-9.9\nversion: 9.9.1-1\n"
                                       "suite: sid\nrelease: 9.9.1\nsha256: 00\n")
    (kdir / "config" / "lab.config").write_text("CONFIG_SMP=y\n")
    monkeypatch.setattr(variants, "KERNEL_DIR", kdir)
    monkeypatch.setattr(bases, "BASES_DIR", kdir / "bases")
    monkeypatch.setattr(bases, "PATCHES_DIR", kdir / "per-base")
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    tree = tmp_path / "tree"
    (tree / "fs").mkdir(parents=True)
    (tree / "ipc").mkdir()
    (tree / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 117\nEXTRAVERSION =\n")
    (tree / "fs" / "pipe.c").write_text(PIPE_C)
    (tree / "ipc" / "mqueue.c").write_text("mq\n")
    old = 1_000_000_000 * 1_600_000_000
    for f in (tree / "fs" / "pipe.c", tree / "ipc" / "mqueue.c"):
        os.utime(f, ns=(old, old))
    work = tmp_path / "work"
    work.mkdir()
    (work / "state.json").write_text('{"applied": [], "touched": {}, "dirty": false}')
    src = source.Source(tree, work, "test", "6.12.117", managed=False)
    return kdir, src


def series(kdir, name, *patches):
    (kdir / "series" / name).write_text("# test\n" + "".join(p + "\n" for p in patches))
    return variants.load_variant(name)


def test_series_comments_and_fragments(labdir):
    kdir, _ = labdir
    make_patch(kdir / "patches" / "0001-x.patch", "fs/pipe.c", PIPE_C, PIPE_C.replace("line 5\n", "five\n"))
    (kdir / "config" / "debug.config").write_text("CONFIG_DEBUG_KERNEL=y\n")
    (kdir / "series" / "debug").write_text("0001-x.patch  # the patch\n\n# done\n")
    v = variants.load_variant("debug")
    assert v.patches == ["0001-x.patch"]
    assert v.fragments == ["lab.config", "debug.config"]
    assert v.config_name == "lab+debug"


def test_overlay_adds_its_fragment_and_lab_patch_to_any_variant(labdir):
    kdir, _ = labdir
    make_patch(kdir / "patches" / "0001-x.patch", "fs/pipe.c", PIPE_C, PIPE_C.replace("line 5\n", "five\n"))
    make_patch(kdir / "patches" / "lab-count.patch", "ipc/mqueue.c", "mq\n", "mq2\n")
    (kdir / "config" / "count.config").write_text("CONFIG_VM_EVENT_COUNTERS=y\n")
    (kdir / "config" / "debug.config").write_text("CONFIG_DEBUG_KERNEL=y\n")
    series(kdir, "x", "0001-x.patch")
    v = variants.load_variant("x+count")
    assert v.name == "x+count"
    assert v.patches == ["0001-x.patch", "lab-count.patch"]
    assert v.fragments == ["lab.config", "count.config"]
    assert v.config_name == "lab+count"
    # an overlay without a lab patch is config only; order is kept, repeats are not
    v = variants.load_variant("x+debug+count+debug")
    assert v.patches == ["0001-x.patch", "lab-count.patch"]
    assert v.fragments == ["lab.config", "debug.config", "count.config"]
    for bad in ("x+nope", "x+lab", "nope+count"):
        with pytest.raises(Error) as e:
            variants.load_variant(bad)
        assert e.value.code == 2


def test_patch_only_overlay_takes_the_piece_versions_its_series_needs(labdir):
    """An overlay whose fragment sets no option keeps the variant's config (and so its build
    directory); its pieces come in versions for the series patches that change their lines,
    taken by the patch's name; a base without its patch is a one-line error."""
    kdir, _ = labdir
    pdir = kdir / "patches"
    (kdir / "config" / "wc.config").write_text("# counters: a patch only\n")
    for name in ("0001-skip.patch", "0002-mq.patch", "lab-pre-x.patch", "lab-wc.patch",
                 "lab-wc--a.patch", "lab-wc--a@0001.patch", "lab-wc--a@lab-pre-x.patch",
                 "lab-wc--b.patch", "lab-wc--b@0002.patch"):
        make_patch(pdir / name, "ipc/mqueue.c", "mq\n", f"{name}\n")
    plain = series(kdir, "plain")
    v = variants.load_variant("plain+wc")
    assert v.patches == ["lab-wc.patch", "lab-wc--a.patch", "lab-wc--b.patch"]
    assert v.fragments == plain.fragments and v.config_name == plain.config_name
    series(kdir, "one", "0001-skip.patch")
    assert variants.load_variant("one+wc").patches[1:] == [
        "lab-wc.patch", "lab-wc--a@0001.patch", "lab-wc--b.patch"]
    series(kdir, "both", "0001-skip.patch", "0002-mq.patch")
    assert variants.load_variant("both+wc").patches[2:] == [
        "lab-wc.patch", "lab-wc--a@0001.patch", "lab-wc--b@0002.patch"]
    # a lab patch is named whole, as TAG.patch
    series(kdir, "pre", "lab-pre-x.patch")
    assert "lab-wc--a@lab-pre-x.patch" in variants.load_variant("pre+wc").patches
    series(kdir, "clash", "0001-skip.patch", "lab-pre-x.patch")
    with pytest.raises(Error, match="none is made for them together"):
        variants.load_variant("clash+wc")
    (kdir / "series" / "old").write_text("base: lts\n")
    with pytest.raises(Error, match="base lts has none") as e:
        variants.load_variant("old+wc")
    assert e.value.code == 2 and "\n" not in str(e.value)


def test_series_names_its_base_and_takes_that_base_s_patches(labdir):
    kdir, _ = labdir
    make_patch(kdir / "per-base" / "lts" / "old.patch", "fs/pipe.c", PIPE_C, PIPE_C + "x\n")
    (kdir / "series" / "old").write_text("# on the old base\nbase: lts\nold.patch\n")
    v = variants.load_variant("old")
    assert v.base == "lts" and v.patch_paths() == [kdir / "per-base" / "lts" / "old.patch"]
    assert variants.load_variant("old").name == "old"
    # Without a `base:` line a series builds on the default base, whose directory lacks it.
    (kdir / "series" / "new").write_text("old.patch\n")
    with pytest.raises(Error, match=f"no patch 'old.patch' in kernel/patches/{bases.DEFAULT_BASE}"):
        variants.load_variant("new")
    make_patch(kdir / "patches" / "new.patch", "fs/pipe.c", PIPE_C, PIPE_C + "y\n")
    for text, what in (("base: nope\n", "unknown base 'nope'"),
                       ("new.patch\nbase: lts\n", "comes before the patches")):
        (kdir / "series" / "bad").write_text(text)
        with pytest.raises(Error, match=what) as e:
            variants.load_variant("bad")
        assert e.value.code == 1


def test_unknown_variant_and_missing_patch_are_usage_errors(labdir):
    kdir, _ = labdir
    with pytest.raises(Error) as e:
        variants.load_variant("nope")
    assert e.value.code == 2
    (kdir / "series" / "bad").write_text("missing.patch\n")
    with pytest.raises(Error, match="missing.patch"):
        variants.load_variant("bad")


def test_switch_restores_only_touched_files_and_keeps_mtimes(labdir):
    kdir, src = labdir
    make_patch(kdir / "patches" / "p1.patch", "fs/pipe.c", PIPE_C, PIPE_C.replace("line 5\n", "five\n"))
    pipe, mq = src.tree / "fs" / "pipe.c", src.tree / "ipc" / "mqueue.c"
    mq_mtime = mq.stat().st_mtime_ns
    source.switch_tree(src, series(kdir, "x", "p1.patch"))
    assert "five\n" in pipe.read_text()
    patched_mtime = pipe.stat().st_mtime_ns
    source.switch_tree(src, series(kdir, "plain"))
    assert pipe.read_text() == PIPE_C
    # The restored file must look newer than objects built from the patched one ...
    assert pipe.stat().st_mtime_ns >= patched_mtime
    # ... and a file no series touched keeps its mtime, so make leaves it alone.
    assert mq.stat().st_mtime_ns == mq_mtime
    assert json.loads(src.state_path.read_text())["applied"] == []


def test_switch_between_identical_results_keeps_mtime(labdir):
    kdir, src = labdir
    new = PIPE_C.replace("line 5\n", "five\n")
    make_patch(kdir / "patches" / "a.patch", "fs/pipe.c", PIPE_C, new)
    make_patch(kdir / "patches" / "b.patch", "fs/pipe.c", PIPE_C, new)
    source.switch_tree(src, series(kdir, "va", "a.patch"))
    pipe = src.tree / "fs" / "pipe.c"
    os.utime(pipe, ns=(5_000, 5_000))
    source.switch_tree(src, series(kdir, "vb", "b.patch"))
    assert pipe.read_text() == new
    assert pipe.stat().st_mtime_ns == 5_000


def test_created_files_are_removed_on_switch(labdir):
    kdir, src = labdir
    p = kdir / "patches" / "new.patch"
    p.write_text("--- /dev/null\n+++ b/fs/new.c\n@@ -0,0 +1 @@\n+hello\n")
    source.switch_tree(src, series(kdir, "n", "new.patch"))
    assert (src.tree / "fs" / "new.c").read_text() == "hello\n"
    source.switch_tree(src, series(kdir, "plain"))
    assert not (src.tree / "fs" / "new.c").exists()


def test_failing_patch_names_patch_and_hunk_and_leaves_tree_pristine(labdir):
    kdir, src = labdir
    good = PIPE_C.replace("line 5\n", "five\n")
    make_patch(kdir / "patches" / "0001-ok.patch", "fs/pipe.c", PIPE_C, good)
    # Written against a different file: its second hunk cannot match.
    other = PIPE_C.replace("line 30\n", "thirty\n")
    make_patch(kdir / "patches" / "0002-bad.patch", "fs/pipe.c",
               other.replace("line 2\n", "two\n"), other.replace("line 2\n", "TWO\n").replace("thirty\n", "30\n"))
    v = series(kdir, "broken", "0001-ok.patch", "0002-bad.patch")
    with pytest.raises(Error) as e:
        source.switch_tree(src, v)
    msg = str(e.value)
    assert "0002-bad.patch" in msg and "fs/pipe.c" in msg and "hunk #1" in msg
    assert (src.tree / "fs" / "pipe.c").read_text() == PIPE_C
    assert json.loads(src.state_path.read_text()) == {"applied": [], "touched": {}, "dirty": False}


def test_interrupted_switch_is_repaired(labdir):
    kdir, src = labdir
    make_patch(kdir / "patches" / "p1.patch", "fs/pipe.c", PIPE_C, PIPE_C.replace("line 5\n", "five\n"))
    source.switch_tree(src, series(kdir, "x", "p1.patch"))
    st = json.loads(src.state_path.read_text())
    st["dirty"] = True
    src.state_path.write_text(json.dumps(st))
    source.switch_tree(src, series(kdir, "plain"))
    assert (src.tree / "fs" / "pipe.c").read_text() == PIPE_C


def test_image_key_follows_patch_content_and_config(labdir):
    kdir, src = labdir
    p = make_patch(kdir / "patches" / "p.patch", "fs/pipe.c", PIPE_C, PIPE_C.replace("line 5\n", "five\n"))
    v = series(kdir, "x", "p.patch")
    k1 = kernel.image_key(src, v)
    assert kernel.image_key(src, v) == k1
    p.write_text(p.read_text() + "\n")
    k2 = kernel.image_key(src, v)
    (kdir / "config" / "lab.config").write_text("CONFIG_SMP=y\nCONFIG_FUTEX=y\n")
    k3 = kernel.image_key(src, v)
    assert len({k1, k2, k3}) == 3


def test_arm64_builds_apart_from_x86(labdir):
    """--arch arm64: its own fragment after the others, build dir and image key (the x86 key
    is what it was before arm64 existed), and make cross-compiles."""
    kdir, src = labdir
    (kdir / "config" / "arch").mkdir()
    (kdir / "config" / "arch" / "arm64.config").write_text("CONFIG_SERIAL_AMBA_PL011=y\n")
    series(kdir, "x")
    x86, arm = variants.resolve("x"), variants.resolve("x", arch="arm64")
    assert [p.name for p in x86.fragment_paths()] == ["lab.config"]
    assert [p.name for p in arm.fragment_paths()] == ["lab.config", "arm64.config"]
    assert src.build_dir(x86) != src.build_dir(arm)
    assert src.build_dir(arm).name.endswith("@arm64")
    assert kernel.image_key(src, x86) != kernel.image_key(src, arm)
    import hashlib
    old = hashlib.sha256(f"{kernel.RECIPE}\0{src.ident}\0{kernel.config_digest(x86)}\0"
                         .encode()).hexdigest()[:20]
    assert kernel.image_key(src, x86) == old
    argv = kernel.make_argv(src, src.work, "Image", arch="arm64")
    assert "ARCH=arm64" in argv and "CROSS_COMPILE=aarch64-linux-gnu-" in argv
    assert kernel.image_path({"key": "k", "arch": "arm64"}).name == "Image"
    assert kernel.image_path({"key": "k"}).name == "bzImage"
    with pytest.raises(Error, match="--arch sparc"):
        variants.resolve("x", arch="sparc")


def test_the_kernels_make_inherits_no_flags_of_a_calling_make(tmp_path, monkeypatch):
    # `make test` runs the lab: the kernel's make must not print "Entering directory" into
    # what `make -s kernelrelease` prints (a fresh cache's build reads its release so).
    from types import SimpleNamespace
    from ipclab import proc
    tree = tmp_path / "linux"
    (tree / "sub").mkdir(parents=True)
    (tree / "Makefile").write_text("kernelrelease:\n\t@$(MAKE) -C sub kernelrelease\n")
    (tree / "sub" / "Makefile").write_text("kernelrelease:\n\t@echo 7.3.4\n")
    monkeypatch.setenv("MAKEFLAGS", "w")
    monkeypatch.setenv("MAKELEVEL", "1")
    argv = kernel.make_argv(SimpleNamespace(tree=tree), tmp_path / "build", "-s", "kernelrelease")
    assert proc.run(argv, 60, capture=True, cwd=tree).out.strip() == "7.3.4"
