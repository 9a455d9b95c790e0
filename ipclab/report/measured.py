# SPDX-License-Identifier: MIT
"""The pages under docs/measured/: each one written from a record the repository keeps, by
`scripts/measured-pages`, and checked against it by tests/test_measured_pages.py, so that a
figure the docs cite is the record's and not typed by hand.

A page is a name, the record it is read from and the function that renders it. A rendered
page names its record and the command that rewrites it; what it says of how the record
was measured (the command line, the kernel, the vCPUs, the architecture) comes from the
record too.
"""

import datetime
import io
import json
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

from ipclab import results
from ipclab.deterministic import floor
from ipclab import step_times
from ipclab.report import measured_series, series

ROOT = Path(__file__).resolve().parents[2]
PAGES_DIR = ROOT / "docs" / "measured"
REWRITE = "scripts/measured-pages"


@dataclass(frozen=True)
class Page:
    name: str           # docs/measured/NAME.md
    record: object      # a Path, or a tuple of Paths for a page of several records
    render: object      # (record) -> the page's Markdown

    @property
    def path(self):
        return PAGES_DIR / f"{self.name}.md"


def _head(title, record, how):
    rel = record.relative_to(ROOT) if record.is_relative_to(ROOT) else record
    return [f"# {title}", "",
            f"<!-- Written by {REWRITE} from {rel}; edit the record or the renderer"
            f" (ipclab/report/measured.py), never this page. -->", "",
            f"Record: [`{rel}`](../../{rel}). How it was measured: {how}", ""]


def _readme(record):
    """A kept run's README: its title (the first line) and its account, from "How it was
    taken" on."""
    text = (record / "README.md").read_text()
    return text.split("\n", 1)[0].lstrip("# "), text[text.index("How it was taken"):].strip()


def _guest_rows(meta):
    """The table rows that say what a lab boot ran: kernel and config, vCPUs, architecture
    and accelerator, from a results file's meta."""
    build, clock = meta.get("build") or {}, meta.get("clock") or {}
    distro = (build.get("distro_config") or {}).get("file")
    return [f"| kernel base and config | {(build.get('base') or {}).get('name')}"
            f" {build.get('release')}, {build.get('config_flavour')} config"
            f"{f' ({distro})' if distro else ''}"
            f"{', ' + build['compiler'] if build.get('compiler') else ''} |",
            f"| vCPUs | {clock.get('cpus')}, {clock.get('mode')}"
            f"{', running at once' if clock.get('vcpus_concurrent') else ''} |",
            f"| architecture | {meta.get('arch') or 'x86_64'}, QEMU {clock.get('qemu')}"
            f" {meta.get('accel', '').upper()} |"]


def _pct(x):
    return "n/a" if not math.isfinite(x) else f"{x * 100:.4f}%"


def render_floor(record):
    data = floor.read(record)
    out = _head(
        "The deterministic mode's A/A floor", record,
        "A/A runs of one lab kernel, `ipclab ab K K --suite icount-check --deterministic"
        " --boots N` (or `--suite seeds`), each pair of boots recorded by"
        " `scripts/icount-floor AB_DIR`. The counts are QEMU icount instruction and event"
        " counts (deterministic mode, not timed); they do not depend on the host's load.")
    out += ["Per cell and metric: the pairs k, the root mean square of their log ratios (what"
            " the rule scales its bound by), the largest |log ratio|, and the bound that"
            " keeps one row's false flags under 1 in 1000 A/A pairs if the pairs are"
            " normal, t(k, 0.9995) x rms. A cell whose boots fall into two modes says so.",
            ""]
    for e in data["floors"]:
        cells = {k: floor.from_record(v) for k, v in sorted(e.get("cells", {}).items())}
        cells = {k: f for k, f in cells.items() if f.k}
        if not cells:
            continue
        runs = sorted({(p.get("date", ""), p.get("run", "")) for v in e["cells"].values()
                       for p in v.get("pairs", [])})
        arch = results.base_arch(e.get("base", ""))
        out += [f"## Base {e.get('base')} ({e.get('release')}), {e.get('cpus')} vCPU,"
                f" {arch}, {e.get('clock')}, QEMU {e.get('qemu')}", "",
                f"Runs ({len(runs)}): " + ", ".join(f"{r} ({d})" for d, r in runs) + ".", "",
                "| cell | metric | k | rms | max | bound at 1/1000 | modes |",
                "|---|---|---:|---:|---:|---:|---|"]
        for k, f in cells.items():
            cell, path = k.split(" | ", 1)
            worst = max(abs(math.log1p(d)) for d in f.deltas)
            bound = f.quantile(1 - 0.0005) * f.rms
            out.append(f"| {cell} | {path} | {f.k} | {_pct(f.rms)} | {_pct(worst)} |"
                       f" {_pct(bound)} | {f.modes.text() if f.modes else ''} |")
        out.append("")
    return "\n".join(out)


def render_times(record):
    data = step_times.reference(record)
    out = _head(
        "What the lab's steps take", record,
        f"`{data['command']}` filled the caches on {data['machine']}"
        f" ({data['host']['cpus']} host CPUs, {data['host']['arch']}); `scripts/lab-times`, at"
        f" commit {data['commit']}, summarised every build and every successful suite boot"
        " they measured. Timed wall"
        " clock on a shared machine: other tiers ran beside these steps, so they are what a"
        " user of `make test`'s kind of load sees, not an idle machine's figures.")
    out += ["A cold build is a tree's first; an incremental one rebuilds what a patch or a"
            " commit changed in a tree that holds a build. A boot is one guest running one"
            " suite, from QEMU's start to its exit. `ab --dry-run` and `bisect --dry-run`"
            " print their estimate from the same figures, this machine's own first.", "",
            "| step | median | min | max | n |", "|---|---:|---:|---:|---:|"]
    for step, s in sorted(data["steps"].items()):
        out.append(f"| {step} | {s['median']:.1f} s | {s['min']:.1f} s | {s['max']:.1f} s |"
                   f" {s['n']} |")
    return "\n".join(out) + "\n"


COST_MODEL = ROOT / "ipclab" / "reference" / "cost-model.json"

# What each probe loop is, for a reader of the table (kernel/qemu-plugin/cost-probe.c).
PROBE_LOOPS = {"add_chain": "add_chain (one cycle)", "push_pop": "push+pop",
               "pushf_popf": "pushf+popf", "chase_16k": "chase 16 KiB (L1d)",
               "chase_512k": "chase 512 KiB (L2)", "chase_16m": "chase 16 MiB",
               "chase_1g": "chase 1 GiB"}
WEIGHT_NAMES = {"locked": "locked (per atomic)", "irqflag": "irq-flag change",
                "l1_miss": "L1d miss (served by the last level)",
                "ll_miss": "LL miss (served beyond it)"}


def render_cost_model(record):
    data = json.loads(record.read_text())
    cpu, probe = data["cpu"], data["probe"]
    load = data.get("load_average", {})
    m = data.get("machine")
    machine = (f"{m['cpus']} host CPUs ({m['cpu']}), {m['mem_gib']} GiB" if m else
               f"{cpu.get('vendor')} {cpu.get('model')}, family {cpu.get('family')}, model"
               f" {cpu.get('model_number')}, stepping {cpu.get('stepping')}")
    commit = data.get("commit") or (
        "not recorded in the file (scripts/cost-calibrate did not write it then);"
        " `git log -- ipclab/reference/cost-model.json` names the commit that stored it")
    cache = data["cache"]
    out = _head("The cost model's weights", record,
                "the host CPU's own timings of the probe's loops, not a guest's:"
                " `scripts/cost-calibrate` builds kernel/qemu-plugin/cost-probe.c and times"
                " every loop once per round, pinned to one CPU. Timed on a shared machine:"
                " each weight is taken from each loop's fastest round, since other work only"
                " adds time.")
    out += ["| | |", "|---|---|",
            f"| command | `{data.get('command') or data.get('refit')}` |",
            f"| commit | {commit} |",
            f"| machine | {machine}; load average {load.get('before')} before,"
            f" {load.get('after')} after |",
            "| kernel base and config | none: the host CPU, no guest |",
            f"| vCPUs | none; the probe pinned to host CPU {probe['cpu']},"
            f" {probe['rounds']} rounds, {probe['clock']} |",
            f"| architecture | {(m or {}).get('arch', 'x86_64')} |",
            f"| calibrated | {data['calibrated']} |", "",
            "ns per operation, over the rounds:", "",
            "| loop | fastest | median | slowest |", "|---|---:|---:|---:|"]
    for name, f in sorted(probe["ns_per_op"].items()):
        out.append(f"| {PROBE_LOOPS.get(name, name)} | {f['min']} | {f['median']} |"
                   f" {f['max']} |")
    out += ["", f"The model, in cycles of {data['cycle_ns']:g} ns"
            f" ({1 / data['cycle_ns']:.2f} GHz):", "",
            "| weight | cycles | from |", "|---|---:|---|"]
    for w, v in data["weights"].items():
        out.append(f"| {WEIGHT_NAMES.get(w, w)} | {v:g} | {data['weights_from'].get(w, '')} |")
    out += ["", f"The cache model: L1d {cache['l1d']['size'] // 1024} KiB"
            f" {cache['l1d']['ways']}-way, last level {cache['ll']['size'] // 1024} KiB"
            f" {cache['ll']['ways']}-way ({cache['ll']['is']}), {cache['line']}-byte lines,"
            f" {cache['replacement']}, indexed by {cache['index']}."]
    return "\n".join(out) + "\n"


TIMED_PIPE_BENCH = series.RECORDS / "timed-pipe-bench-production-2vcpu"


def _printed(render, *args, **kw):
    """What `render(*args, out, **kw)` writes, as text."""
    out = io.StringIO()
    render(*args, out, **kw)
    return out.getvalue()


def _kept_page(record, readme, about, rows, shown):
    """A page of runs kept whole: the README's title, a table of how they ran (rows), the
    README's account (readme: _readme's pair), then each (caption, what a command printed)
    as a code block."""
    title, how = readme
    out = _head(title, record, f"the record's README, as follows, and {about}.")
    out += ["| | |", "|---|---|", *rows, "", how]
    for caption, text in shown:
        out += ["", caption, "", "```", text.rstrip(), "```"]
    return "\n".join(out) + "\n"


def _commit(how):
    """The commit a README's account names, or "see below"."""
    m = re.search(r"commit (\w+)", how)
    return m[1] if m else "see below"


def render_timed_ab(record):
    """A timed `ab` kept whole (its two merged sides and its README): the comparison as
    `ipclab compare A B` prints it, recomputed from the sides, under what the README and
    the sides' own metadata say of how it was measured."""
    from ipclab import compare
    from ipclab.report import render_compare
    a, b = sorted(record.glob("A-*.json"))[0], sorted(record.glob("B-*.json"))[0]
    old, new = results.load(a), results.load(b)
    readme = _readme(record)
    machine = re.search(r"- machine: (.*?);", readme[1], re.S)
    rel_a, rel_b = (x.relative_to(ROOT) for x in (a, b))
    return _kept_page(record, readme, "the two sides' own metadata", [
        f"| command | see below; the comparison: `python -m ipclab compare {rel_a} {rel_b}` |",
        f"| commit | {_commit(readme[1])} |",
        f"| machine | {' '.join(machine[1].split()) if machine else 'see below'} |",
        *_guest_rows(old["meta"])],
        [("The comparison, as `ipclab compare` prints it from the two sides:",
          _printed(render_compare, compare.compare_results(old, new)))])


HOST_RUN = ROOT / "ipclab" / "reference" / "host-run"


def render_host_run(record):
    """`make run`, a host A/A and a peers run kept whole, gzipped (run; aa.a and aa.b, the
    two sides of one run; peers): what `ipclab show` and `ipclab compare` print from them,
    under the machine their own env says and the README's account of how they were taken."""
    from ipclab import compare
    from ipclab.report import render_compare, show
    files = {"run": "run.json.gz", "a": "aa.a.json.gz", "b": "aa.b.json.gz",
             "peers": "peers.json.gz"}
    res = {k: results.load(record / f) for k, f in files.items()}
    rel = {k: (record / f).relative_to(ROOT) for k, f in files.items()}
    env = res["run"].get("host") or {}

    def wall(r):
        start, end = (datetime.datetime.fromisoformat(r[k].replace("Z", "+00:00"))
                      for k in ("created", "updated"))
        return (end - start).total_seconds()

    def load(r):
        return ", ".join(map(str, (r.get("host") or {}).get("loadavg") or [])) or "?"
    a, b = res["a"], res["b"]
    return _kept_page(record, _readme(record), "the runs' own env", [
        f"| machine | {env.get('cpu')}, {env.get('nproc')} CPUs, {env.get('mem_gib')} GiB,"
        f" {env.get('virtualization') or 'no'} virtualization, THP {env.get('thp')} |",
        f"| kernel | the host's own, {env.get('kernel')} ({env.get('machine')}); timed, no"
        f" guest |",
        f"| load average when each run started | `make run`: {load(res['run'])}; the A/A:"
        f" {load(a)}; peers: {load(res['peers'])} |",
        f"| wall time, from the start to the last sample | `make run`: {wall(res['run']):.0f}"
        f" s; the A/A: {wall(a):.0f} s; peers: {wall(res['peers']):.0f} s |"],
        [(f"What `ipclab show {rel['run']}` prints (`make run` printed the same tables):",
          _printed(show, res["run"])),
         (f"What `ipclab compare {rel['a']} {rel['b']}` prints:",
          _printed(render_compare, compare.compare_results(a, b),
                   names=(a["pair"]["side"], b["pair"]["side"]))),
         (f"What `ipclab show {rel['peers']}` prints (`ipclab run peers`: each established"
          " program beside the ipcbench cell that does its work):",
          _printed(show, res["peers"]))])


PROFILE = ROOT / "ipclab" / "reference" / "profile-write-cost"


def render_profile(record):
    """A deterministic `ab --profile` kept as its first boot a side (old.json, new.json and
    their .profile.json): where the instructions went, as `ab` prints it."""
    from ipclab import profile
    from ipclab.report import render_profile_diff
    old, new = (results.load(record / f"{s}.json") for s in ("old", "new"))
    profiles = [profile.load(record / f"{s}.profile.json.gz") for s in ("old", "new")]
    readme = _readme(record)
    return _kept_page(record, readme, "the boots' own metadata", [
        f"| kernels | {results.variant(old)} against {results.variant(new)} |",
        f"| commit | {_commit(readme[1])} |",
        *_guest_rows(old["meta"])],
        [("Where the instructions went, as `ab` prints it after the comparison:",
          _printed(render_profile_diff, *profiles))])


TEST_FRESH = ROOT / "ipclab" / "reference" / "test-fresh.json"
FRESH_TIERS = ("engine", "conformance", "Python", "kernel builds", "boots")


def render_fresh(record):
    data = json.loads(record.read_text())
    out = _head("`make test` from a fresh clone", record,
                f"{data['about']} Each row is one run, in the order they ran; `-` is a figure"
                " the run's log did not print.")
    out += ["| started | commit | exit | minutes | " + " | ".join(f"{t} s" for t in FRESH_TIERS)
            + " | beside: first build, arm64 s | pytest | failed | machine, load before |",
            "|---|---|---:|---:|" + "---:|" * len(FRESH_TIERS) + "---|---|---|---|"]
    for r in data["runs"]:
        m = r.get("machine") or {}
        side = ", ".join(str(r["beside"].get(k, "-")) for k in ("first kernel build", "arm64"))
        out.append(f"| {r.get('started') or '-'} | {r['commit']} | {r['status']} |"
                   f" {r['seconds'] / 60:.1f} | "
                   + " | ".join(str(r["tiers"].get(t, "-")) for t in FRESH_TIERS)
                   + f" | {side} | {r.get('pytest') or '-'} |"
                   f" {', '.join(f'`{t}`' for t in r['failed'] + r['errors']) or 'none'} |"
                   + (f" {m['cpu']}, {m['cpus']} CPUs, {m['load_before']} |" if m else " - |"))
    return "\n".join(out) + "\n"


def _series_page(title, intro):
    def render(records):
        rels = [measured_series.rel(r, ROOT) for r in records]
        out = [f"# {title}", "",
               f"<!-- Written by {REWRITE} from {', '.join(map(str, rels))}; edit the"
               f" records or the renderer (ipclab/report/measured_series.py), never this"
               f" page. -->", "", intro, ""]
        for r in records:
            out += measured_series.section(r, ROOT)
        return "\n".join(out)
    return render


SERIES_V4 = tuple(series.RECORDS / f for f in (
    "v4-icount-tiny.json", "v4-icount-production.json", "v4-pipe-bench-tiny.json",
    "v4-mq-perf-tiny.json", "v4-pipe-bench-beside-tiny.json",
    "timed-pipe-bench-v4-production-2vcpu.json",
    "failed-writes-tiny.json", "v4-fastpath-debian.json"))
ARM64 = (series.RECORDS / "arm64-icount-tiny.json",)
CENSUS = tuple(series.RECORDS / f for f in ("census-tiny.json", "census-tiny-2vcpu.json",
                                             "census-production-2vcpu.json"))
TEST_FLAKY = ROOT / "ipclab" / "reference" / "test-flaky.json"


def render_flaky(record):
    data = json.loads(record.read_text())
    tier = data["python_tier"]
    out = _head(
        "How flaky the tests are", record,
        f"`make test-flaky` (scripts/test-flaky) at commit {data['commit']}, on"
        f" {data['machine']['cpus']} host CPUs ({data['machine']['cpu']}): the Python tier"
        f" (`pytest {' '.join(tier['args'])}`), each run a pytest session of its own, under"
        f" `{tier['load']}`; the deterministic A/A tests ("
        + "; ".join(f"{a['arch']}: `pytest {' '.join(a['args'])}`" for a in data["aa_tests"])
        + ") without that load, with the lab's cached kernels. Seconds are wall clock on a"
        " machine that other work shared. `scripts/test-flaky --summary DIR` made this"
        " record from the runs' junitxml files.")
    by_kind = {}
    for sess in data["sessions"]:
        by_kind.setdefault(sess["kind"], []).append(sess)
    out += ["| runs of | sessions | tests a session | failed sessions | median s | min s |"
            " max s |", "|---|---:|---:|---:|---:|---:|---:|"]
    for kind, ss in sorted(by_kind.items()):
        read = [x for x in ss if x.get("read")]
        secs = [x["seconds"] for x in read] or [math.nan]
        tests = sorted({x["tests"] for x in read}) or [0]
        tests_text = str(tests[0]) if len(tests) == 1 else f"{tests[0]}-{tests[-1]}"
        failed = sum(1 for x in ss if not x.get("read") or x["failed"] or x["errors"])
        out.append(f"| {kind} | {len(ss)} | {tests_text} | {failed} |"
                   f" {statistics.median(secs):.0f} | {min(secs):.0f} | {max(secs):.0f} |")
    out += ["", "Tests that failed at least once:", ""]
    out += [f"- `{f['test']}`: {f['failures']} of its runs" for f in data["failed_tests"]] \
        or ["- none"]
    return "\n".join(out) + "\n"

SLURM_OVERHEAD = ROOT / "ipclab" / "reference" / "slurm-overhead.json"
BISECT_BUILD = "build x86_64 tiny incremental"


def _bisect_rounds(commits, nodes):
    """Rounds of a search that tests `nodes` commits at once: each splits what is left into
    nodes + 1 parts (nodes 1: git bisect's halves)."""
    return max(1, math.ceil(math.log(commits) / math.log(nodes + 1) - 1e-9))


def _guest_text(g):
    """How the matrix's boots ran, as their results say (scripts/slurm-overhead, guest)."""
    return (f"Boots: {g['mode']} mode, accel {g['accel']}, QEMU {g['qemu']}, {g['cpus']} vCPU(s),"
            f" {g['config']} config, {g['arch']}, kernel {g['release']}.")


def render_slurm_overhead(record):
    data = json.loads(record.read_text())
    # the bisect's build step: lab-times.md's record, which that page renders
    build = step_times.reference()["steps"][BISECT_BUILD]
    runs = data["runs"]
    totals = {n: [sum(r["wall_s"]) for r in runs if r["executor"] == n] for n in ("local", "slurm")}
    med = {n: statistics.median(w) for n, w in totals.items()}
    ratio = med["slurm"] / med["local"]
    m = data["machine"]
    out = _head("What Slurm adds: the same matrix locally and as jobs", record,
                f"`{data['command']}` at commit {data['commit']} on {m['cpu']}, {m['cpus']}"
                f" CPUs, {m['arch']}: a one-node cluster on that machine"
                f" ({data['cluster']['slurm']}, started by tests/slurm_cluster.py in"
                f" {data['cluster']['start_s']:.0f} s, not counted), the matrix run locally"
                " and with `--executor slurm` alternately. Wall clock of the `ab` commands,"
                " start to exit, on a machine that other work may have shared.")
    opts = " ".join(data["ab_opts"])
    out += [f"The matrix: {', '.join(f'`ab {o} {n} {opts}`' for o, n in data['pairs'])},"
            f" one after another, the images already built. {_guest_text(data['guest'])}", "",
            "| executor | run | " + " | ".join(f"{o} vs {n} s" for o, n in data["pairs"])
            + " | matrix s |", "|---|---:|" + "---:|" * (len(data["pairs"]) + 1)]
    seen = {}
    for r in runs:
        seen[r["executor"]] = seen.get(r["executor"], 0) + 1
        out.append(f"| {r['executor']} | {seen[r['executor']]} | "
                   + " | ".join(f"{w:.1f}" for w in r["wall_s"]) + f" | {sum(r['wall_s']):.1f} |")
    out += ["", "| executor | median s | min s | max s | N |", "|---|---:|---:|---:|---:|"]
    out += [f"| {n} | {med[n]:.1f} | {min(w):.1f} | {max(w):.1f} | {len(w)} |"
            for n, w in totals.items()]
    c = data["counts"]
    out += ["", f"Slurm over local, ratio of the medians: **{ratio:.3f}**. The counts: every"
            f" Slurm run's per-row medians (both sides of every row of every pair) are within"
            f" {100 * c['max_relative']:.4f}% of the first local run's, and every run gave every"
            f" row {'the same' if c['same_verdicts'] else 'not the same'} verdict.", "",
            "## A bisect on 1, 4 and 16 nodes, on paper", "",
            "From the figures above and one of [lab-times.md](lab-times.md) (its"
            f" `{BISECT_BUILD}`: median {build['median']:.1f} s, n = {build['n']}, a rebuild"
            " after one patch; a commit of a bisect can touch much more), not"
            " measured: a search that tests k commits at once on k nodes takes"
            " ceil(log_(k+1) N) rounds for N commits, after GOOD and BAD, which take one"
            " round of two builds. A round's boots take what one `ab` of the matrix took"
            f" locally ({med['local'] / len(data['pairs']):.1f} s, the matrix's median over its"
            " pairs: two deterministic boots side by side, with `ab`'s start and comparison),"
            " one commit's on each of the k nodes at once. Its builds do not: the lab's"
            " cache holds one"
            " build tree per config behind one lock, so k builds take turns (today's code), or"
            " would take one build's time with a tree per node (not built). Every round is"
            f" then multiplied by the ratio above. `bisect` itself is binary (k = 1) today.", "",
            "| commits | nodes | rounds | builds take turns s | a tree per node s |",
            "|---:|---:|---:|---:|---:|"]
    boot = med["local"] / len(data["pairs"])
    for commits in (8, 100):
        for nodes in (1, 4, 16):
            rounds = _bisect_rounds(commits, nodes)
            turns = (2 * build["median"] + boot
                     + rounds * (nodes * build["median"] + boot)) * ratio
            tree = (rounds + 1) * (build["median"] + boot) * ratio
            out.append(f"| {commits} | {nodes} | {rounds} | {turns:.0f} | {tree:.0f} |")
    return "\n".join(out) + "\n"


PAGES = (Page("icount-floor", floor.FLOOR_FILE, render_floor),
         Page("slurm-overhead", SLURM_OVERHEAD, render_slurm_overhead),
         Page("test-flaky", TEST_FLAKY, render_flaky),
         Page("lab-times", step_times.REFERENCE, render_times),
         Page("cost-model", COST_MODEL, render_cost_model),
         Page("pipe-bench-timed", TIMED_PIPE_BENCH, render_timed_ab),
         Page("host-run", HOST_RUN, render_host_run),
         Page("test-fresh", TEST_FRESH, render_fresh),
         Page("profile-write-cost", PROFILE, render_profile),
         Page("series-v4", SERIES_V4, _series_page(
             "Series v4 (kernel/patches/mainline): every row of its records",
             "The records behind the tables of the v4 mails (`scripts/series-tables`, which"
             " prints each mail's few columns), here with every row and every kernel they"
             " hold. Instruction counts are QEMU icount counts, deterministic mode, not"
             " times; the timed record's figures are times under emulation, an emulator's,"
             " not a CPU's; the disassembly is of an object file, no run.")),
         Page("arm64-icount", ARM64, _series_page(
             "arm64: the icount-check cells, and two lab patches' known answers",
             "7.3.4 (`mainline`) on arm64 (QEMU's virt machine, a Neoverse-N1 CPU, the lab's"
             " own initramfs), tiny config, one vCPU, deterministic; and two lab-only patches"
             " whose effect is known by construction: `mainline-smp-mb` adds one `smp_mb()`"
             " per pipe write (a `dmb ish` on arm64), `mainline-write-cost` about 21"
             " instructions per pipe write. On arm64 the cost paths count events, they do not"
             " price them: atomics are LSE atomics plus store-exclusives, fences every DMB, DSB"
             " and ISB, irq-flag changes DAIF writes. The same cells on x86: the `mainline`"
             " column of [series-v4.md](series-v4.md).")),
         Page("census", CENSUS, _series_page(
             "The census: which wakeup sites find a sleeper",
             "`ipclab census` boots mainline with the lab's wakeup counters"
             " (`mainline+wakeup-counters`) once and runs every workload of"
             " kernel/tests/wakeup-sites; each site counts its calls and the calls that"
             " found a sleeper on the wait queue. Deterministic mode (icount): the counts a"
             " workload's design fixes repeat from boot to boot; those that depend on when a"
             " task is switched out do not (two boots of one image differed in token-ring's"
             " write-rd, seen by hand when the census was first run: [history.md]"
             "(../history.md#the-census-on-arm64)),"
             " and each table here is one boot. Two vCPUs under icount"
             " take turns, one after the other; they never run at once.")))


def rendered():
    """[(page, its text now)] of every page."""
    return [(p, p.render(p.record)) for p in PAGES]


def strays():
    """Files under docs/measured/ that no page writes: a figure there would have no record."""
    written = {p.path for p in PAGES}
    return sorted(f for f in PAGES_DIR.rglob("*") if f.is_file() and f not in written)
