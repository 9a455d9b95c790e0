# SPDX-License-Identifier: MIT
"""Issue 30, item 11: ipclab is an installable package with an `ipclab` command."""
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import ROOT

from ipclab import engine


def test_the_console_script_is_the_module_entry():
    project = tomllib.loads((Path(ROOT) / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"ipclab": "ipclab.__main__:main"}
    # the entry runs the command line: its --version, in a fresh interpreter, from elsewhere
    p = subprocess.run([sys.executable, "-c", "from ipclab.__main__ import main; main()",
                        "--version"], capture_output=True, text=True, cwd="/",
                       env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("ipclab "), p.stderr


def test_the_engine_is_the_checkouts_else_the_one_on_path(tmp_path, monkeypatch):
    monkeypatch.delenv("IPCBENCH", raising=False)
    assert engine.default_engine_path() == str(Path(ROOT) / "bench" / "ipcbench") or \
        not (Path(ROOT) / "bench" / "ipcbench").exists()
    # installed on its own (no bench/ beside the package): `ipcbench` on PATH
    monkeypatch.setattr(engine, "ROOT", tmp_path)
    (tmp_path / "bin").mkdir()
    on_path = tmp_path / "bin" / "ipcbench"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert engine.default_engine_path() == str(on_path)
    monkeypatch.setenv("IPCBENCH", "/elsewhere/ipcbench")
    assert engine.default_engine_path() == "/elsewhere/ipcbench"


def test_hints_name_the_ipclab_command():
    for path in sorted((Path(ROOT) / "ipclab").rglob("*.py")):
        text = path.read_text()
        assert "python -m ipclab run" not in text and "python -m ipclab show" not in text, path
