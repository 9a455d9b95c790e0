# SPDX-License-Identifier: MIT
"""Every table in the patch series is what its record gives (scripts/series-tables), and
shows every row of the record that it selects: no figure in a mail is typed by hand, and no
measured row, the worse ones included, is left out."""
import json
import re
import subprocess
import sys

import pytest

from ipclab import Error
from ipclab.report import series, series_patch, series_records


@pytest.mark.parametrize("table", series.TABLES, ids=lambda t: t.name)
def test_a_table_in_a_patch_is_its_record_rendered(table):
    now = series_patch.in_patch(table)
    assert now is not None, f"{table.patch} has no table {table.name}: run {series.REWRITE}"
    assert now == series.render(table), \
        f"table {table.name} in {table.patch} differs from {table.record}: run {series.REWRITE}"


@pytest.mark.parametrize("table", series.TABLES, ids=lambda t: t.name)
def test_a_table_shows_every_row_and_kernel_of_its_record(table):
    record = series.read(table.record_path)
    # Words as a mail wraps them: a workload the census never saw at a site is named in
    # the caption, which wraps.
    text = " ".join(" ".join(series.render(table)).split())
    if record["kind"] in (series.DETERMINISTIC_ROWS, series.TIMED_ROWS):
        rows = [series.row_name(f"{r['key']} | {r['path']}") for r in record["rows"]
                if table.rows is None or table.rows(r)]
    elif record["kind"] == series.DISASSEMBLY:
        rows = [f"{f}()" for f in record["rows"]]
    elif record["kind"] == series.CENSUS:
        rows = [series.WORKLOAD_NAMES.get(r, r) for r in record["rows"]]
    else:
        rows = [series.row_name(r) for r in record["rows"]]
    assert rows
    for name in rows:
        assert " ".join(name.split()) in text
    for variant, _ in table.columns:
        assert any(k.get("name", k["variant"]) == variant for k in record["kernels"])


@pytest.mark.parametrize("name", sorted(p.name for p in series.RECORDS.glob("*.json")))
def test_a_record_says_how_it_was_measured(name):
    record = series.read(series.RECORDS / name)
    booted = record["kind"] != series.DISASSEMBLY
    for field in ("commands", "commit", "machine", "release", "config", "arch", "mode") + (
            ("cpus", "qemu") if booted else ("compiler",)):
        assert record.get(field), f"{name}: no {field}"
    for k in record["kernels"]:
        assert k.get("raw" if booted else "object"), \
            f"{name}: {k['variant']} does not say where its raw run or object was"
        assert all(c.get("n") for c in k["cells"].values())


def test_every_record_is_read_by_a_table_or_a_measured_page():
    from ipclab.report import measured
    used = {t.record for t in series.TABLES}
    used |= {r.name for p in measured.PAGES for r in (p.record if isinstance(p.record, tuple)
                                                      else (p.record,))}
    assert {p.name for p in series.RECORDS.glob("*.json")} <= used


def test_a_changed_figure_is_caught(tmp_path, monkeypatch):
    table = series.TABLES[0]
    copy = tmp_path / table.patch
    text = table.patch_path.read_text()
    want = series.render(table)
    line = next(x for x in want if re.search(r"\d+\.\d+%", x))
    copy.write_text(text.replace(line, re.sub(r"(\d)%", lambda m: str((int(m[1]) + 1) % 10)
                                              + "%", line, count=1)))
    monkeypatch.setattr(series, "PATCHES", tmp_path)
    assert series_patch.in_patch(table) != want
    assert series_patch.rewrite(table)
    assert series_patch.in_patch(table) == want
    assert copy.read_text() == text


def test_a_table_missing_from_its_patch_is_a_one_line_error(tmp_path, monkeypatch):
    table = series.TABLES[0]
    (tmp_path / table.patch).write_text("Subject: [PATCH 0/2] nothing\n\nno table here\n")
    monkeypatch.setattr(series, "PATCHES", tmp_path)
    assert series_patch.in_patch(table) is None
    with pytest.raises(Error, match="no single block"):
        series_patch.rewrite(table)


def test_a_record_of_another_schema_is_refused(tmp_path):
    p = tmp_path / "r.json"
    p.write_text(json.dumps({"schema": "something-else/1"}))
    with pytest.raises(Error, match="not a series record"):
        series.read(p)


def test_conformance_lines_are_read_as_the_test_prints_them(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("TAP version 13\n"
                   "# EPIPE (no reader, full pipe): 11 pages allocated system-wide during"
                   " 4096 writes\n# EPIPE (no reader, full pipe): memory.stat kernel +0 bytes\n")
    boot = tmp_path / "boot.json"
    boot.write_text(json.dumps({"variant": "v", "kernel": "7.3.4", "shared": "/x",
                                "clock": {"cpus": 1, "qemu": "7.2.22",
                                          "mode": "deterministic"}, "guest": {"rc": 0}}))
    rec = series_records.summarise_conformance([out], [boot], ["cmd"], "t")
    assert rec["rows"] == ["EPIPE (no reader, full pipe)"]
    assert rec["kernels"][0]["cells"]["EPIPE (no reader, full pipe)"] == \
        {"pages": 11, "writes": 4096, "n": 1}
    out.write_text("nothing\n")
    with pytest.raises(Error, match="no count line"):
        series_records.summarise_conformance([out], [boot], ["cmd"], "t")


# A number in a mail's text: 24586, 2445.2, -4.26%; not a version (7.3.4) or a commit id.
FIGURE = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?%?(?![\w.])")
MAILS = sorted(p for p in series.PATCHES.glob("*.patch")
               if re.fullmatch(r"[a-z][a-z0-9]*-\d{4}-.+\.patch", p.name))


def typed_tables(path):
    """Indented runs of two or more lines with two figures each that no table in
    series.TABLES prints: a table typed by hand. [(first line number, lines)]"""
    lines = path.read_text().split("\n---\n")[0].split("\n")
    owned = set()
    for t in series.TABLES:
        if t.patch == path.name:
            span = series_patch._block(lines, t.header)
            owned |= set(range(*span)) if span else set()
    found, run = [], []
    for i, line in enumerate(lines + [""]):
        if i not in owned and line.startswith("  ") and len(FIGURE.findall(line)) >= 2:
            run.append((i, line))
            continue
        if len(run) >= 2:
            found.append((run[0][0] + 1, [x for _, x in run]))
        run = []
    return found


@pytest.mark.parametrize("path", MAILS, ids=lambda p: p.name)
def test_no_table_in_a_mail_is_typed_by_hand(path):
    assert not typed_tables(path), \
        f"{path.name}: a table no record prints (add it to ipclab/report/series.py TABLES)"


def test_a_typed_table_is_found(tmp_path):
    mail = tmp_path / "x-0001-y.patch"
    mail.write_text("Subject: [PATCH] x\n\nCounts:\n\n               7.3.4  patched\n"
                    "  loop         2445.2   2443.2\n  round trip  11090.6  11086.4\n"
                    "\nSigned-off-by: A <a@b.c>\n---\n 1 file changed\n")
    assert typed_tables(mail) == [(6, ["  loop         2445.2   2443.2",
                                       "  round trip  11090.6  11086.4"])]


def test_the_command_prints_and_checks_and_refuses_bad_input_in_one_line():
    script = [sys.executable, str(series.ROOT / "scripts" / "series-tables")]
    out = subprocess.run(script + ["failed-writes"], capture_output=True, text=True)
    assert out.returncode == 0
    table = series.by_name(["failed-writes"])[0]
    assert out.stdout.rstrip("\n").split("\n") == series.render(table)
    assert subprocess.run(script + ["--check"], capture_output=True).returncode == 0
    bad = subprocess.run(script + ["no-such-table"], capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1
    assert "no table 'no-such-table'" in bad.stderr


def test_the_engines_table_reads_each_engine_from_its_own_figure():
    table, = series.by_name(["engines"])
    record = series.read(table.record_path)
    v4 = next(k for k in record["kernels"] if k["name"] == "mainline-series")
    v4["cells"]["pipe_bench/w=2,r=1 | metrics.throughput"]["delta"] = -0.25
    v4["cells"]["pipe-sweep/w=2,r=1 | metrics.throughput"]["delta"] = 0.5
    lines = series.render_engines(table, record)
    line, = [ln for ln in lines if ln.split()[:2] == ["2x1", "MB/s"]]
    assert line.split()[-2:] == ["-25.00%", "+50.00%"]
    # a configuration only one engine ran has nothing to be set beside
    record["rows"] = [r for r in record["rows"] if r["key"] != "pipe_bench/w=5,r=10"]
    assert not [ln for ln in series.render_engines(table, record) if ln.split()[:1] == ["5x10"]]


def test_a_timed_record_is_the_ab_s_own_comparison():
    kept = series.RECORDS / "timed-pipe-bench-production-2vcpu"
    sides = [str(kept / "A-mainline-merged.json"), str(kept / "B-mainline-series-merged.json")]
    rec = series_records.summarise_timed(sides, ["ab ..."], "t", commit="x")
    assert rec["kind"] == series_records.TIMED_ROWS and rec["kernels"][0]["raw"] == sides[0]
    old, new = (k["cells"] for k in rec["kernels"])
    ab = json.loads((kept / "compare.json").read_text())
    assert len(ab["rows"]) == len(rec["rows"])
    for row in ab["rows"]:
        key = f"{row['key']} | {row['path']}"
        assert old[key]["median"] == pytest.approx(row["base"])
        assert new[key]["median"] == pytest.approx(row["new"])
        assert new[key]["delta"] == pytest.approx(row["delta"])
        assert new[key]["verdict"] == (row["verdict"] or None)
        assert old[key]["min"] <= old[key]["median"] <= old[key]["max"]
    with pytest.raises(Error, match="A, then B"):
        series_records.summarise_timed(sides[:1], ["ab ..."], "t", commit="x")
