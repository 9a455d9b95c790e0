# SPDX-License-Identifier: MIT
"""The mainline series' commit messages read as upstream expects (docs/design.md, "Kernel
patches"): nothing that only means something inside this project, upstream commits cited as
commit <12 hex> ("subject"), and the credit and link that the skip-wakeup patch owes.  The
6.12 series is not for sending (four of its six patches reimplement upstream commits, and
stable takes upstream's own), so its messages may say how the lab measured it."""
import re
from pathlib import Path

import pytest
from conftest import ROOT

PATCHES = sorted(p for p in (Path(ROOT) / "kernel" / "patches" / "mainline").glob("0*.patch")
                 if not p.name.startswith("0000-"))

# Words that name the lab, its variants or the series' own numbering: meaningless in git
# history once the patch is applied.
LAB_WORDS = re.compile(r"ipclab|\blab\b|\blab's\b|\bvariant\b|\bseed\b|patch \d of|"
                       r"this series|conformance|kernel/tests/|icount-|\bab\b", re.I)
COMMIT_REF = re.compile(r"\bcommit\s+([0-9a-f]+)\b(\s*\(\"[^\"]+\"\))?")


def message(path):
    """The commit message: from the subject to the '---' that starts the diffstat."""
    text = path.read_text()
    body = text[text.index("\nSubject: "):text.index("\n---\n")]
    return body


def test_there_are_series_to_check():
    assert len(PATCHES) >= 4, PATCHES


@pytest.mark.parametrize("path", PATCHES, ids=lambda p: p.name)
def test_message_names_nothing_of_the_lab(path):
    found = sorted({m.group(0) for m in LAB_WORDS.finditer(message(path))})
    assert not found, f"{path.name}: {found}"


@pytest.mark.parametrize("path", PATCHES, ids=lambda p: p.name)
def test_upstream_commits_are_cited_with_twelve_digits_and_subject(path):
    for m in COMMIT_REF.finditer(message(path)):
        assert len(m.group(1)) >= 12 and m.group(2), f"{path.name}: {m.group(0)!r}"


def test_skip_wakeup_credits_wangyuli_and_links_the_thread():
    (path,) = [p for p in PATCHES if "skip-the-reader-wakeup" in p.name]
    msg = message(path)
    assert "\nSuggested-by: WangYuli <wangyuli@uniontech.com>\n" in msg + "\n"
    assert re.search(r"\nLink: https://lore\.kernel\.org/\S+uniontech\.com/", msg)
