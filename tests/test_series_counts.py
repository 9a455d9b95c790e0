# SPDX-License-Identifier: MIT
"""The series' record and tables of kernel/tests/pipe-alloc-counts: `scripts/series-tables
record counts` keeps each kernel's per-write counts from what `ipclab vm run` printed and its
boot record, and series.render_counts prints one figure a table, a column per kernel, every
cell. Built from files shaped as the real ones are (the test's cell(), vm.Boot.record())."""
import json
import subprocess
import sys

import pytest

from ipclab import Error
from ipclab.report import alloc_counts, series, series_records

SCRIPT = series.ROOT / "scripts" / "series-tables"
WRITE = 64 << 10


def line(w, r, under, contentions, pressure=False, missing=(), reclaim=None):
    """One JSON line as kernel/tests/pipe-alloc-counts' cell() prints it."""
    row = {"writers": w, "readers": r, "write_size": WRITE, "pipe_size": "engine default",
           "pressure": pressure, "cpus": "unpinned", "nproc": 2,
           "writes_per_writer": [40, 200], "missing": list(missing),
           "pgalloc_per_write": 17.1, "under_mutex_per_write": under,
           "other_pipe_pages_per_write": 16.0 - under, "pipe_pages_per_write": 16.0,
           "mutex_locks_per_write": 3.0, "mutex_found_held_per_write": 0.25,
           "mutex_found_held_wait_ns_per_write": 1834.5,
           "mutex_acquisitions_per_write": 3.0, "mutex_contentions_per_write": contentions,
           "mutex_holdtime_total_ns_per_write": 5120.0,
           "mutex_waittime_total_ns_per_write": 800.0, "mutex_holdtime_max_ns": 91000.0,
           "reclaim": reclaim or {}}
    for m in missing:
        row.pop(m)
    return json.dumps(row)


def boot_record(variant, mode="timed", cpus=2, ok=True):
    """A `vm run --record` file as vm.Boot.record() writes it, its clock Clock.record()'s."""
    clock = {"mode": mode, "accel": "tcg", "cpus": cpus, "qemu": "7.2.22",
             "vcpus_concurrent": mode == "timed" and cpus > 1}
    if mode == "deterministic":
        clock["icount"] = {"shift": 0, "sleep": False, "ns_per_instruction": 1}
    return {"variant": variant, "kernel": "7.3.4", "accel": "tcg", "emulated": True,
            "clock": clock, "ok": ok, "rc": 0, "reason": None if ok else "dmesg: WARNING",
            "bad_lines": [], "console_tail": None, "timings": {"boot_s": 4.1},
            "guest": {"release": "7.3.4", "notes": [], "nproc": cpus, "rc": 0,
                      "job_seconds": 812.3},
            "shared": f"/var/tmp/ipclab/shared/{variant}"}


def files(tmp_path, name, variant, lines, **boot):
    out, rec = tmp_path / f"{name}.txt", tmp_path / f"{name}-boot.json"
    # what `vm run` printed: the test's lines among others
    out.write_text("running kernel/tests/pipe-alloc-counts\n" + "\n".join(lines) + "\n")
    rec.write_text(json.dumps(boot_record(variant, **boot)))
    return [name, str(out), str(rec)]


def make(tmp_path, *boots, extra=()):
    out = tmp_path / "counts.json"
    argv = [sys.executable, str(SCRIPT), "record", "counts", str(out), "--title", "t",
            "--config", "production", "--command", "python -m ipclab vm run ..."]
    for b in boots:
        argv += ["--boot", *b]
    r = subprocess.run(argv + list(extra), capture_output=True, text=True)
    return r, out


def table(metric, columns, title=""):
    return series.Table("counts", "pipe-0000-cover-letter.patch", "counts.json", columns,
                        series.render_counts, metric=metric, title=title)


def four_boots(tmp_path):
    cells = [(1, 1), (5, 10)]
    return (files(tmp_path, "7.3.4", "mainline+counters+lockstat",
                  [line(1, 1, 8.0, 0.5), line(5, 10, 10.0, 2.0)]),
            files(tmp_path, "7.3.4+v4", "mainline-series+counters+lockstat",
                  [line(1, 1, 0.0, 0.5), line(5, 10, 0.0, 2.5)]),
            # the same kernel again, under --pressure, under another name
            files(tmp_path, "7.3.4 pressure", "mainline+counters+lockstat",
                  [line(w, r, 9.0, 1.0, pressure=True, missing=["pgalloc_per_write"])
                   for w, r in cells]),
            files(tmp_path, "7.3.4+v4 pressure", "mainline-series+counters+lockstat",
                  [line(1, 1, 0.0, 1.5, pressure=True, missing=["pgalloc_per_write"])]))


def test_a_record_of_counts_keeps_every_kernel_and_cell_and_how_they_ran(tmp_path):
    r, out = make(tmp_path, *four_boots(tmp_path))
    assert r.returncode == 0, r.stderr
    rec = series.read(out)
    assert rec["kind"] == series.COUNTS and rec["rows"] == ["1x1", "5x10"]
    for field in ("commands", "commit", "machine", "release", "config", "arch", "mode",
                  "cpus", "qemu", "title"):
        assert rec.get(field), field
    assert (rec["config"], rec["cpus"], rec["mode"], rec["clock"], rec["accel"]) == \
        ("production", 2, "timed", "timed", "tcg")
    names = [k["name"] for k in rec["kernels"]]
    assert names == ["7.3.4", "7.3.4+v4", "7.3.4 pressure", "7.3.4+v4 pressure"]
    k = rec["kernels"][2]
    assert {f: k[f] for f in ("variant", "release", "base", "config", "cpus", "mode", "qemu",
                              "accel", "arch")} == \
        {"variant": "mainline+counters+lockstat", "release": "7.3.4", "base": "mainline",
         "config": "production", "cpus": 2, "mode": "timed", "qemu": "7.2.22",
         "accel": "tcg", "arch": "x86_64"}
    assert k["raw"] and all(c["n"] == 1 for c in k["cells"].values())
    cell = k["cells"]["5x10"]
    assert cell["missing"] == ["pgalloc_per_write"] and "pgalloc_per_write" not in cell
    for m in alloc_counts.METRICS:
        assert m in rec["kernels"][0]["cells"]["1x1"], m


def test_a_table_of_counts_shows_every_cell_each_change_as_a_difference(tmp_path):
    _, out = make(tmp_path, *four_boots(tmp_path))
    rec = series.read(out)
    cols = (("7.3.4", "7.3.4"), ("7.3.4+v4", "v4"), ("7.3.4 pressure", "7.3.4 vm"),
            ("7.3.4+v4 pressure", "v4 vm"))
    lines = series.render_counts(table("under_mutex_per_write", cols), rec)
    head = next(i for i, ln in enumerate(lines) if ln.split()[:3] == ["pages", "under", "mutex"])
    assert lines[head].split() == table("under_mutex_per_write", cols).header
    rows = {ln.split()[0]: ln for ln in lines[head + 1:]}
    assert list(rows) == ["1x1", "5x10"]
    assert rows["1x1"].split()[1:] == ["8", "0", "(-8)", "9", "(+1)", "0", "(-8)"]
    assert rows["5x10"].split()[1:] == ["10", "0", "(-10)", "9", "(-1)", "-"]
    caption = " ".join(" ".join(lines[:head]).split())
    assert "per 64 KiB write" in caption and "runs of 40 and 200 writes" in caption
    assert "2 vCPUs" in caption and "(4 boots)" in caption
    assert "Debian's cloud-amd64 config" in caption
    assert series.TIMED_COUNTS.strip() in caption
    assert "-: the boot ran no such cell" in caption
    assert "--memory-pressure (stress-ng --vm): 7.3.4 vm, v4 vm." in caption
    assert "It made the allocator reclaim nothing" in caption
    # a figure the pressure boots left out is n/a there, not a zero
    pg = series.render_counts(table("pgalloc_per_write", cols), rec)
    assert "n/a" in pg[-1] and "n/a: the kernel has no such counter" in " ".join(pg)
    assert all(len(ln) <= series.WIDTH for ln in lines + pg)


def test_a_pressure_that_made_the_allocator_reclaim_names_its_boots(tmp_path):
    a = files(tmp_path, "7.3.4", "mainline+counters+lockstat",
              [line(1, 1, 8.0, 0.5, pressure=True)])
    b = files(tmp_path, "7.3.4+v4", "mainline-series+counters+lockstat",
              [line(1, 1, 8.0, 0.5, pressure=True, reclaim={"pgscan_kswapd": 512})])
    _, out = make(tmp_path, a, b)
    lines = series.render_counts(table("under_mutex_per_write",
                                       (("7.3.4", "7.3.4"), ("7.3.4+v4", "v4"))),
                                 series.read(out))
    caption = " ".join(" ".join(lines).split())
    assert "reclaimed pages under it in: v4." in caption and "nothing" not in caption


def test_deterministic_counts_say_no_timed_caveat(tmp_path):
    a = files(tmp_path, "7.3.4", "mainline+counters+lockstat", [line(1, 1, 8.0, 0.0)],
              mode="deterministic", cpus=1)
    b = files(tmp_path, "7.3.4+v4", "mainline-series+counters+lockstat",
              [line(1, 1, 0.0, 0.0)], mode="deterministic", cpus=1)
    r, out = make(tmp_path, a, b)
    assert r.returncode == 0, r.stderr
    rec = series.read(out)
    assert rec["clock"] == "icount shift=0"
    lines = series.render_counts(table("mutex_found_held_wait_ns_per_write",
                                       (("7.3.4", "7.3.4"), ("7.3.4+v4", "patched"))), rec)
    text = " ".join(lines)
    assert "Timed counts" not in text and "-icount shift=0" in text
    assert "a ns is a guest instruction" in text


@pytest.mark.parametrize("bad", [
    lambda t: [["7.3.4", str(t / "7.3.4.txt")]],                           # two files
    lambda t: [["7.3.4", str(t / "nothing.txt"), str(t / "7.3.4-boot.json")]],
    lambda t: [["7.3.4", str(t / "7.3.4.txt"), str(t / "7.3.4.txt")]],    # not a boot record
    lambda t: [["7.3.4", str(t / "7.3.4.txt"), str(t / "7.3.4-boot.json")]] * 2,  # same name
    lambda t: [["7.3.4", str(t / "7.3.4-boot.json"), str(t / "7.3.4-boot.json")]],  # no lines
])
def test_a_bad_boot_argument_is_a_one_line_error(tmp_path, bad):
    files(tmp_path, "7.3.4", "mainline+counters+lockstat", [line(1, 1, 8.0, 0.5)])
    r, out = make(tmp_path, *bad(tmp_path))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("series-tables: error: ") and not out.exists()


def test_boots_made_differently_or_without_a_config_are_refused(tmp_path):
    a = files(tmp_path, "a", "mainline+counters+lockstat", [line(1, 1, 8.0, 0.5)])
    b = files(tmp_path, "b", "mainline-series+counters+lockstat", [line(1, 1, 0.0, 0.5)],
              cpus=4)
    with pytest.raises(Error, match="not booted as"):
        series_records.summarise_counts([a, b], ["c"], "t", "x", "production")
    with pytest.raises(Error, match="--config"):
        series_records.summarise_counts([a], ["c"], "t", "x", None)
    r = subprocess.run([sys.executable, str(SCRIPT), "record", "counts", "o.json", "--title",
                        "t", "--command", "c", "--boot", *a], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "--config" in r.stderr


def test_the_counts_are_read_from_their_json_lines_only(tmp_path):
    text = "[    3.2] random: crng init done\n" + line(2, 5, 1.0, 0.0) + "\n{\"other\": 1}\n"
    assert list(alloc_counts.parse(text)) == ["2x5"]
    with pytest.raises(Error, match=r"out:2: not a JSON line"):
        alloc_counts.parse("ok\n{not json\n", "out")
