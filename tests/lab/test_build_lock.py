# SPDX-License-Identifier: MIT
"""Two processes that need the same build build it once: the one that comes second waits on
the cache's lock (kernel.tree_lock) and then finds the image the first filed. What Slurm jobs
sharing one cache rely on. The compiler is faked (a `make` that takes a second and counts
itself); the lock, the cache and the two processes are real."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

DRIVER = r'''
import json, os, sys, time
from pathlib import Path
from ipclab.lab import kernel, variants
d = Path(sys.argv[1])


class Src:
    ident, tree = "fake-source", d / "tree"

    def build_dir(self, variant):
        return d / "build"


def fake_make(argv, timeout, cwd=None, logfile=None):
    with open(d / "builds", "a") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(1.5)


def file_image(src, variant, bdir, key, seconds, jobs, incremental):
    img = kernel.image_dir(key)
    img.mkdir(parents=True, exist_ok=True)
    (img / "bzImage").write_text("image")
    meta = {"key": key, "release": "7.3.4", "variant": variant.name}
    (img / "meta.json").write_text(json.dumps(meta))
    return meta


kernel.source.open_source = lambda tree, variant=None, create=True: Src()
kernel.source.switch_tree = lambda src, variant: []
kernel.source.run = fake_make
kernel.configure = lambda *a: False
kernel._file_image = file_image
print(json.dumps(kernel.build(variants.resolve("mainline"))))
'''


def start(tmp_path, env):
    return subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_processes_that_need_one_build_build_it_once(tmp_path):
    env = {**os.environ, "IPCLAB_CACHE": str(tmp_path / "cache")}
    first = start(tmp_path, env)
    t0 = time.monotonic()
    while not (tmp_path / "builds").exists():       # the first is building, the lock held
        assert first.poll() is None, first.communicate()
        assert time.monotonic() - t0 < 120, "the first build never started"
        time.sleep(0.05)
    second = start(tmp_path, env)
    outs = [p.communicate(timeout=120) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], outs
    metas = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    assert metas[0]["key"] == metas[1]["key"]
    assert len((tmp_path / "builds").read_text().split()) == 1, "built twice"
    assert "waiting for another build" in outs[1][1]
