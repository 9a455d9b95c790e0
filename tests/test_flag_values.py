# SPDX-License-Identifier: MIT
"""Issue 42, Low: `--warmup false` and its kind. An option that takes no value given one
(`--quiet false`) is refused, not read as the suite "false"; `--warmup` is not taken as
short for --warmups, since the engine's --warmup means something else. One line, exit 2,
nothing run."""

import pytest

from ipclab.cli import main


@pytest.mark.parametrize("argv", [
    ["run", "--quiet", "false"], ["run", "seeds", "--dry-run", "no"],
    ["compare", "a.json", "b.json", "--common", "FALSE"],
    ["ab", "lts", "--deterministic", "false"], ["report", "r.json", "--force", "off"],
])
def test_a_flag_given_a_boolean_is_refused(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "takes no value" in err, err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("argv", [["run", "--warmup", "false"], ["run", "--warmup", "2"],
                                  ["vm", "run", "lts", "--warmup", "1"],
                                  ["ab", "lts", "mainline", "--warmup", "1"]])
def test_warmup_is_not_short_for_warmups(argv, fake_engine, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--warmup is the engine's option" in err and "after `--`" in err, err
    assert not list(tmp_path.iterdir())


def test_engine_warmup_after_the_double_dash_is_the_engines(fake_engine, tmp_path,
                                                            monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "pipe-throughput", "--dry-run", "--", "--warmup", "2"]) == 0
    assert "--warmup 2" in capsys.readouterr().out
