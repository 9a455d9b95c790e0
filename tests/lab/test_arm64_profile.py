# SPDX-License-Identifier: MIT
"""`--profile` in an arm64 guest (ipclab/lab/arm64/suite.py), with no build and no boot: the
init's marked runs in the job, and on the host the profile read back from what the guest
left, its windows named by an arm64 System.map, with the A64 events per function."""

import io
import json
from pathlib import Path

import pytest

from ipclab import peers, profile, suites
from ipclab.cli import main
from ipclab.deterministic import cost
from ipclab.lab import ab, kernel, vm
from ipclab.lab.arm64 import guest as arm64_guest, suite
from ipclab.lab.arm64 import steps as init_steps
from ipclab.report import lab as labreport

# A64 fields with the plugin's memory model off, as a deterministic boot counts them.
FIELDS = cost.A64_FIELDS[:13]
# arm64 kernel text as a tiny 7.3 image lays it out; the blocks below start inside them.
SYSTEM_MAP = ("ffff800080000000 T _text\n"
              "ffff800080010000 T el0_svc\n"
              "ffff800080010400 t anon_pipe_write\n"
              "ffff800080010c00 T anon_pipe_read\n"
              "ffff800080020000 D some_data\n")
BLOCKS = {"el0_svc": 0xffff800080010000 + 0x40, "anon_pipe_write": 0xffff800080010400 + 0x88,
          "anon_pipe_read": 0xffff800080010c00}
SAMPLE = {"metrics": {"loops": 1000, "round_trips": 1000, "writes": 1000,
                      "empty_messages": 500, "full_messages": 500},
          "env": {"clock": "icount shift=0"}}


def job_lines(text):
    return [line.split("\t") for line in text.splitlines()]


def profiled_job():
    return ab.suite_job("icount-check", vm.DETERMINISTIC, reps=2, warmups=1, profile=True,
                        arch="arm64")


def test_the_profile_runs_come_after_the_plan_without_the_mark_file():
    """Each cell once more, in the cells' order, as marked steps after every run of the plan;
    the engine's mark file (9p) is dropped from their environment first."""
    job = profiled_job()
    assert job.profile_by == "marker"
    _, cells, steps = suite.plan(job, order_seed=7)
    marked = suite.profile_steps(cells)
    assert [cell.key for _, cell, _ in marked] == [c.key for c in cells]
    assert [name for name, _, _ in marked] == [f"p{i:05d}" for i in range(len(cells))]
    env = {"IPCBENCH_CLOCK": "icount shift=0", "IPCBENCH_MARK": "/shared/marks"}
    lines = job_lines(init_steps.job_text(env, "madvise", vm.DETERMINISTIC, steps,
                                     marked=[(n, argv) for n, _, argv in marked]))
    kinds = [line[0] for line in lines]
    last_run = len(kinds) - 1 - kinds[::-1].index("run")
    assert lines[last_run + 1] == ["unset", "IPCBENCH_MARK"]
    assert lines[last_run + 2:] == [["marked", n, *argv] for n, _, argv in marked]
    assert all(argv[0] == arm64_guest.GUEST_ENGINE and "--json" in argv for _, _, argv in marked)
    plain = job_lines(init_steps.job_text(env, "madvise", vm.DETERMINISTIC, steps))
    assert not [line for line in plain if line[0] in ("unset", "marked")]


def test_the_peers_cells_take_no_profile_window():
    """The guest has no peer programs: their cells get no marked run, and the cells after
    them keep contiguous names, so the i-th marked run is the plugin's window 2i + 1."""
    _, _, cells, _, _ = ab.runner.plan("icount-check")
    peer = next(c for c in suites.SUITES["peers"].cells(suites.QUICK) if peers.is_peer(c))
    marked = suite.profile_steps([cells[0], peer, cells[1]])
    assert [(name, cell.key) for name, cell, _ in marked] == [("p00000", cells[0].key),
                                                              ("p00001", cells[1].key)]


def test_a_timed_arm64_profile_is_refused_before_a_build(monkeypatch, capsys):
    monkeypatch.setattr(kernel, "obtain", lambda *a, **k: pytest.fail("built"))
    assert main(["ab", "mainline", "mainline-write-cost", "--arch", "arm64", "--suite",
                 "icount-check", "--profile"]) == 2
    assert "--profile on arm64 needs --deterministic" in capsys.readouterr().err
    with pytest.raises(suite.Error, match="needs --deterministic"):
        suite.check_job(ab.suite_job("icount-check", vm.TIMED, profile=True))


def counts_line(counts):
    return " ".join(str(counts.get(f, 0)) for f in FIELDS)


def plugin_file(marked, extra):
    """What the plugin writes for the guest's marked runs: window 2i + 1 is the i-th run's,
    each function's block with its instructions and barriers; `extra` instructions more per
    operation in anon_pipe_write."""
    text = f"# {cost.PLUGIN_SCHEMA} fields: {' '.join(FIELDS)}\n"
    for i, _ in enumerate(marked):
        text += f"window {2 * i}\nuser {counts_line({'insns': 7})}\n"
        rows = {"el0_svc": {"insns": 50000 + 1000 * i, "dsb": 2000, "isb": 2000},
                "anon_pipe_write": {"insns": 128000 + extra * 1000, "dmb_ish": 1000,
                                    "lse": 1000, "daif": 2000},
                "anon_pipe_read": {"insns": 90000, "isb": 1000}}
        text += f"window {2 * i + 1}\n" + "".join(
            f"{BLOCKS[fn]:x} {counts_line(c)}\n" for fn, c in rows.items())
        text += f"user {counts_line({'insns': 40000})}\n"
    return text


def fake_guest(extra=0, killed=None):
    """vm.boot's stand-in: the init's job run as the init would leave it, the plugin's file
    beside it; the marked run named `killed` dies of SIGKILL (its window is still made)."""
    def boot(meta, accel, argv, *, shared, launcher, insn_counts, **kw):
        lines = job_lines((shared / arm64_guest.JOB).read_text())
        marked = [line for line in lines if line[0] == "marked"]
        for kind, name, *_ in (line for line in lines if line[0] in ("run", "marked")):
            status = 9 if name == killed else 0             # wait status: killed / exit 0
            (shared / f"{name}.rc").write_text(f"{status}\n")
            (shared / f"{name}.out").write_text(json.dumps(SAMPLE) + "\n")
            (shared / f"{name}.err").write_text("")
        (shared / "started").write_text("")
        insn_counts.write_text(plugin_file(marked, extra))
        return vm.Boot(meta["variant"], "7.3.4", "tcg", shared, True, 0, None, [], "", {},
                       {"machine": "aarch64", "release": "7.3.4", "nproc": 1})
    return boot


def profiled_boot(tmp_path, monkeypatch, name, **guest):
    monkeypatch.setattr(vm, "boot", fake_guest(**guest))
    meta = {"variant": "mainline", "key": "k-arm64", "arch": "arm64", "release": "7.3.4",
            "patches": []}
    out = tmp_path / f"{name}.json"
    res, b = ab.run_suite_boot(meta, "tcg", profiled_job(), out, clock=vm.DETERMINISTIC)
    assert b.ok and all(c["status"] == "ok" for c in res["cells"])
    return profile.load(ab.profile_path(out))


@pytest.fixture
def image(tmp_path, monkeypatch):
    monkeypatch.setenv("IPCLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(arm64_guest, "initramfs", lambda: tmp_path / "initramfs.cpio")
    kernel.image_dir("k-arm64").mkdir(parents=True)
    (kernel.image_dir("k-arm64") / "System.map").write_text(SYSTEM_MAP)


def test_the_guest_s_marked_runs_become_a64_counts_per_function(tmp_path, monkeypatch, image):
    """ab's host side of an arm64 boot: the profile the guest's runs leave, each cell's
    window named by the image's System.map, per operation; a marked run that died fails its
    own cell and no other's window."""
    prof = profiled_boot(tmp_path, monkeypatch, "base", killed="p00001")
    assert prof["event"] == "insncount" and len(prof["order"]) == 4
    first, dead, third, _ = (prof["cells"][k] for k in prof["order"])
    assert "killed by signal 9" in dead["error"] and "functions" not in dead
    assert first["ops"] == 1000 and first["exact"]
    assert first["functions"] == {"el0_svc": 50000, "anon_pipe_write": 128000,
                                  "anon_pipe_read": 90000, "[user space]": 40000}
    assert third["functions"]["el0_svc"] == 52000          # window 5, not window 3's
    costs = first["costs"]
    assert (costs["el0_svc"]["dsb"], costs["el0_svc"]["isb"]) == (2000, 2000)
    assert costs["anon_pipe_write"]["dmb_ish"] == 1000 and costs["anon_pipe_read"]["isb"] == 1000
    assert costs["anon_pipe_write"]["atomics"] == 1000 and "est_cycles" not in costs["el0_svc"]


def test_ab_prints_where_an_arm64_patch_s_instructions_went(tmp_path, monkeypatch, image):
    base = profiled_boot(tmp_path, monkeypatch, "base")
    new = profiled_boot(tmp_path, monkeypatch, "new", extra=33)
    out = io.StringIO()
    labreport.render_profile_diff(base, new, out)
    text = out.getvalue()
    rows = [line.split() for line in text.splitlines()
            if line.strip().startswith("anon_pipe_write")]
    assert rows and rows[0][1:4] == ["128.0", "161.0", "+33.0"]
    assert "Where the costs went" in text and "counted, not priced" in text
    head = next(line for line in text.splitlines() if line.strip().startswith("function")
                and "dsb" in line)
    assert "isb" in head and "dmb ish" in head


def test_the_init_knows_the_marked_and_unset_steps():
    """guest-init.c reads every step kind the job writes (an unknown one is only noted)."""
    source = Path(arm64_guest.GUEST_INIT).read_text()
    for kind in ("unset", "marked"):
        assert f'"{kind}"' in source
    assert "SYS_swapoff" in source and profile.MARKER_SYMBOL.endswith("swapoff")
