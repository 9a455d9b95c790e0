# SPDX-License-Identifier: MIT
"""The deterministic mode's cost model: what a patch trades besides instructions.

An instruction count weighs a `lock addl` like a `mov` and cannot see the cache. In the
deterministic mode the lab's QEMU plugin (kernel/qemu-plugin/insncount.c) also counts, from
outside the guest, the events that cost: locked read-modify-writes ("atomics"), fences,
interrupt-flag changes, memory loads and stores, and the misses of a simple deterministic
data-cache model (an L1d per vCPU and one last level). This module owns:

- the plugin's output format (`read_counts`) and the options the model gives it;
- the model file, ipclab/reference/cost-model.json: the cache geometry and the weights,
  calibrated on a real CPU by scripts/cost-calibrate (kernel/qemu-plugin/cost-probe.c);
- estimated cycles: instructions + sum of weight x event count, as cachegrind's and
  CodSpeed's estimates are built. It is a model, not a measurement (`CAVEAT`);
- each sample's counts over its measured section (`sample_costs`) and the per-operation rows
  a deterministic comparison adds (`row_paths`, `judge_counts`), under rule.judge's rule.
"""

import json
import math
from dataclasses import replace
from pathlib import Path

from ipclab import EXIT_FAILED, Error, envinfo, stats
from ipclab.deterministic import clock, rule


MODEL_FILE = Path(__file__).parents[1] / "reference" / "cost-model.json"
PLUGIN_SCHEMA = "ipclab-insncount/2"
# The plugin's fields, in its order (insncount.c's x86_field_names, then mem_field_names).
FIELDS = ("insns", "locked", "mfences", "lfences", "sfences", "irqflags", "loads", "stores",
          "l1_misses", "ll_misses")
# Under qemu-system-aarch64 (insncount.c's a64_field_names, a64-events.h): LSE atomics,
# load- and store-exclusives, acquire and release accesses, barriers by kind, DAIF writes.
A64_BARRIERS = ("dmb_ish", "dmb_ishld", "dmb_ishst", "dmb_other", "dsb", "isb")
A64_FIELDS = ("insns", "lse", "ldex", "stex", "acquire", "release", *A64_BARRIERS, "daif",
              "loads", "stores", "l1_misses", "ll_misses")
# What each weight of the model file multiplies.
WEIGHTED = {"locked": "locked", "mfence": "mfences", "lfence": "lfences", "sfence": "sfences",
            "irqflag": "irqflags", "l1_miss": "l1_misses", "ll_miss": "ll_misses"}
# The rows a comparison shows, per operation: (name in a sample's "cost", label).
ROWS = (("atomics", "atomics"), ("fences", "fences"),
        # arm64 only: its barriers by kind (x86's fences are one kind that matters, MFENCE,
        # and smp_mb() is a locked add there) and its ordered accesses
        ("dmb_ish", "dmb ish"), ("dmb_ishld", "dmb ishld"), ("dmb_ishst", "dmb ishst"),
        ("dmb_other", "dmb other"), ("dsb", "dsb"), ("isb", "isb"),
        ("acquire", "acquire accesses"), ("release", "release accesses"),
        ("irqflags", "irq-flag changes"), ("loads", "loads"), ("stores", "stores"), ("l1_misses", "L1d misses"),
        ("ll_misses", "LL misses"), ("est_cycles", "est. cycles"))
ROW_LABEL = dict(ROWS)
CAVEAT = ("estimated cycles are a model, not a measurement: instructions plus atomics, fences"
          " and the misses of a simulated cache, each weighted by what it cost on the CPU the"
          " weights were calibrated on")
A64_CAVEAT = ("arm64: events are counted, not priced (no arm64 CPU here to calibrate weights"
              " on, so no est. cycles); atomics are LSE atomics plus store-exclusives (one per"
              " LL/SC attempt), fences every DMB, DSB and ISB, irq-flag changes DAIF writes")


def load_model(path=MODEL_FILE):
    """The model file as a dict, or None when there is none."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("weights"), dict) else None


def is_arm64(names):
    """Whether cost rows or counts with these names were counted on arm64."""
    return any(n in A64_BARRIERS or n == "lse" for n in names)


def plugin_options(model):
    """The plugin's cache geometry options from the model."""
    cache = (model or {}).get("cache") or {}
    out = []
    for level, opt in (("l1d", "l1"), ("ll", "ll")):
        c = cache.get(level)
        if c:
            out += [f"{opt}_size={int(c['size'])}", f"{opt}_ways={int(c['ways'])}"]
    return out


def estimate(counts, model):
    """Estimated cycles of a dict of plugin counts: instructions plus weighted events; None
    when a weighted field was not counted (the memory model off) or there is no model."""
    if not model or "insns" not in counts:
        return None
    total = float(counts["insns"])
    for weight, field in WEIGHTED.items():
        w = float(model["weights"].get(weight, 0.0))
        if w:
            if field not in counts:
                return None
            total += w * counts[field]
    return total


# --------------------------------------------------------------------------- the plugin's file


def read_counts(path):
    """(fields, samples, windows) from the plugin's output.

    samples: {N: {field: count}} of all code in sample window N (the engine's measured
    sections, numbered as the engine's counters.window); windows: {N: {address or "user":
    {field: count}}} of the profile windows. A file of the first format (address and
    instructions only) reads as the field insns alone.
    """
    fields, samples, windows, cur = ("insns",), {}, {}, None
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                head = line[1:].split()
                if head[:2] == [PLUGIN_SCHEMA, "fields:"]:
                    fields = tuple(head[2:])
                continue
            parts = line.split()
            if len(parts) < 2:
                continue
            if parts[0] == "window":
                cur = windows.setdefault(int(parts[1]), {})
            elif parts[0] == "sample":
                vals = [int(x) for x in parts[2:2 + len(fields)]]
                if len(vals) == len(fields):
                    samples[int(parts[1])] = dict(zip(fields, vals))
            elif cur is not None and len(parts) == 1 + len(fields):
                key = "user" if parts[0] == "user" else int(parts[0], 16)
                acc = cur.setdefault(key, dict.fromkeys(fields, 0))
                for k, v in zip(fields, parts[1:]):
                    acc[k] += int(v)
    return fields, samples, windows


def derived(counts, model):
    """A sample's cost record from raw plugin counts: the rows' names, est. cycles added."""
    out = {"insns": counts.get("insns"), "atomics": counts.get("locked"),
           "irqflags": counts.get("irqflags")}
    if "lse" in counts:
        out.update(atomics=counts["lse"] + counts["stex"], irqflags=counts["daif"],
                   fences=sum(counts[k] for k in A64_BARRIERS))
        out.update({k: counts[k] for k in (*A64_BARRIERS, "lse", "ldex", "stex", "acquire",
                                           "release")})
    if all(k in counts for k in ("mfences", "lfences", "sfences")):
        out["fences"] = counts["mfences"] + counts["lfences"] + counts["sfences"]
        out.update({k: counts[k] for k in ("mfences", "lfences", "sfences")})
    for k in ("loads", "stores", "l1_misses", "ll_misses"):
        if k in counts:
            out[k] = counts[k]
    est = estimate(counts, model)
    if est is not None:
        out["est_cycles"] = est
    return {k: v for k, v in out.items() if v is not None}


def window_problem(samples, marks):
    """Why the plugin's sample windows cannot be the engine's, or None. The engine made
    `marks` marks (its mark file's size); each ends a window and starts the next, so the
    plugin must have closed windows 1 .. marks - 1, no more, no fewer."""
    if set(samples) == set(range(1, marks)):
        return None
    return (f"the engine made {marks} window marks but the plugin closed {len(samples)}"
            " windows: a marker system call the plugin did not see (its entry point is not"
            " the one System.map names?); no cost counts attached")


def sample_costs(res, counts_path, model, marks=None):
    """{(cell index, sample index): cost record} for the samples of a results file whose
    measured section the plugin counted: the counts of that window, and the sample's
    operations (clock.operations) to divide them by. With `marks` (how many the
    engine made), Error when the plugin's windows do not match them."""
    _, samples, _ = read_counts(counts_path)
    if marks is not None:
        problem = window_problem(samples, marks)
        if problem:
            raise Error(problem, EXIT_FAILED)
    out = {}
    for ci, cell in enumerate(res.get("cells", [])):
        for si, smp in enumerate(cell.get("samples", [])):
            w = (smp.get("counters") or {}).get("window")
            counts = samples.get(w) if isinstance(w, int) else None
            ops = clock.operations(smp, cell.get("workload"))
            if counts is None or not ops:
                continue
            out[(ci, si)] = dict(derived(counts, model), window=w, ops=ops)
    return out


def model_record(model, memory="cache"):
    """What a results file keeps of the model its cost records were made with; memory: what
    the plugin counted of memory (cache or off); host_cpu: the CPU of the host that counted,
    where est. cycles would be wanted."""
    if not model:
        return {"weights": None, "memory": memory}
    return {"weights": model["weights"], "cache": model.get("cache"), "memory": memory,
            "cpu": (model.get("cpu") or {}).get("model"), "calibrated": model.get("calibrated"),
            "host_cpu": envinfo.cpu_model()}


# --------------------------------------------------------------------------- comparing


def row_path(name):
    return f"cost.{name} / cost.ops"


def row_paths(cell):
    """[(path, name, unit)] of the cost rows a cell's samples carry, in ROWS order."""
    have = set()
    for smp in cell.get("samples", []):
        if not smp.get("warmup"):
            have.update((smp.get("cost") or {}).keys())
    op = clock.OP_COST.get(cell.get("workload"), (None, "message"))[1]
    return [(row_path(name), name, f"/{op}") for name, _ in ROWS if name in have]


# A count that moved by less than this per operation did not move for a reviewer: it is an
# event in fewer than one operation in a hundred (a fence some other task ran once in a
# window), whatever its ratio.
MIN_EVENTS = 0.01


def judge_counts(old_vals, new_vals, floor=None, family=1):
    """rule.judge for an event count, which may be zero: both sides all zero is
    no change; zero before and not after has no ratio, and is a change when the new side's
    median interval stays above zero.  The cell's `family` cost rows share its 5% level
    (Bonferroni), so that a cell's cost rows together keep the instruction row's rate.  A
    difference of medians under MIN_EVENTS per operation is no change."""
    sb, sn = stats.summarize(old_vals), stats.summarize(new_vals)
    k = floor.k if floor is not None else 0
    rms = floor.rms if k else math.nan
    if sb.n and sn.n and not sb.median:
        if not any(old_vals) and not any(new_vals):
            return rule.Judgement(sb, sn, 1.0, 0.0, 0.0, rms, 0.0, "within noise", k)
        r = rule.median_ci_rank(len(new_vals))
        above = bool(r) and sorted(new_vals)[r - 1] > 0
        j = rule.Judgement(sb, sn, math.nan, math.nan, math.nan, rms, math.nan,
                                    "worse" if above else "within noise", k)
    else:
        j = rule.judge(old_vals, new_vals, "lower", floor,
                                level=1 - stats.ALPHA / max(family, 1))
    if j.is_change and abs(sn.median - sb.median) < MIN_EVENTS:
        return replace(j, verdict="within noise",
                       note=f"moved by under {MIN_EVENTS:g} per operation")
    return j


def caveat(record, arm64=False):
    """CAVEAT for counts made with the model `record` (model_record: what the samples keep as
    meta.cost_model), with where its weights come from, and a word when they were not fitted
    on the CPU of the host that counted. Not the model file on disk, nor the CPU of the
    machine that prints: the samples' own record says what their est. cycles mean. For
    arm64's counts, A64_CAVEAT instead."""
    if arm64:
        return A64_CAVEAT
    if not record:
        return CAVEAT
    if not record.get("weights"):
        return (CAVEAT + "; these counts were made without a model file"
                " (ipclab/reference/cost-model.json): est. cycles are not computed, run"
                " scripts/cost-calibrate")
    cpu = record.get("cpu") or "unknown"
    text = f"{CAVEAT} ({cpu}, {(record.get('calibrated') or '?')[:10]})"
    host = record.get("host_cpu")
    if host and host != cpu:
        text += f"; the samples were counted on a {host} host: refit with scripts/cost-calibrate"
    return text
