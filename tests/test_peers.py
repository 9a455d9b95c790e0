# SPDX-License-Identifier: MIT
"""Live peers (ipclab/peers.py): the parsers read the programs' real output (recorded in
tests/fixtures/peers/), a missing program skips its cells, a failing or unreadable one fails
them, and a peers run shows its pairs and stands beside the seed tables."""
import csv
import io
import json
import os
import stat
from pathlib import Path

import pytest
from conftest import FIXTURES

from ipclab import cli, metrics, peers, report, results, runner, suites, views

PEER_FIXTURES = Path(FIXTURES) / "peers"


def recorded(name):
    return (PEER_FIXTURES / name).read_text()


def values(m):
    return {k: v["value"] for k, v in m.items()}


def test_every_metric_has_the_engine_shape():
    outs = {
        "perf-sched-pipe": recorded("perf-sched-pipe.txt"),
        "perf-sched-messaging": recorded("perf-sched-messaging.txt"),
        "pmqtest": recorded("pmqtest.txt"),
    }
    for p in peers.PAIRS:
        base = p.name.replace("-cpu0", "")
        text = outs.get(base) or recorded(base + ".txt")
        m = p.read(text, list(p.args), {})
        assert m, p.name
        for name, v in m.items():
            assert isinstance(v["value"], float) and v["better"] in ("higher", "lower", "none")
            assert isinstance(v["unit"], str)
        # the first metric is the one compare judges the peer by
        assert next(iter(m.values()))["better"] in ("higher", "lower"), p.name
        for meas in p.measures:
            assert metrics.metric_value({"metrics": m}, meas.peer) is not None, (p.name, meas)


def test_perf_pipe_reads_usecs_per_op():
    m = values(peers.read_perf_pipe(recorded("perf-sched-pipe.txt"), [], {}))
    text = recorded("perf-sched-pipe.txt")
    us = float(next(l.split()[0] for l in text.splitlines() if "usecs/op" in l))
    assert m["us_per_round_trip"] == us
    assert m["round_trips_per_s"] == pytest.approx(1e6 / us)
    assert m["round_trips"] == 2000


def test_perf_messaging_counts_messages_from_its_shape():
    m = values(peers.read_perf_messaging(recorded("perf-sched-messaging.txt"),
                                         ["--pipe", "-g", "1", "-l", "100"], {}))
    # one group of 20 senders, each writing 100 loops to each of 20 receivers
    assert m["messages"] == 20 * 20 * 100
    assert m["messages_per_s"] == pytest.approx(m["messages"] / m["total_s"])
    other = values(peers.read_perf_messaging(recorded("perf-sched-messaging.txt"),
                                             ["--nr_loops=200"], {}))
    assert other["messages"] == 2 * m["messages"]


def test_stress_ng_table_and_misc_metrics():
    t = peers.stress_ng_table(recorded("stress-ng-pipe.txt"), "pipe")
    assert t["bogo_ops"] == 20000
    assert t["ops_per_s"] > 0 and t["real_s"] > 0
    rate = t["misc"]["MB per sec pipe write rate"]
    m = values(peers.read_stress_ng_pipe(recorded("stress-ng-pipe.txt"), [], {}))
    # stress-ng's MB is 2^20 bytes; ours 10^6
    assert m["throughput"] == pytest.approx(rate * 2 ** 20 / 1e6)


def test_stress_ng_other_log_levels_and_spacing_read_the_same():
    text = recorded("stress-ng-splice.txt").replace("metrc:", "info: ").replace("  ", " \t ")
    m = values(peers.BY_NAME["stress-ng-splice"].read(text, [], {}))
    ref = values(peers.BY_NAME["stress-ng-splice"].read(recorded("stress-ng-splice.txt"), [], {}))
    assert m == ref


def test_stress_ng_pipeherd_reads_switches_per_pass():
    m = values(peers.read_stress_ng_pipeherd(recorded("stress-ng-pipeherd.txt"), [], {}))
    assert m["transfers_per_s"] > 0
    assert m["us_per_transfer"] == pytest.approx(1e6 / m["transfers_per_s"])
    assert "cs_per_transfer" in m
    # from switches per second, not from the two-decimal switches per op
    t = peers.stress_ng_table(recorded("stress-ng-pipeherd.txt"), "pipeherd")
    per_s = next(v for k, v in t["misc"].items() if k.startswith("context switches per sec"))
    assert m["cs_per_transfer"] == pytest.approx(per_s * t["real_s"] / t["bogo_ops"])
    no_rate = "\n".join(l for l in recorded("stress-ng-pipeherd.txt").splitlines()
                        if "per sec" not in l)
    rounded = next(v for k, v in t["misc"].items() if k.startswith("context switches per bogo"))
    assert values(peers.read_stress_ng_pipeherd(no_rate, [], {}))["cs_per_transfer"] == rounded


def test_pmqtest_prefers_its_json_to_the_rounded_text():
    text = recorded("pmqtest.txt")
    js = recorded("pmqtest.json")
    avg = json.loads(js)["thread"]["0"]["receiver"]["avg"]
    assert values(peers.read_pmqtest(text, [], {"json": js}))["latency_ns"] == \
        pytest.approx(avg * 1000)
    from_text = values(peers.read_pmqtest(text, [], {"json": ""}))["latency_ns"]
    assert from_text % 1000 == 0
    assert values(peers.read_pmqtest(text, [], {"json": "{broken"}))["latency_ns"] == from_text


@pytest.mark.parametrize("name,text", [
    ("perf-sched-pipe", "# Running 'sched/pipe' benchmark:\nperf: bad\n"),
    ("stress-ng-pipe", "stress-ng: info:  [1] dispatching hogs: 1 pipe\n"),
    ("stress-ng-pipeherd", recorded("stress-ng-pipe.txt")),
    ("stress-ng-mq", "stress-ng: metrc: [7] mq 0 0.00 0.00 0.00 0.00 0.00 0.00 0\n"),
    ("stress-ng-vm-splice", recorded("stress-ng-splice.txt")),
    ("pmqtest", ""),
    ("perf-sched-messaging", "     Total time: 0.000 [sec]\n"),
])
def test_unreadable_output_is_a_parse_error(name, text):
    with pytest.raises(peers.ParseError):
        peers.BY_NAME[name].read(text, [], {})


# ---- running a peer cell ------------------------------------------------------------------


def peer_cell(name):
    return next(c for c in suites.PEERS.cells(suites.QUICK) if c.key == "peer/" + name)


def fake_tool(tmp_path, name, body):
    d = tmp_path / "bin"
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return d


def test_a_missing_program_skips_its_cell(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    out = peers.run_cell(peer_cell("stress-ng-pipe"))
    assert out.status == "skipped"
    assert "stress-ng" in out.error and "install-deps.sh" in out.error


def test_a_peer_sample_has_the_engine_shape(tmp_path, monkeypatch):
    d = fake_tool(tmp_path, "stress-ng",
                  f"cat '{PEER_FIXTURES / 'stress-ng-pipe.txt'}' >&2\n")
    monkeypatch.setenv("PATH", f"{d}:{os.environ['PATH']}")
    out = peers.run_cell(peer_cell("stress-ng-pipe"))
    assert out.status == "ok", out.error
    (s,) = out.samples
    assert s["workload"] == "peer:stress-ng-pipe"
    assert s["metrics"]["throughput"]["unit"] == "MB/s"
    assert s["env"]["nproc"] >= 1 and s["env"]["kernel"]
    assert s["elapsed_s"] >= 0 and s["start"] <= s["end"]
    assert results._sample_problem(s) is None
    assert metrics.metrics_for({"workload": s["workload"], "samples": [s]})[0] == \
        "metrics.throughput"


def test_pmqtest_writes_the_json_file_it_is_given(tmp_path, monkeypatch):
    # the fake pmqtest copies the recorded JSON where --json= says
    d = fake_tool(tmp_path, "pmqtest",
                  'for a; do case "$a" in --json=*) cp "' + str(PEER_FIXTURES / "pmqtest.json")
                  + '" "${a#--json=}";; esac; done\ncat "' + str(PEER_FIXTURES / "pmqtest.txt")
                  + '"\n')
    monkeypatch.setenv("PATH", f"{d}:{os.environ['PATH']}")
    out = peers.run_cell(peer_cell("pmqtest"))
    assert out.status == "ok", out.error
    avg = json.loads(recorded("pmqtest.json"))["thread"]["0"]["receiver"]["avg"]
    assert out.samples[0]["metrics"]["latency_ns"]["value"] == pytest.approx(avg * 1000)


@pytest.mark.parametrize("body,why", [
    ("echo 'stress-ng: fail: [1] pipe: no resources' >&2; exit 3\n", "exit 3: stress-ng: fail"),
    ("echo hello\n", "cannot read stress-ng's output"),
])
def test_a_failing_or_unreadable_program_fails_its_cell(tmp_path, monkeypatch, body, why):
    d = fake_tool(tmp_path, "stress-ng", body)
    monkeypatch.setenv("PATH", f"{d}:{os.environ['PATH']}")
    out = peers.run_cell(peer_cell("stress-ng-pipe"))
    assert out.status == "failed" and why in out.error


def test_the_peers_suite_pairs_every_peer_with_an_engine_cell(fake_engine):
    cells = suites.PEERS.cells(suites.QUICK)
    keys = [c.key for c in cells]
    assert len(keys) == len(set(keys))
    for p in peers.PAIRS:
        assert p.key in keys and p.ours[0] in keys
        assert p.tool in peers.PACKAGES
    for c in cells:
        assert peers.is_peer(c) == c.key.startswith("peer/")
        if peers.is_peer(c):
            pair = peers.pair_of(c)
            argv = runner.argv_for("ipcbench", c)
            assert argv[argv.index(pair.tool):] == [pair.tool] + list(pair.args)
            assert (argv[0] == "taskset") == bool(pair.pin)


def test_a_peers_run_without_the_programs_skips_them_and_runs_ours(tmp_path, monkeypatch,
                                                                      fake_engine):
    monkeypatch.setattr(peers.shutil, "which", lambda name: None)
    out = tmp_path / "p.json"
    rc = cli.main(["run", "peers", "--reps", "2", "--warmups", "0", "-o", str(out),
                   "--quiet", "--no-report"])
    assert rc == 0
    res = results.load(out)
    for c in res["cells"]:
        if peers.is_peer(c):
            assert c["status"] == "skipped" and "not installed" in c["error"]
        else:
            assert c["status"] == "ok" and len(results.measured(c)) == 2
    # and it resumes: a peer workload is a known one
    assert runner.resumable(res, str(out))


# ---- showing a peers run ------------------------------------------------------------------


def _sample(workload, metrics_, **extra):
    return {"workload": workload, "metrics": {k: {"value": v, "unit": u, "better": b}
                                             for k, (v, u, b) in metrics_.items()}, **extra}


def peers_run(ours_rate=80000.0, peer_rate=100000.0, n=5):
    pair = peers.BY_NAME["perf-sched-pipe"]
    key, workload, args = pair.ours
    ours = [_sample(workload, {"round_trips_per_s": (ours_rate * (1 + 0.01 * i),
                                                     "round trips/s", "higher")})
            for i in range(n)]
    peer = [_sample(pair.workload, {"round_trips_per_s": (peer_rate * (1 + 0.01 * i),
                                                          "round trips/s", "higher")})
            for i in range(n)]
    return {"schema": results.SCHEMA, "id": "peers-test", "suite": "peers", "mode": "quick",
            "meta": {}, "env": {}, "plan": {"reps": n, "warmups": 0, "order_seed": 1},
            "complete": True, "cells": [
                {"key": key, "suite": "peers", "workload": workload, "args": list(args),
                 "samples": ours, "status": "ok", "error": ""},
                {"key": pair.key, "suite": "peers", "workload": pair.workload,
                 "args": [pair.tool] + list(pair.args), "samples": peer, "status": "ok",
                 "error": ""},
                {"key": "peer/pmqtest", "suite": "peers", "workload": "peer:pmqtest",
                 "args": ["pmqtest"], "samples": [], "status": "skipped",
                 "error": "pmqtest is not installed"}]}


def seeds_run():
    cell = {"key": "pipe-context/copies=1", "suite": "seed-skip-wakeups",
            "workload": "pipe-context", "args": [], "status": "ok", "error": "",
            "samples": [_sample("pipe-context", {"round_trips_per_s": (70000.0 + i,
                                                                       "round trips/s",
                                                                       "higher")})
                        for i in range(5)]}
    return {"schema": results.SCHEMA, "id": "seeds-test", "suite": "seed-skip-wakeups",
            "mode": "quick", "meta": {}, "env": {}, "plan": {"reps": 5}, "complete": True,
            "cells": [cell]}


def test_a_peers_run_shows_its_pairs_with_the_ratio():
    rows = views.peer_rows(peers_run())
    (r,) = rows
    assert r.ratio == pytest.approx(0.8)
    buf = io.StringIO()
    report.render_views(peers_run(), buf)
    text = buf.getvalue()
    assert "Live peers" in text and "perf-sched-pipe" in text and "0.800" in text
    assert "peer/pmqtest: skipped: pmqtest is not installed" in text
    # the paired cells are not listed again in the generic table
    assert "cell  metric" not in text


def test_seed_tables_show_live_peers_only_when_given_a_peers_run(fake_engine):
    plain, live = io.StringIO(), io.StringIO()
    report.render_views(seeds_run(), plain)
    report.render_views(seeds_run(), live, peers=peers_run())
    assert "peer" not in plain.getvalue()
    # the static figures of another machine are never shown as this machine's
    assert "peer on this machine" not in plain.getvalue() + live.getvalue()
    line = next(l for l in live.getvalue().splitlines() if l.lstrip().startswith("pipe context (r"))
    assert "[ours 81600 ±" in line and "/ peer 102000 ±" in line and "= 0.800]" in line
    assert "Live peer perf-sched-pipe" in live.getvalue()


def test_show_peers_wants_a_peers_run(tmp_path, capsys, fake_engine):
    seeds = tmp_path / "s.json"
    results.save(seeds_run(), seeds)
    assert cli.main(["show", str(seeds), "--peers", str(seeds)]) == 2
    assert "not a peers run" in capsys.readouterr().err
    p = tmp_path / "p.json"
    results.save(peers_run(), p)
    assert cli.main(["show", str(seeds), "--peers", str(p)]) == 0
    assert "/ peer " in capsys.readouterr().out
    # and the CSV carries the live peer's median beside ours
    assert cli.main(["show", str(seeds), "--peers", str(p), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    (row,) = [r for r in rows if r["key"] == "pipe-context/copies=1" and r["peer"]]
    assert float(row["peer"]) == pytest.approx(102000.0)


def test_metric_paths_add():
    s = {"metrics": {"a": {"value": 2.0}, "b": {"value": 3.0}}}
    assert metrics.metric_value(s, "metrics.a + metrics.b") == 5.0
    assert metrics.metric_value(s, "metrics.a + metrics.c") is None
    assert metrics.metric_value(s, "metrics.a / metrics.b * 3 + metrics.b") == 5.0


def test_show_json_carries_the_pairs(tmp_path, capsys):
    p = tmp_path / "p.json"
    results.save(peers_run(ours_rate=80000.0, peer_rate=100000.0, n=10), p)
    assert cli.main(["show", str(p), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    (pair,) = rec["pairs"]
    assert pair["pair"] == "perf-sched-pipe" and pair["figure"] == "round trips/s"
    assert pair["ratio"] == pytest.approx(0.8)
    lo, hi = pair["ci"]
    assert lo <= pair["ratio"] <= hi
    assert pair["n"] == pair["ours_n"] == pair["peer_n"] == 10
    assert pair["ours_median"] == pytest.approx(80000.0 * 1.045)
    assert pair["note"] == peers.BY_NAME["perf-sched-pipe"].differs
    # a run with no peer cell has no pairs
    s = tmp_path / "s.json"
    results.save(seeds_run(), s)
    assert cli.main(["show", str(s), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pairs"] == []


def test_every_pair_runs_the_peers_own_shape():
    # the engine cell of each stress-ng pair names the shape option that makes it the peer's
    shapes = {"stress-ng-pipe": "--packet", "stress-ng-pipeherd": "--no-decoy",
              "stress-ng-mq": "--stream", "stress-ng-vm-splice": "vmsplice",
              "stress-ng-splice": "splice", "stress-ng-tee": "tee", "pmqtest": "--receiver",
              "perf-sched-messaging": "messaging"}
    for name, marker in shapes.items():
        _, workload, args = peers.BY_NAME[name].ours
        assert marker == workload or marker in args, name
    for p in peers.PAIRS:
        if p.pin:
            _, _, args = p.ours
            assert "--cpus" in args and args[args.index("--cpus") + 1] == f"{p.pin},{p.pin}"
