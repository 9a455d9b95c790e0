# SPDX-License-Identifier: MIT
"""One meaning per name.

"cost" is the deterministic mode's cost model (ipclab/deterministic/cost.py, `--cost`, a
results file's cost_model). Time spent per boot or per repetition, the cross-CPU wakeup
latency and the overhead of timing every write have names of their own.

"base" is a kernel base (ipclab/lab/bases.py, `--base`, kernel/bases/). The side a
comparison is made against is `old` (compare OLD NEW, ab OLD NEW, the record's `old`), and
the unpatched 6.12 kernel is the variant `lts`.

The old names must not come back in ipclab/ or scripts/."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Each old name with what it stands for now.
OLD_NAMES = [
    (r"\bcost_boot\b|\bcost_rep\b", "boot_s, rep_s: seconds per boot and per repetition"),
    (r"\bcost_per_side\b", "RunPlan.seconds_per_side"),
    (r"\bmeasured_costs\b|\bclass Costs\b", "compare.measured_step_times, StepTimes"),
    (r"\bwakeup_cost\b|wakeup cost\b", "envinfo.wakeup_latency: us per pinned round trip"),
    (r"timing-cost|\bTIMING_COST\b|_timing_cost_cells",
     "suite timing-overhead (the engine's metric timing_cost is its own name)"),
    (r"\bcosted\b", "time counted in repetitions, not a cost"),
    (r"\bspread_base\b|\bn_base\b|\bbase_(boots|vals|units|cells)\b",
     "old: the side a comparison is made against"),
    (r"metavar=\"BASE\"\)|\"BASE\", \"NEW\"|\bab BASE\b|\bcompare BASE\b|baseline -> new",
     "OLD NEW: the sides of compare and ab"),
    (r"\b(out|outcome|c|j|cmp)\.base\b", "the comparison's .old side"),
]


def sources():
    """(path relative to the root, text) of ipclab's modules and the Python scripts."""
    for path in sorted((ROOT / "ipclab").rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path.read_text()
    for path in sorted((ROOT / "scripts").iterdir()):
        if path.is_file():
            head = path.read_bytes().split(b"\n", 1)[0]
            if path.suffix == ".py" or (head.startswith(b"#!") and b"python" in head):
                yield path.relative_to(ROOT).as_posix(), path.read_text()


def old_names():
    # Whole lines, comments and strings included: a help text or a report line is a name too.
    return [f"{rel}:{n}: {what}: {line.strip()}"
            for rel, text in sources()
            for n, line in enumerate(text.splitlines(), 1)
            for pattern, what in OLD_NAMES if re.search(pattern, line)]


def test_no_old_name_comes_back():
    assert old_names() == []


def test_no_variant_is_called_base():
    series = ROOT / "kernel" / "series"
    assert (series / "lts").is_file() and not (series / "base").exists()


def test_the_check_reads_every_python_script():
    names = {rel for rel, _ in sources()}
    assert {"ipclab/power.py", "ipclab/suites.py", "scripts/engine-checks"} <= names
