# SPDX-License-Identifier: MIT
"""Adding a workload, a suite and a kernel variant takes exactly the files that
docs/architecture.md names, and nothing else: a copy of the project gets each one, the
test checks that only those files differ from the original, and the copy then runs the new
suite on the new workload and lists (and dry-runs) the new variant."""
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from ipclab.lab import bases

ROOT = Path(ROOT)
EXTEND = Path(FIXTURES) / "extend"
COPIED = ["ipclab", "bench/src", "bench/Makefile", "kernel/bases", "kernel/series", "kernel/patches",
          "kernel/config", "kernel/qemu-plugin", "scripts/guest-run.py"]
BUILT = re.compile(r"(\.o|\.d|\.pyc|/ipcbench)$|__pycache__")


def docs_say(what):
    """The files docs/architecture.md says adding `what` takes."""
    for line in (ROOT / "docs" / "architecture.md").read_text().splitlines():
        if line.startswith(f"| {what} |"):
            return re.findall(r"`([^`]+)`", line.split("|")[2])
    raise AssertionError(f"docs/architecture.md has no row for {what!r}")


def digest(tree):
    out = {}
    for top in COPIED:
        base = tree / top
        for p in ([base] if base.is_file() else sorted(base.rglob("*"))):
            rel = p.relative_to(tree).as_posix()
            if p.is_file() and not BUILT.search(rel):
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def changed(proj):
    a, b = digest(ROOT), digest(proj)
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def expand(paths, **names):
    return sorted(p.replace("<file>", names.get("file", "<file>"))
                  .replace("<variant>", names.get("variant", "<variant>"))
                  .replace("<patch>", names.get("patch", "<patch>"))
                  .replace("<base>", names.get("base", "<base>")) for p in paths)


@pytest.fixture
def project(tmp_path):
    proj = tmp_path / "proj"
    for top in COPIED:
        src, dst = ROOT / top, proj / top
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.o", "*.d", "__pycache__"))
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    assert changed(proj) == []
    return proj


def ipclab(proj, *argv, cwd):
    env = dict(os.environ, PYTHONPATH=str(proj), IPCLAB_CACHE=str(cwd / "cache"))
    env.pop("IPCBENCH", None)
    return subprocess.run([sys.executable, "-m", "ipclab", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_new_workload_suite_and_variant_take_the_files_the_docs_name(project, tmp_path):
    proj = project
    # A workload: its file, and its entry in the engine's registry.
    shutil.copy(EXTEND / "pipe_echo.c", proj / "bench/src/pipe_echo.c")
    main_c = proj / "bench/src/main.c"
    text = main_c.read_text()
    text = text.replace("extern const struct bench ", "extern const struct bench bench_pipe_echo, ", 1)
    text = text.replace("static const struct bench *const benches[] = {\n",
                        "static const struct bench *const benches[] = {\n\t&bench_pipe_echo,\n", 1)
    main_c.write_text(text)
    assert changed(proj) == expand(docs_say("a workload"), file="pipe_echo")

    # A suite: one definition where suites are defined.
    with open(proj / "ipclab/suites.py", "a") as f:
        f.write('\n\nregister(Suite("echo-check", "pipe-echo, twice", make_cells=lambda mode: [\n'
                '    Cell("pipe-echo/size=%d" % n, "pipe-echo", ["--size", str(n), "--count",'
                ' "2000"], est_s=0.1) for n in (64, 512)]))\n')
    assert changed(proj) == sorted(expand(docs_say("a workload"), file="pipe_echo")
                                   + docs_say("a suite"))

    # A kernel variant: its series file and its patch.
    # On the default base, mainline: its series file needs no `base:` line.
    shutil.copy(EXTEND / "echo.patch", proj / "kernel/patches/mainline/echo-fixture.patch")
    (proj / "kernel/series/echo").write_text("echo-fixture.patch\n")
    assert changed(proj) == sorted(expand(docs_say("a workload"), file="pipe_echo")
                                   + docs_say("a suite")
                                   + expand(docs_say("a kernel variant"), variant="echo",
                                            patch="echo-fixture.patch", base="mainline"))

    build = subprocess.run(["make", "-s", "-C", str(proj / "bench")], capture_output=True,
                           text=True, timeout=600)
    assert build.returncode == 0, build.stderr
    work = tmp_path / "work"
    work.mkdir()

    r = ipclab(proj, "suites", cwd=work)
    assert r.returncode == 0 and "echo-check:" in r.stdout and "pipe-echo" in r.stdout
    r = ipclab(proj, "run", "echo-check", "--reps", "2", "--warmups", "0", "--quiet",
               "--no-report", "-o", "echo.json", cwd=work)
    assert r.returncode == 0, r.stderr
    r = ipclab(proj, "show", "echo.json", cwd=work)
    assert r.returncode == 0 and "pipe-echo/size=512" in r.stdout and "echoes_per_s" in r.stdout
    r = ipclab(proj, "run", "pipe-echo", "--reps", "1", "--warmups", "0", "--quiet",
               "--no-report", "-o", "one.json", "--", "--count", "10", cwd=work)
    assert r.returncode == 0, r.stderr

    r = ipclab(proj, "kernel", "list", cwd=work)
    assert r.returncode == 0 and re.search(r"^echo\b", r.stdout, re.M), r.stdout
    assert "echo-fixture.patch" in r.stdout
    if bases.tarball(bases.load("mainline")) is None:
        pytest.skip("mainline's tarball missing (make lab-deps): the variant's dry run needs it")
    r = ipclab(proj, "vm", "run", "echo", "echo-check", "--deterministic", "--dry-run",
               cwd=work)
    assert r.returncode == 0, r.stderr
    assert "echo-fixture.patch" in r.stderr and "echo-check" in r.stderr
