# SPDX-License-Identifier: MIT
"""The figures of the patch series in kernel/patches/: each table of a cover letter or a
commit message is printed from a record under kernel/patches/records/, by
`scripts/series-tables`, and checked against it by tests/test_series_tables.py, so that no
figure in a mail is typed by hand and no measured row is left out.

A record is a summary of the runs behind a table: per kernel and per cell, the median, the
spread and the number of samples, with the command lines, the commit of this repository,
the machine, the kernel base and config, the vCPUs, the architecture and the clock. It is
written once from the runs' own files (`scripts/series-tables record ...`,
ipclab/report/series_records.py), never edited.

A table is a record, the patch file that holds it, the kernels it shows as columns and a
renderer. Its rows are every row of the record that the table's metrics select, in the
record's order: a row cannot be left out by leaving it out of a list. In the patch file a
table is the block of non-blank lines that holds its header line, which names no figure.
"""

from dataclasses import dataclass
from pathlib import Path

from ipclab import Error
from ipclab.mode import Mode
from ipclab.report import alloc_counts
from ipclab.report.series_layout import (CONFIG_NAMES, WIDTH, config_words,  # noqa: F401
                                         kernel_in, layout, num, pct, wrap)
from ipclab.report.series_upstream import (PIPE_BENCH_METRICS, engines_header, engines_rows,
                                           mq_perf_rows, pipe_bench_rows, render_engines,
                                           render_mq_perf, render_pipe_bench,
                                           render_timed_pipe_bench, timed_header,
                                           timed_pipe_bench_rows, upstream_row_name)
# The kinds of record, re-exported for the tests, which read records by kind.
from ipclab.report.series_records import (CENSUS, CONFORMANCE_LINES, COUNTS,  # noqa: F401
                                          DETERMINISTIC_ROWS, DISASSEMBLY, TIMED_ROWS, read)

ROOT = Path(__file__).resolve().parents[2]
PATCHES = ROOT / "kernel" / "patches" / "mainline"
RECORDS = ROOT / "kernel" / "patches" / "records"
REWRITE = "scripts/series-tables --write"


# ---- tables --------------------------------------------------------------------------------

# What a row is called in a mail. A row without a name here is printed under its key, so a
# new cell in a record shows up in the table rather than being dropped.
ROW_NAMES = {
    "pipe-throughput/copies=1 | counters.task_clock_ns / metrics.loops":
        "1-byte write+read loop",
    "pipe-context/copies=1 | counters.task_clock_ns / metrics.round_trips":
        "1-byte round trip",
    "pipe-sweep/w=1,r=1 | counters.task_clock_ns / metrics.writes": "64 KiB write, 1x1",
    "mq-latency/prio=constant | metrics.empty_send_ns": "mq send, empty queue",
    "mq-latency/prio=constant | metrics.empty_recv_ns": "mq receive, empty queue",
    "mq-latency/prio=constant | metrics.full_send_ns": "mq send, full queue",
    "mq-latency/prio=constant | metrics.full_recv_ns": "mq receive, full queue",
    "mq-latency/prio=constant | cost.atomics / cost.ops": "mq, locked insns",
    "mq-latency/prio=constant | cost.irqflags / cost.ops": "mq, irq-flag changes",
    "EAGAIN (O_NONBLOCK, full pipe)": "EAGAIN, O_NONBLOCK into a full pipe",
    "EPIPE (no reader, full pipe)": "EPIPE, no reader, pipe full",
    "EPIPE (no reader, empty pipe)": "EPIPE, no reader, pipe empty",
}


def row_name(key):
    """A row's name in a mail; a pipe_bench row is named by its cell, writers x readers, an
    mq_perf_tests row by its test, as the program describes it, and the operation."""
    if key in ROW_NAMES:
        return ROW_NAMES[key]
    return upstream_row_name(key) or key


@dataclass(frozen=True)
class Table:
    name: str
    patch: str                  # file name in kernel/patches/mainline
    record: str                 # file name in kernel/patches/records
    columns: tuple              # ((variant, column title), ...), the first the old kernel
    render: object              # (table, record) -> [lines]
    rows: object = None         # (row dict) -> bool: which of the record's rows it shows
    caption: object = None      # (record) -> text above a deterministic table
    sites: tuple = ()           # census: ((FAMILY/SITE, column title), ...)
    title: str = ""             # deterministic, census, counts: over the rows' names; tells
                                # apart two tables of one mail
    metric: str = ""            # counts: the per-write figure shown (alloc_counts.METRICS)

    @property
    def header(self):
        """The words of the column header line, which name no figure: what finds the table
        in its patch file, however its columns are spaced."""
        titles = [t for _, t in self.columns]
        if self.render in (render_deterministic, render_mq_perf) and self.title:
            titles.insert(0, self.title)
        if self.sites:
            # one kernel: a column per site; several: one site, a column per kernel
            titles = [self.title or "workload"] + [t for _, t in (
                self.sites if len(self.columns) == 1 else self.columns)]
        if self.render is render_timed_pipe_bench:
            titles = timed_header(self)
        if self.render is render_engines:
            titles = engines_header(self)
        if self.render is render_pipe_bench:
            titles = ["w x r"] + [x for _, name in PIPE_BENCH_METRICS
                                  for x in [f"{name} {titles[0]}"] + titles[1:]]
        if self.render is render_conformance:
            titles.insert(1, PER_WRITE)
        if self.render is render_disassembly:
            titles.insert(0, "path when the pool needs nothing")
        if self.render is render_counts:
            titles.insert(0, _counts_title(self))
        return " ".join(titles).split()

    @property
    def patch_path(self):
        return PATCHES / self.patch

    @property
    def record_path(self):
        return RECORDS / self.record


def _caption(record):
    """What every deterministic table says of how it was measured, from its record."""
    first = record["kernels"][0]
    n = sorted({c["n"] for k in record["kernels"] for c in k["cells"].values()})
    ns = " or ".join(str(x) for x in n)
    return (f"Guest instructions per operation (QEMU {record['qemu']} TCG, -icount"
            f" {record['clock'].replace('icount ', '')}, not a time), median of {ns} samples,"
            f" one boot per kernel, {first['release']} built from"
            f" {config_words(record['config'])},"
            f" {record['cpus']} vCPU, {record['arch']}; each change against"
            f" {first['release']}, {_judged_by(record)}:")


def _judged_by(record):
    """What the verdicts were judged against: the A/A floor's pairs of boots of the old kernel
    (ipclab/reference/icount-floor.json), where the lab has them for this kernel, config
    and vCPUs, else each side's own samples."""
    rel = record["kernels"][0]["release"]
    pairs = [c.get("floor_pairs") or 0 for k in record["kernels"][1:]
             for c in k["cells"].values() if c.get("verdict")]
    if pairs and all(pairs):
        return f"judged by how far pairs of boots of {rel} alone differ"
    if any(pairs):
        return (f"judged by how far pairs of boots of {rel} alone differ where such pairs"
                f" were made, else by the spread of each side's samples alone")
    return (f"judged by the spread of each side's samples alone (no pairs of boots of"
            f" {rel} were made on this config)")


# The rule's verdicts (ipclab/deterministic/rule.py), one shortened to keep a mail's lines
# under 76 columns; the mail says what each means.
VERDICT = {"within noise": "in noise"}


def render_deterministic(table, record):
    old = kernel_in(record, table.columns[0][0], table)
    others = [(kernel_in(record, v, table), title) for v, title in table.columns[1:]]
    header = [table.title, table.columns[0][1]] + [t for _, t in others]
    rows = []
    for row in record["rows"]:
        if table.rows and not table.rows(row):
            continue
        key = f"{row['key']} | {row['path']}"
        places = 2 if row["model"] else 1
        line = [row_name(key), num(old["cells"].get(key, {}).get("median"), places)]
        for k, _ in others:
            c = k["cells"].get(key)
            line.append("-" if c is None else
                        f"{pct(c.get('delta')):>7} {VERDICT.get(c.get('verdict'), c.get('verdict'))}")
        rows.append(line)
    return wrap((table.caption or _caption)(record)) + \
        layout(header, rows, "<>" + "<" * len(others))


PER_WRITE = "per write"


def render_conformance(table, record):
    old = kernel_in(record, table.columns[0][0], table)
    others = [(kernel_in(record, v, table), title) for v, title in table.columns[1:]]
    header = ["", table.columns[0][1], PER_WRITE] + [t for _, t in others]
    rows = []
    for case in record["rows"]:
        b = old["cells"].get(case)
        line = [ROW_NAMES.get(case, case), "-" if b is None else str(b["pages"]),
                "-" if b is None else f"{b['pages'] / b['writes']:.1f}"]
        for k, _ in others:
            c = k["cells"].get(case)
            line.append("-" if c is None else str(c["pages"]))
        rows.append(line)
    return layout(header, rows, "<" + ">" * (len(header) - 1))


# What the census's workloads (kernel/tests/wakeup-sites, kernel/tests/workloads) are, for
# a reader who has never seen them.
WORKLOAD_NAMES = {
    "pipe-throughput": "1-byte write+read loop",
    "pipe-context": "1-byte round trip",
    "token-ring": "token ring, 64 processes",
    "token-ring-jobserver": "jobserver-shaped token ring",
    "pipe-sweep-1x1": "64 KiB writes, 1x1",
    "pipe-sweep-5x10": "64 KiB writes, 5x10",
    "fastpipe-write-read": "fast-pipes writer and reader",
    "mq-latency": "mq send then receive",
    "pipe_poll_race": "pipe I/O beside poll()",
    "mq_poll_race": "mq I/O beside poll/epoll",
    "hackbench-pipe": "perf bench sched messaging -p",
    "io-uring-full-pipe": "io_uring into a full pipe",
    "make-jobserver": "GNU make's jobserver",
    "mqueue-selftests": "mq_open_tests, mq_perf_tests (cut)",
    "pipe1": "will-it-scale pipe1 shape",
    "self-loop": "one task, both ends",
    "shell-pipeline": "shell pipeline",
    "sleeping-reader": "reader asleep before each write",
}


# What a table of counts from single timed boots says, so that no one reads a change into it.
TIMED_COUNTS = (" Timed counts move from boot to boot; one boot a kernel shows what one boot"
                " did, not a change.")


def _boots_how(record):
    """(how a record's boots ran: QEMU, accel, clock and vCPUs; whether timed), for the
    caption of a table of counts. A record that names no accel was made under TCG."""
    timed = not Mode.named(record["mode"]).deterministic
    accel = (record.get("accel") or "tcg").upper()
    if timed:
        how = f"QEMU {record['qemu']} {accel}, timed, {record['cpus']} vCPUs" + (
            " each on a host thread of its own, on a host shared with other work"
            if accel == "TCG" else "")
    else:
        how = (f"QEMU {record['qemu']} {accel} with -icount"
               f" {record['clock'].replace('icount ', '')}, {record['cpus']} vCPU")
    return how, timed


def render_census(table, record):
    """One kernel: per workload, a column per wakeup site. Several kernels (the first the
    old one): one site, a column per kernel."""
    kernels = [kernel_in(record, v, table) for v, _ in table.columns]
    if len(kernels) > 1 and len(table.sites) != 1:
        raise Error(f"table {table.name}: a census of several kernels shows one site")
    shown, idle, failed = [], [], []
    for name in record["rows"]:
        label = WORKLOAD_NAMES.get(name, name)
        cs = [k["cells"][name] for k in kernels]
        rcs = [c.get("rc") for c in cs]
        if any(rcs):
            failed.append(f"{label} (exit {', '.join(str(rc) for rc in rcs)})")
            continue
        counts = [c["sites"].get(site, {}) for site, _ in table.sites for c in cs]
        if not any(x.get("calls") for x in counts):
            idle.append(label)
            continue
        shown.append([label] + [f"{x.get('sleepers', 0)} of {x.get('calls', 0)}"
                                for x in counts])
    cfg = config_words(record["config"])
    how, timed = _boots_how(record)
    if len(kernels) == 1:
        what = "Calls of each wakeup site that found a sleeper, of all its calls"
        where = record["release"]
    else:
        what = f"Calls of the {table.sites[0][1]} that found a sleeper, of all its calls"
        where = f"{record['release']}, without and with " + \
            ", ".join(t for _, t in table.columns[1:]) + ","
    cap = (f"{what}, per workload, counted at the site in {where} built from {cfg}, one"
           f" boot{' each' if len(kernels) > 1 else ''}, {how}, {record['arch']}."
           + (TIMED_COUNTS if timed else "")
           + " Workloads that never reached "
           + ("this site" if len(table.sites) == 1 else "these sites") + ": "
           + ("; ".join(idle) or "none") + "."
           + (" Failed: " + "; ".join(failed) + "." if failed else ""))
    header = [table.title or "workload"] + [t for _, t in (table.sites if len(kernels) == 1
                                                           else table.columns)]
    return wrap(cap) + layout(header, shown, "<" + ">" * (len(header) - 1))


def render_disassembly(table, record):
    kernels = [(kernel_in(record, v, table), title) for v, title in table.columns]
    header = ["path when the pool needs nothing"] + [t for _, t in kernels]
    rows = []
    for func in record["rows"]:
        line = [f"{func}()"]
        for k, _ in kernels:
            c = k["cells"].get(func, {})
            if c.get("inlined"):
                line.append("inlined")
            else:
                line.append(f"{c['instructions']}" + (f", {c['rep']} rep stos" if c["rep"]
                                                      else ""))
        rows.append(line)
    cfg = CONFIG_NAMES.get(record["config"], record["config"])
    cap = (f"Instructions of a call that finds the pool as it needs it, from the entry to"
           f" the tail call of mutex_lock() or mutex_unlock() (objdump -d of fs/pipe.o,"
           f" {record['release']}"
           f" built from {cfg} with {record['compiler']}); a \"rep stos\" counts once,"
           f" however many stores it repeats; \"inlined\": the object has no such"
           f" function left:")
    return wrap(cap) + layout(header, rows, "<" + ">" * len(kernels))


def _counts_title(table):
    return table.title or alloc_counts.METRICS.get(table.metric, (table.metric,))[0]


def render_counts(table, record):
    """kernel/tests/pipe-alloc-counts, one boot per kernel: a line per writers x readers
    cell, a column per kernel for the table's one per-write figure, each later kernel's
    with its change from the first's as a difference (counts of single boots: a ratio
    of two small counts says less than their difference)."""
    if table.metric not in alloc_counts.METRICS:
        raise Error(f"table {table.name}: metric {table.metric!r} is none of"
                    f" {', '.join(alloc_counts.METRICS)}")
    kernels = [(kernel_in(record, v, table), title) for v, title in table.columns]
    absent = unknown = False
    rows = []
    for cell in record["rows"]:
        line, first = [cell], None
        for i, (k, _) in enumerate(kernels):
            c = k["cells"].get(cell)
            v = None if c is None else c.get(table.metric)
            absent |= c is None
            unknown |= c is not None and v is None
            text = "-" if c is None else "n/a" if v is None else alloc_counts.fmt(v, trim=True)
            if i == 0:
                first = v
            elif v is not None and first is not None:
                diff = alloc_counts.fmt(v - first, sign=True, like=first, trim=True)
                text += f" ({diff})"
            line.append(text)
        rows.append(line)
    header = [_counts_title(table)] + [t for _, t in kernels]
    return wrap(_counts_caption(table, record, kernels, absent, unknown)) + \
        layout(header, rows, "<" + ">" * len(kernels))


def _counts_caption(table, record, kernels, absent, unknown):
    per, runs = alloc_counts.how_run([c for k, _ in kernels for c in k["cells"].values()])
    what = alloc_counts.METRICS[table.metric][1]
    cfg = config_words(record["config"])
    how, timed = _boots_how(record)
    first = kernels[0][1]
    pressure = [t for k, t in kernels if any(c.get("pressure") for c in k["cells"].values())]
    unclean = [f"{t} ({k.get('reason') or 'exit ' + str(k.get('rc'))})" for k, t in kernels
               if k.get("ok") is False]
    return (f"{what[0].upper() + what[1:]}, {per}, per writers x readers cell"
            f" ({alloc_counts.COMMAND}: the difference of {runs} over the difference in"
            f" writes), {record['release']} built from {cfg}, one boot per column"
            f" ({len(kernels)} boots), {how}, {record['arch']}; each later column's change"
            f" from {first} as a difference."
            + (" Under ipcbench's --memory-pressure (stress-ng --vm): "
               + ", ".join(pressure) + "." + _reclaim(kernels) if pressure else "")
            + (" Under icount a ns is a guest instruction." if not timed
               and table.metric.endswith("ns_per_write") else "")
            + (TIMED_COUNTS if timed else "")
            + (" n/a: the kernel has no such counter." if unknown else "")
            + (" -: the boot ran no such cell." if absent else "")
            + (" Boots the lab did not pass: " + "; ".join(unclean) + "." if unclean else ""))


def _reclaim(kernels):
    """Whether the pressure made the allocator reclaim: without it, the pressure did not
    reach the page allocator that the pipe's pages come from."""
    reclaimed = [t for k, t in kernels
                 if any(c.get("reclaim") for c in k["cells"].values() if c.get("pressure"))]
    if reclaimed:
        return " The allocator reclaimed pages under it in: " + ", ".join(reclaimed) + "."
    return (" It made the allocator reclaim nothing: pgscan, pgsteal and allocstall stayed"
            " at 0 in every cell's longer run.")


def _primary(row):
    return row["primary"]


def _mq_rows(row):
    """Every cell's instructions, and the mq cells' locked instructions and irq-flag
    changes, which the patch takes one of each off."""
    return row["primary"] or row["key"].startswith("mq-") and row["path"] in (
        "cost.atomics / cost.ops", "cost.irqflags / cost.ops")


TABLES = (
    Table("v4-icount", "pipe-0000-cover-letter.patch", "v4-icount-tiny.json",
          (("mainline", "7.3.4"), ("mainline-failed-write-fix", "patch 1"),
           ("mainline-stack-arrays", "patches 1-2")),
          render_deterministic, _primary, title="tinyconfig"),
    Table("v4-icount-production", "pipe-0000-cover-letter.patch", "v4-icount-production.json",
          (("mainline", "7.3.4"), ("mainline-failed-write-fix", "patch 1"),
           ("mainline-stack-arrays", "patches 1-2")),
          render_deterministic, _primary, title="Debian config"),
    Table("pipe-bench", "pipe-0000-cover-letter.patch", "v4-pipe-bench-tiny.json",
          (("mainline", "7.3.4"), ("mainline-again", "again"),
           ("mainline-stack-arrays", "1-2")),
          render_pipe_bench, pipe_bench_rows),
    Table("engines", "pipe-0000-cover-letter.patch", "v4-pipe-bench-beside-tiny.json",
          (("mainline", "7.3.4"), ("mainline-again", "again"), ("mainline-series", "v4")),
          render_engines, engines_rows),
    Table("timed-pipe-bench", "pipe-0000-cover-letter.patch",
          "timed-pipe-bench-v4-production-2vcpu.json",
          (("mainline", "7.3.4"), ("mainline-series", "v4")), render_timed_pipe_bench,
          timed_pipe_bench_rows, title="rate"),
    Table("fastpath-fix", "pipe-0001-pipe-no-top-up-for-a-write-that-is-going-to-fail.patch",
          "v4-fastpath-debian.json", (("7.3.4", "7.3.4"), ("patch-1", "patched")),
          render_disassembly),
    Table("fastpath-helpers",
          "pipe-0002-pipe-move-the-page-pool-s-refill-and-trim-into-noinline-helpers.patch",
          "v4-fastpath-debian.json",
          (("7.3.4", "7.3.4"), ("patch-1", "patch 1"), ("patches-1-2", "patched")),
          render_disassembly),
    Table("failed-writes", "pipe-0001-pipe-no-top-up-for-a-write-that-is-going-to-fail.patch",
          "failed-writes-tiny.json",
          (("mainline", "7.3.4"), ("mainline-failed-write-fix", "patched")),
          render_conformance),
    Table("wakeups", "pipe-0000-cover-letter.patch", "census-tiny.json",
          (("mainline+wakeup-counters", "7.3.4"),), render_census,
          sites=(("pipe/write-rd", "rd_wait wakeup, end of write"),)),
    Table("wakeups-smp-write", "pipe-0000-cover-letter.patch", "census-production-2vcpu.json",
          (("mainline+wakeup-counters", "7.3.4"), ("mainline-series+wakeup-counters",
                                                   "patches 1-2")), render_census,
          sites=(("pipe/write-rd", "rd_wait wakeup at the end of a write"),),
          title="rd_wait, end of write"),
    Table("wakeups-smp-read", "pipe-0000-cover-letter.patch", "census-production-2vcpu.json",
          (("mainline+wakeup-counters", "7.3.4"), ("mainline-series+wakeup-counters",
                                                   "patches 1-2")), render_census,
          sites=(("pipe/read-wr", "wr_wait wakeup in a read"),), title="wr_wait, read"),
    *(Table(f"counts{under}-{name}", "pipe-0000-cover-letter.patch",
            f"counts-production-2vcpu{under}.json",
            (("7.3.4", "7.3.4"), ("7.3.4+v4", "patches 1-2")), render_counts, metric=metric,
            title=f"{title}{alloc_counts.METRICS[metric][0]}")
      for under, title in (("", ""), ("-pressure", "pressure, "))
      for name, metric in (("under-mutex", "under_mutex_per_write"),
                           ("found-held", "mutex_found_held_per_write"),
                           ("contentions", "mutex_contentions_per_write"))),
    Table("mqueue-pollers", "mqueue-0001-ipc-mqueue-skip-the-poll-wakeup-without-pollers.patch",
          "census-tiny.json", (("mainline+wakeup-counters", "7.3.4"),), render_census,
          sites=(("mqueue/send-poll", "send site"), ("mqueue/recv-poll", "receive site"))),
    Table("mqueue-icount-production",
          "mqueue-0001-ipc-mqueue-skip-the-poll-wakeup-without-pollers.patch",
          "v4-icount-production.json",
          (("mainline", "7.3.4"), ("mainline-mq-skip-poll-wakeup", "patched")),
          render_deterministic, _mq_rows, title="Debian config"),
    Table("mq-perf", "mqueue-0001-ipc-mqueue-skip-the-poll-wakeup-without-pollers.patch",
          "v4-mq-perf-tiny.json",
          (("mainline", "7.3.4"), ("mainline-again", "again"),
           ("mainline-mq-skip-poll-wakeup", "patched")),
          render_mq_perf, mq_perf_rows, title="mq_perf_tests nsec/msg"),
    Table("mqueue-icount", "mqueue-0001-ipc-mqueue-skip-the-poll-wakeup-without-pollers.patch",
          "v4-icount-tiny.json",
          (("mainline", "7.3.4"), ("mainline-mq-skip-poll-wakeup", "patched")),
          render_deterministic, _mq_rows, title="tinyconfig"),
)


def render(table):
    """The table's lines, from its record."""
    return table.render(table, read(table.record_path))


def by_name(names):
    known = {t.name: t for t in TABLES}
    for n in names:
        if n not in known:
            raise Error(f"no table {n!r}: one of {', '.join(known)}")
    return [known[n] for n in names] if names else list(TABLES)
