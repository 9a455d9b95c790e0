# SPDX-License-Identifier: MIT
"""The series' tables of upstream's own benchmarks (ipclab/upstream.py), as they print their
figures: pipe_bench's rate and write latency per writers x readers configuration, beside
ipcbench's, and mq_perf_tests' nsec/msg per test. The lab has no A/A floor for them under
icount, so those tables judge no change: a column that is another boot of the old kernel
shows how far two boots differ. The timed pipe_bench table gives the verdict of the lab's
paired test over its boots."""

import re

from ipclab.report.series_layout import config_words, kernel_in, layout, num, pct, wrap

# pipe_bench's cells (ipclab/upstream.py) and the figures it prints, under its own names.
PIPE_BENCH_ROW = re.compile(r"pipe_bench/w=(\d+),r=(\d+)(,pressure)? \| metrics\.(\w+)")
# (metric, the name pipe_bench prints it under): its write rate and its average write
# latency, the two figures of its output that ipclab compares.
PIPE_BENCH_METRICS = (("writes_per_s", "rate"), ("write_lat_avg_ns", "lat_avg_ns"))
# ipcbench's sweep over the same configurations (ipclab/suites.py), beside it
SWEEP_ROW = re.compile(r"pipe-sweep/w=(\d+),r=(\d+) \| .+")


# mq_perf_tests' tests (ipclab/upstream.py, MQ_TESTS) as it describes them.
MQ_PERF_TEST_NAMES = {"empty": "#1 queue empty", "full_constant": "#2a full, constant prio",
                      "full_increasing": "#2b full, increasing prio",
                      "full_decreasing": "#2c full, decreasing prio",
                      "full_random": "#2d full, random prio"}
MQ_PERF_ROW = re.compile(r"mq_perf_tests \| metrics\.(\w+)_(send|recv)_ns")


def _seconds(record):
    """How long each configuration ran, as its rows' arguments say (-d, --duration)."""
    return " or ".join(sorted({f"{float(r['args'][r['args'].index(flag) + 1]):g}"
                               for r in record["rows"] for flag in ("-d", "--duration")
                               if flag in r.get("args", [])})) or "?"


def _counts(kernels, rows=None):
    """The numbers of samples (or boots) behind the kernels' medians, of the rows that
    `rows` matches (default: all)."""
    return " or ".join(str(x) for x in sorted({c["n"] for k in kernels
                                               for key, c in k["cells"].items()
                                               if rows is None or rows.fullmatch(key)}))


def upstream_row_name(key):
    """A pipe_bench row's name, its cell's writers x readers, as an ipcbench pipe-sweep row's
    beside it; an mq_perf_tests row's, its test as the program describes it and the
    operation; None for another row."""
    m = PIPE_BENCH_ROW.fullmatch(key)
    if m:
        return f"{m[1]}x{m[2]}{' pressure' if m[3] else ''}"
    m = MQ_PERF_ROW.fullmatch(key)
    if m and m[1] in MQ_PERF_TEST_NAMES:
        return f"{MQ_PERF_TEST_NAMES[m[1]]}, {m[2]}"
    m = SWEEP_ROW.fullmatch(key)
    if m:
        return f"{m[1]}x{m[2]}"
    return None


def pipe_bench_rows(row):
    m = PIPE_BENCH_ROW.fullmatch(f"{row['key']} | {row['path']}")
    return bool(m) and m[4] in dict(PIPE_BENCH_METRICS)


def render_pipe_bench(table, record):
    """One line per cell: for each of pipe_bench's figures, 7.3.4's median, then each
    other kernel's change."""
    old = kernel_in(record, table.columns[0][0], table)
    others = [(kernel_in(record, v, table), title) for v, title in table.columns[1:]]
    header = ["w x r"]
    for _, name in PIPE_BENCH_METRICS:
        header += [f"{name} {table.columns[0][1]}"] + [t for _, t in others]
    cells = []
    for row in record["rows"]:
        if pipe_bench_rows(row) and row["key"] not in cells:
            cells.append(row["key"])
    rows = []
    for key in cells:
        line = [upstream_row_name(f"{key} | metrics.{PIPE_BENCH_METRICS[0][0]}")]
        for metric, _ in PIPE_BENCH_METRICS:
            k = f"{key} | metrics.{metric}"
            line.append(num(old["cells"].get(k, {}).get("median"), 1))
            for other, _ in others:
                c = other["cells"].get(k)
                line.append("-" if c is None else pct(c.get("delta")))
        rows.append(line)
    return wrap(_pipe_bench_caption(table, record)) + \
        layout(header, rows, "<" + ">" * (len(header) - 1))


def _pipe_bench_caption(table, record):
    first = record["kernels"][0]
    n = _counts(record["kernels"])
    secs = _seconds(record)
    rel = first["release"]
    spread = max(c["spread"] for k in record["kernels"] for key, c in k["cells"].items()
                 if c.get("spread") is not None and PIPE_BENCH_ROW.fullmatch(key)
                 and PIPE_BENCH_ROW.fullmatch(key)[4] in dict(PIPE_BENCH_METRICS))
    return (f"pipe_bench's own figures (tools/testing/selftests/pipe of {rel}), under QEMU"
            f" {record['qemu']} TCG with -icount {record['clock'].replace('icount ', '')},"
            f" where its clock counts guest instructions: rate is writes of 64 KiB per"
            f" 10^9 guest instructions, lat_avg_ns the guest instructions, the whole"
            f" guest's, from a write's start to its return;"
            f" they are instruction counts, not times. Median of {n} runs of -d"
            f" {secs} each (10^9 instructions a second), one boot per"
            f" kernel, {rel} built from"
            f" {config_words(record['config'])},"
            f" {record['cpus']} vCPU, {record['arch']}; each change against {rel}. The"
            f" 95% interval of a median is at most {spread * 100:.2f}% wide on either side"
            f" of it. " + _again(table, record))


def _again(table, record):
    """What the table says of boot-to-boot noise: a column that is another boot of the old kernel
    shows it; the lab has no A/A floor for upstream's benchmarks to judge a change by."""
    old = kernel_in(record, table.columns[0][0], table)
    again = [t for v, t in table.columns[1:]
             if kernel_in(record, v, table)["variant"] == old["variant"]]
    if again:
        return (f"\"{again[0]}\" is another boot of {old['release']}, how far two boots"
                f" of the unpatched kernel differ; with no more pairs than that, no change is"
                f" judged:")
    return (f"No pairs of boots of {old['release']} alone were made for this benchmark, so"
            f" no change is judged:")


def mq_perf_rows(row):
    m = MQ_PERF_ROW.fullmatch(f"{row['key']} | {row['path']}")
    return bool(m) and m[1] in MQ_PERF_TEST_NAMES


def render_mq_perf(table, record):
    """One line per test and operation: 7.3.4's nsec/msg, then each other kernel's change;
    no verdict, as for pipe_bench."""
    old = kernel_in(record, table.columns[0][0], table)
    others = [kernel_in(record, v, table) for v, _ in table.columns[1:]]
    rows = []
    for row in record["rows"]:
        if not mq_perf_rows(row):
            continue
        key = f"{row['key']} | {row['path']}"
        median = old["cells"].get(key, {}).get("median")
        # whole ns as it prints them, unless a median of an even number of runs is not
        line = [upstream_row_name(key), num(median, 0 if median == round(median or 0) else 1)]
        line += ["-" if k["cells"].get(key) is None else pct(k["cells"][key].get("delta"))
                 for k in others]
        rows.append(line)
    header = [table.title] + [t for _, t in table.columns]
    return wrap(_mq_perf_caption(table, record)) + layout(header, rows, "<>" + ">" * len(others))


def _mq_perf_caption(table, record):
    first = record["kernels"][0]
    cells = [(key, c) for k in record["kernels"] for key, c in k["cells"].items()
             if MQ_PERF_ROW.fullmatch(key)]
    n = _counts(record["kernels"], MQ_PERF_ROW)
    spread = max((c["spread"] for _, c in cells if c.get("spread") is not None), default=None)
    apart = max((c["max"] - c["min"]) / c["median"] for _, c in cells if c.get("median"))
    rel = first["release"]
    return (f"mq_perf_tests' own figures (tools/testing/selftests/mqueue of {rel}, at its"
            f" real size: 10^7 sends and receives on an empty queue, 10^5 on a full one per"
            f" priority pattern), nsec/msg as it prints them, from the thread's CPU clock."
            f" Under QEMU {record['qemu']} TCG with -icount"
            f" {record['clock'].replace('icount ', '')} a guest nanosecond is one guest"
            f" instruction, so they count the instructions that ran on the thread's time per"
            f" message, not times. Median of {n} runs, one boot per kernel, {rel} built from"
            f" {config_words(record['config'])},"
            f" {record['cpus']} vCPU, {record['arch']}; each change against {rel}."
            + f" The runs of one boot lie within {apart * 100:.2f}% of their median."
            + ("" if spread is None else f" The 95% interval of a median is at most"
               f" {spread * 100:.2f}% wide on either side of it.")
            + " " + _again(table, record))


# What pipe_bench and ipcbench's pipe-sweep both measure, each under its own path: 10^6-byte
# MB/s of 64 KiB writes, and a write's average latency.
BOTH_ENGINES = (("MB/s", "metrics.throughput", "metrics.throughput"),
                ("lat ns", "metrics.write_lat_avg_ns", "latency.write.mean"))


def engines_rows(row):
    """The rows of a configuration that both engines ran, in what both measure."""
    paths = {p for _, *both in BOTH_ENGINES for p in both}
    key = f"{row['key']} | {row['path']}"
    return row["path"] in paths and bool(PIPE_BENCH_ROW.fullmatch(key) or SWEEP_ROW.fullmatch(key))


def engines_header(table):
    """The words of the engines table's column header: per kernel, pipe_bench (pb) and
    ipcbench (ib)."""
    head = ["w x r", "figure"]
    for _, title in table.columns:
        head += [f"{title} pb", "ib"]
    return head


def render_engines(table, record):
    """Per configuration that both ran and per figure both print: the old kernel's level by
    each engine, then each other kernel's change by each."""
    old = kernel_in(record, table.columns[0][0], table)
    others = [kernel_in(record, v, table) for v, _ in table.columns[1:]]
    configs = []
    for row in record["rows"]:
        m = SWEEP_ROW.fullmatch(f"{row['key']} | {row['path']}")
        if m and (m[1], m[2]) not in configs and any(
                r["key"] == f"pipe_bench/w={m[1]},r={m[2]}" for r in record["rows"]):
            configs.append((m[1], m[2]))
    rows = []
    for w, r in configs:
        for name, pb_path, ib_path in BOTH_ENGINES:
            keys = (f"pipe_bench/w={w},r={r} | {pb_path}", f"pipe-sweep/w={w},r={r} | {ib_path}")
            line = [f"{w}x{r}", name] + [num(old["cells"].get(k, {}).get("median"))
                                         for k in keys]
            for k in others:
                line += ["-" if k["cells"].get(x) is None else pct(k["cells"][x].get("delta"))
                         for x in keys]
            rows.append(line)
    header = engines_header(table)
    return wrap(_engines_caption(table, record)) + layout(header, rows,
                                                          "<<" + ">" * (len(header) - 2))


def _engines_caption(table, record):
    first = record["kernels"][0]
    rel = first["release"]
    secs = _seconds(record)
    n = _counts(record["kernels"])
    return (f"pipe_bench (pb) and ipcbench (ib) over the same writers x readers"
            f" configurations, 64 KiB writes into a 1 MiB pipe, in the same boots, {secs} s"
            f" each: what both print, MB/s of 10^6 bytes and a"
            f" write's average latency in ns. Under QEMU {record['qemu']} TCG with -icount"
            f" {record['clock'].replace('icount ', '')} a second is 10^9 guest instructions,"
            f" so both figures are instruction counts, not times. Median of {n} runs, one"
            f" boot per kernel, {rel} built from"
            f" {config_words(record['config'])},"
            f" {record['cpus']} vCPU, {record['arch']}; {rel}'s level by each engine, then"
            f" each change against it. " + _again(table, record))


def timed_pipe_bench_rows(row):
    """pipe_bench's rate per configuration, with and without its memory pressure."""
    m = PIPE_BENCH_ROW.fullmatch(f"{row['key']} | {row['path']}")
    return bool(m) and m[4] == PIPE_BENCH_METRICS[0][0]


def _boots(cell):
    return f"{cell['median']:.0f} ({cell['min']:.0f}-{cell['max']:.0f})"


def timed_header(table):
    return [f"{table.title}, w x r"] + [f"{t}, boots" for _, t in table.columns] + [
        "change", "verdict"]


def render_timed_pipe_bench(table, record):
    """Per configuration: each kernel's median of its boots' values, with the least and the
    most; the change and the verdict of a paired test over the boots."""
    old, new = (kernel_in(record, v, table) for v, _ in table.columns)
    rows = []
    for row in record["rows"]:
        if not timed_pipe_bench_rows(row):
            continue
        key = f"{row['key']} | {row['path']}"
        c = new["cells"][key]
        rows.append([upstream_row_name(key), _boots(old["cells"][key]), _boots(c),
                     pct(c.get("delta")), c.get("verdict") or "-"])
    return wrap(_timed_caption(table, record)) + layout(timed_header(table), rows, "<>>><")


def _timed_caption(table, record):
    old, new = (kernel_in(record, v, table) for v, _ in table.columns)
    rel = old["release"]
    boots = _counts((old, new))
    secs = _seconds(record)
    return (f"pipe_bench's rate, writes a second as it prints it, timed: QEMU"
            f" {record['qemu']} TCG without icount, {record['cpus']} vCPUs each on a host"
            f" thread of its own, so the guest's clock is the host's and these are an"
            f" emulator's figures, not a CPU's. {rel} built from"
            f" {config_words(record['config'])},"
            f" {record['arch']}; -d {secs} per configuration, with and without pipe_bench's"
            f" --memory-pressure. Each kernel's median of its boots' values, with the"
            f" least and the most ({boots} boots a kernel, booted in turn, each boot's"
            f" value the median of its runs). The change is the geometric mean of the paired"
            f" boots' ratios; the verdict a paired t test on their logarithms, Holm-corrected"
            f" over the {record['family']} configurations, \"inconclusive\" where it finds"
            f" neither a change nor its absence:")
