# SPDX-License-Identifier: MIT
"""Pages under docs/measured/ printed from the patch series' records
(kernel/patches/records/, ipclab/report/series_records.py): every row and every kernel of a
record, where the mails (ipclab/report/series.py) show the few columns each one needs.

Each record is one section, opening with how it was measured, all of it from the record:
the command lines, the commit, the machine, the kernel base and config, the vCPUs, the
architecture and the clock.
"""

from ipclab.report.series_records import (CENSUS, CONFORMANCE_LINES, DETERMINISTIC_ROWS,
                                          DISASSEMBLY, TIMED_ROWS, read)


def rel(path, root):
    return path.relative_to(root) if path.is_relative_to(root) else path


def _name(k):
    return k.get("name") or k["variant"]


def _machine(m):
    if not m:
        return "not recorded"
    return (f"{m.get('cpus')} host CPUs ({m.get('cpu')}), {m.get('mem_gib')} GiB,"
            f" {m.get('arch')}; load average {m.get('load_when_recorded')} when recorded")


def how_measured(record, path, root):
    """The lines that say how the record was measured, as a two-column table."""
    rel_ = rel(path, root)
    cmds = "<br>".join(f"`{c}`" for c in record.get("commands", [])) or "not recorded"
    base = record.get("base")
    kernel = f"{base} {record.get('release')}" if base else f"{record.get('release')}"
    cfg = record.get("config") or "not recorded"
    cpus = record.get("cpus")
    mode = record.get("mode", "")
    if record.get("clock"):
        mode += f", {record['clock']}"
    if record.get("qemu"):
        mode += f", QEMU {record['qemu']} TCG"
    if record.get("compiler"):
        mode += f", {record['compiler']}"
    when = record.get("measured") or min((k.get("created") for k in record["kernels"]
                                         if k.get("created")), default=None)
    return ["| | |", "|---|---|",
            f"| record | [`{rel_}`](../../{rel_}) |",
            f"| command | {cmds} |",
            f"| commit | {record.get('commit')} |",
            f"| machine | {_machine(record.get('machine'))} |",
            f"| kernel base and config | {kernel}, {cfg} config |",
            f"| vCPUs | {'none: no guest ran' if cpus is None else cpus} |",
            f"| architecture | {record.get('arch')} |",
            f"| mode | {mode} |",
            f"| measured, recorded | {when or 'not recorded'}, {record.get('recorded')} |",
            ""]


def _kernels(record):
    out = []
    for k in record["kernels"]:
        patches = ", ".join(f"`{p}`" for p in k.get("patches") or []) or "no patches"
        extra = f" ({k['run']})" if k.get("run") else ""
        out.append(f"- `{_name(k)}`: {k.get('release')}, {patches}{extra}")
    return out + [""]


def _num(x):
    if x is None:
        return "-"
    return f"{x:.4g}" if abs(x) < 100 else f"{x:.1f}"


def _pct(x):
    return "n/a" if x is None else f"{x * 100:+.3f}%"


def deterministic(record):
    kernels = record["kernels"]
    old = kernels[0]
    out = [f"Each cell: the median of n samples, one boot per kernel; each kernel's change"
           f" against `{_name(old)}` and the lab's verdict (ipclab/deterministic/rule.py),"
           f" judged against the A/A floor where it has pairs (\"floor pairs\"), else each"
           f" side's spread. Kernels:", ""] + _kernels(record)
    out += ["| cell | metric | unit | n | " + " | ".join(f"`{_name(k)}`" for k in kernels)
            + " |", "|---|---|---|---:|" + "---:|" * len(kernels)]
    for row in record["rows"]:
        key = f"{row['key']} | {row['path']}"
        ns = sorted({k["cells"][key]["n"] for k in kernels if key in k["cells"]})
        line = [row["key"], row["path"], row.get("unit", ""), "/".join(map(str, ns)),
                _num(old["cells"].get(key, {}).get("median"))]
        for k in kernels[1:]:
            c = k["cells"].get(key)
            if c is None:
                line.append("-")
                continue
            floor = f", {c['floor_pairs']} floor pairs" if c.get("floor_pairs") else ""
            line.append(f"{_num(c.get('median'))} ({_pct(c.get('delta'))},"
                        f" {c.get('verdict') or 'not judged'}{floor})")
        out.append("| " + " | ".join(line) + " |")
    return out + [""]


def timed(record):
    old, new = record["kernels"]
    level = record.get("level", 0.95)
    out = [f"Each cell: the median of the boots' values (each boot's value the median of its"
           f" runs), with the least and the most, n boots a kernel, boots paired A B A B;"
           f" `{_name(new)}`'s change against `{_name(old)}` (the geometric mean of the"
           f" paired ratios), its interval (primary rows at {level * 100:.2f}%, the family of"
           f" {record.get('family')}; others at 95%) and the verdict of the lab's timed"
           f" rule (docs/statistics.md). Timed under emulation: an emulator's figures,"
           f" not a CPU's. Kernels:", ""] + _kernels(record)
    out += ["| cell | metric | unit | n | " + f"`{_name(old)}` | `{_name(new)}` | change |"
            " interval | verdict |", "|---|---|---|---:|---:|---:|---:|---|---|"]
    for row in record["rows"]:
        key = f"{row['key']} | {row['path']}"
        o, c = old["cells"][key], new["cells"][key]
        lo, hi = c.get("ci") or (None, None)
        out.append(f"| {row['key']} | {row['path']} | {row.get('unit', '')} |"
                   f" {o['n']}/{c['n']} |"
                   f" {_num(o['median'])} ({_num(o['min'])}-{_num(o['max'])}) |"
                   f" {_num(c['median'])} ({_num(c['min'])}-{_num(c['max'])}) |"
                   f" {_pct(c.get('delta'))} | [{_pct(lo)}, {_pct(hi)}] |"
                   f" {c.get('verdict') or '-'} |")
    return out + [""]


def conformance(record):
    kernels = record["kernels"]
    out = ["Pages the page allocator handed out, the whole guest's, while the test made its"
           " writes; one boot per kernel. Kernels (and the test's exit status):", ""]
    out += [f"- `{_name(k)}`: {k.get('release')},"
            f" {', '.join(f'`{p}`' for p in k.get('patches') or []) or 'no patches'};"
            f" exit {k.get('rc')}" for k in kernels] + [""]
    out += ["| case | writes | " + " | ".join(f"`{_name(k)}`" for k in kernels) + " |",
            "|---|---:|" + "---:|" * len(kernels)]
    for case in record["rows"]:
        writes = next((k["cells"][case]["writes"] for k in kernels if case in k["cells"]), "-")
        out.append(f"| {case} | {writes} | " + " | ".join(
            str(k["cells"][case]["pages"]) if case in k["cells"] else "-" for k in kernels)
            + " |")
    return out + [""]


def disassembly(record):
    kernels = record["kernels"]
    out = ["Instructions from the function's entry to the tail call of mutex_lock() or"
           " mutex_unlock() when the pool needs nothing (scripts/fastpath-insns); a"
           " `rep stos` counts once; \"inlined\": the object has no such function.", "",
           "| function | " + " | ".join(f"`{_name(k)}`" for k in kernels) + " |",
           "|---|" + "---:|" * len(kernels)]
    for func in record["rows"]:
        cells = []
        for k in kernels:
            c = k["cells"].get(func, {})
            cells.append("inlined" if c.get("inlined") else
                         f"{c.get('instructions')}, {c.get('rep')} rep stos")
        out.append(f"| {func}() | " + " | ".join(cells) + " |")
    return out + [""]


def census(record):
    sites = [f"{fam}/{s}" for fam, names in (record.get("sites") or {}).items()
             for s in names]
    out = []
    for k in record["kernels"]:
        out += [f"Calls of each wakeup site that found a sleeper / all its calls, per"
                f" workload, one boot of `{_name(k)}`"
                f" ({', '.join(k.get('patches') or []) or 'no patches'}); \"-\": the workload"
                f" never reached the site; a workload that exited non-zero says so.", "",
                "| workload | exit | " + " | ".join(s.split("/", 1)[1] for s in sites) + " |",
                "|---|---:|" + "---:|" * len(sites)]
        for name in record["rows"]:
            c = k["cells"][name]
            vals = []
            for s in sites:
                v = c["sites"].get(s, {})
                vals.append(f"{v['sleepers']}/{v['calls']}" if v.get("calls") else "-")
            out.append(f"| {name} | {c.get('rc')} | " + " | ".join(vals) + " |")
        out.append("")
    return out


KINDS = {DETERMINISTIC_ROWS: deterministic, TIMED_ROWS: timed, CONFORMANCE_LINES: conformance,
         DISASSEMBLY: disassembly, CENSUS: census}


def section(path, root, level="##"):
    """A record's section: its title, how it was measured, then its table."""
    record = read(path)
    return [f"{level} {record['title']}", ""] + how_measured(record, path, root) + \
        KINDS[record["kind"]](record)
