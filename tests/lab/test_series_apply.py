# SPDX-License-Identifier: MIT
"""Every series of every base applies to that base's tarball, in order, and so does every
overlay's lab patch (lab-O.patch of an overlay O) on the plain base, and every variant of a
base that has the wakeup counters with them on top (the census's VARIANT+wakeup-counters, whose
pieces come in versions for the series patches that change their lines): a check that takes one
pass over each tarball instead of a kernel build, so that `make test` keeps the base it does
not boot (lts) honest too."""

import shutil
import subprocess

import pytest

from ipclab.lab import bases, source, variants

CASES = [(b, v) for v in variants.list_variants()
         for b in [variants.load_variant(v).base]] + \
        [(b, p.name) for b in bases.names()
         for p in sorted(bases.load(b).patch_dir.glob("lab-*.patch"))
         if variants.is_overlay(p.stem.removeprefix("lab-"))] + \
        [(b, f"{v}+wakeup-counters") for v in variants.list_variants()
         for b in [variants.load_variant(v).base]
         if variants.overlay_patches("wakeup-counters", b, [])]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """Per base: a directory with every file any patch of that base touches, as the tarball
    has it."""
    trees = {}

    def tree(base):
        if base in trees:
            return trees[base]
        b = bases.load(base)
        found = bases.tarball(b)
        if found is None:
            pytest.skip(f"base {base}'s source missing (make lab-deps)")
        wanted = sorted({rel for p in b.patch_dir.glob("*.patch")
                         for rel, kind in source.patch_files(p) if kind != "create"})
        out = tmp_path_factory.mktemp(f"pristine-{base}")
        r = subprocess.run(["tar", "-xJf", str(found.path), "-C", str(out),
                            "--strip-components=1", "--wildcards",
                            *(f"*/{rel}" for rel in wanted)],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        trees[base] = out
        return out
    return tree


@pytest.mark.parametrize("base, what", CASES, ids=[f"{b}:{w}" for b, w in CASES])
def test_applies_to_its_base(base, what, pristine, tmp_path):
    work = tmp_path / "tree"
    shutil.copytree(pristine(base), work, symlinks=True)
    if what.endswith(".patch"):
        patches = [bases.load(base).patch_dir / what]
    else:
        patches = variants.resolve(what).patch_paths()
    for p in patches:
        # Without fuzz, as `git am` applies a mail: a patch that needs fuzz has gone stale.
        argv = source.patch_argv(work, p, dry=False) + ["--fuzz=0"]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, source.explain_patch_failure(p, r.stdout + r.stderr)
