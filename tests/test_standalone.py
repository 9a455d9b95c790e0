# SPDX-License-Identifier: MIT
"""The project stands alone: no tracked file points at anything outside the repository, and
every figure from outside says where it was published, what it was measured on and in what
units (docs/design.md, "Rules the numbers follow")."""
import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

from ipclab import suites, views

REFERENCE = Path(ROOT) / "ipclab" / "reference"
# Spelled in pieces, so that this file does not match itself.
OUTSIDE = ["../" + "shared", "shared/" + "seeds", "DESIGN" + ".md"] + [
    stem + ".txt" for stem in ("fast-pipes-" + "blog", "mqueue-" + "node-cache",
                               "pipe-" + "exclusive-waits", "pipe-" + "prealloc-outside-mutex",
                               "pipe-" + "skip-wakeup-without-sleepers")]


def tracked_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"not a git checkout: {e}")
    return [Path(ROOT) / p for p in out.decode().split("\0") if p]


def test_no_tracked_file_points_outside_the_repository():
    found = []
    for path in tracked_files():
        if not path.is_file():
            continue    # deleted in the work tree, not yet in the index
        data = path.read_bytes()
        for needle in OUTSIDE:
            if needle.encode() in data:
                line = data[:data.index(needle.encode())].count(b"\n") + 1
                found.append(f"{path.relative_to(ROOT)}:{line}: {needle}")
    assert not found, "references to files outside the repository:\n" + "\n".join(found)


def seed_references():
    # The lab's own measured records (a schema of ipclab's, or the cost model), not
    # published seed figures.
    return sorted(p.stem for p in REFERENCE.glob("*.json")
                  if p.stem != "cost-model" and not
                  str(json.loads(p.read_text()).get("schema", "")).startswith("ipclab-"))


def test_every_suite_reference_is_checked_here():
    used = {s.seed for s in suites.SUITES.values() if s.seed}
    assert used and used <= set(seed_references())


def has_units(block):
    """A unit for the whole set, or one per cell."""
    if isinstance(block.get("unit"), str) and block["unit"]:
        return True
    units = block.get("units")
    return isinstance(units, dict) and set(units) == set(block.get("cells", {})) \
        and all(isinstance(u, str) and u for u in units.values())


@pytest.mark.parametrize("stem", seed_references())
def test_reference_figures_carry_source_machine_and_units(stem):
    ref = json.loads((REFERENCE / f"{stem}.json").read_text())
    src = ref.get("source")
    assert isinstance(src, dict), f"{stem}: source must say where the figures were published"
    assert src.get("subject") or src.get("title")
    if src.get("commit"):
        assert re.fullmatch(r"[0-9a-f]{10,40}", src["commit"])
    if src.get("url"):
        assert src["url"].startswith("https://")
    if src.get("date"):
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", src["date"])
    followable = src.get("url") or src.get("commit") or \
        (src.get("list") and src.get("subject") and src.get("date"))
    # A source without a public id says so, and says what it lacks.
    assert followable or src.get("note"), f"{stem}: no commit, URL or list+subject+date"
    assert isinstance(ref.get("machine"), str) and ref["machine"]
    assert ref.get("figures")
    for name, block in ref["figures"].items():
        assert block.get("cells"), f"{stem}/{name}: no figures"
        assert has_units(block), f"{stem}/{name}: no units"
    cite = views.citation(ref)
    for key in ("commit", "url", "list", "date"):
        if src.get(key):
            assert src[key] in cite


def test_the_icount_floor_says_how_it_was_measured():
    data = json.loads((REFERENCE / "icount-floor.json").read_text())
    assert data.get("about") and data.get("schema") == "ipclab-icount-floor/2"
    for entry in data["floors"]:
        assert entry.get("clock") and entry.get("base") and entry.get("cells")
        for cell in entry["cells"].values():
            # every pair with its medians, N, run and date; an older maximum only as such
            for p in cell.get("pairs", []):
                assert len(p["medians"]) == 2 and len(p["n"]) == 2 and p["run"]
                assert p["date"] and p["delta"] == p["medians"][1] / p["medians"][0] - 1
            if "legacy" in cell:
                assert cell["legacy"]["measured"] and "max_abs_delta" in cell["legacy"]
            assert cell.get("pairs") or cell.get("legacy")
