# SPDX-License-Identifier: MIT
"""The mainline series' commit messages read as upstream expects (docs/design.md, "Kernel
patches"): nothing that only means something inside this project, upstream commits cited as
commit <12 hex> ("subject"), an Assisted-by line as the base's
Documentation/process/coding-assistants.rst asks, no __uninitialized, the Fixes: and Cc that
the failed-write fix owes upstream's pre-allocation, and the credit and link that the
cover letter owes the rd_wait wakeup test it leaves out, and subjects that number their
series.  One series per kernel tree (kernel/patches/mainline/NAME-NNNN-*).
The 6.12 series is not for sending (four of its six patches reimplement upstream commits,
and stable takes upstream's own), so its messages may say how the lab measured it."""
import re
from pathlib import Path

import pytest
from conftest import ROOT

MAILS = sorted(p for p in (Path(ROOT) / "kernel" / "patches" / "mainline").glob("*.patch")
               if re.fullmatch(r"[a-z][a-z0-9]*-\d{4}-.+\.patch", p.name)
               and not p.name.startswith("lab-"))
PATCHES = [p for p in MAILS if not re.match(r"[a-z0-9]+-0000-", p.name)]
COVERS = [p for p in MAILS if re.match(r"[a-z0-9]+-0000-", p.name)]

# Words that name the lab, its variants or the series' own numbering: meaningless in git
# history once the patch is applied.
LAB_WORDS = re.compile(r"ipclab|\blab\b|\blab's\b|\bvariant\b|\bseed\b|patch \d of|"
                       r"this series|conformance|kernel/tests/|icount-|\bab\b", re.I)
COMMIT_REF = re.compile(r"\bcommit\s+([0-9a-f]+)\b(\s*\(\"[^\"]+\"\))?")
# Anything that reads as an abbreviated commit id: hex with a digit and a letter.
HEX_ID = re.compile(r"(?<![\w/.+-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w/.-])")
# Documentation/process/coding-assistants.rst of 7.3.4: "Assisted-by: LLM [TOOL1] [TOOL2]".
ASSISTED_BY = re.compile(r"^Assisted-by: LLM( [A-Za-z0-9_.-]+)*$", re.M)
# Upstream's pre-allocation (7.2), which the failed-write fix corrects, and its author.
PREALLOC_FIXES = ('Fixes: 212ed884a1ae ("fs/pipe: pre-allocate pages outside pipe->mutex in '
                  'anon_pipe_write")')
PREALLOC_AUTHOR = "Cc: Breno Leitao <leitao@debian.org>"
# The commit that made the pre-allocation one per-pipe pool (7.3), which the fix also corrects.
POOL_FIXES = ('Fixes: f7f4665dc520 ("fs/pipe: unify the page pools into a single per-pipe '
              'pool")')


def message(path):
    """The commit message: from the subject to the '---' that starts the diffstat."""
    text = path.read_text()
    body = text[text.index("\nSubject: "):text.index("\n---\n")]
    return body


def test_there_are_series_to_check():
    # v4: the pipe series' two patches and the mqueue patch.
    assert len(PATCHES) >= 3, PATCHES


@pytest.mark.parametrize("path", PATCHES, ids=lambda p: p.name)
def test_message_names_nothing_of_the_lab(path):
    found = sorted({m.group(0) for m in LAB_WORDS.finditer(message(path))})
    assert not found, f"{path.name}: {found}"


def body(path):
    """A cover letter's text after its headers, or a patch's message."""
    text = path.read_text()
    if path in COVERS:
        return text[text.index("\n\n"):]
    return message(path)


@pytest.mark.parametrize("path", MAILS, ids=lambda p: p.name)
def test_upstream_commits_are_cited_with_twelve_digits_and_subject(path):
    text = body(path)
    for m in COMMIT_REF.finditer(text):
        assert len(m.group(1)) >= 12 and m.group(2), f"{path.name}: {m.group(0)!r}"
    # A bare id, or one in a Fixes: tag, needs the same: 12 digits or more and the subject.
    for m in HEX_ID.finditer(text):
        after = text[m.end():m.end() + 3].replace("\n", " ")
        assert len(m.group(0)) >= 12 and after.startswith((' ("', ' (\'')), \
            f"{path.name}: {text[max(0, m.start() - 20):m.end() + 20]!r}"


@pytest.mark.parametrize("path", PATCHES, ids=lambda p: p.name)
def test_each_patch_says_a_tool_assisted(path):
    assert ASSISTED_BY.search(message(path)), \
        f"{path.name}: no 'Assisted-by: LLM [TOOL ...]' line (coding-assistants.rst)"


@pytest.mark.parametrize("path", MAILS, ids=lambda p: p.name)
def test_no_uninitialized_stack(path):
    # __uninitialized on arrays in generic code invites hardening pushback; the arrays move
    # into the branches that use them instead.
    assert "__uninitialized" not in path.read_text(), path.name


def test_failed_write_fix_carries_fixes_and_cc():
    (path,) = [p for p in PATCHES if "+static unsigned int anon_pipe_prefill_need(" in
               p.read_text()]
    lines = message(path).splitlines()
    assert PREALLOC_FIXES in lines, f"{path.name}: no {PREALLOC_FIXES}"
    assert POOL_FIXES in lines, f"{path.name}: no {POOL_FIXES}"
    assert PREALLOC_AUTHOR in lines, f"{path.name}: no {PREALLOC_AUTHOR}"


def test_one_series_per_tree():
    trees = {}
    for p in PATCHES:
        files = {m.group(1) for m in re.finditer(r"^\+\+\+ b/(\S+)", p.read_text(), re.M)}
        trees.setdefault(p.name.split("-", 1)[0], set()).update(f.split("/", 1)[0] for f in files)
    assert trees and all(len(t) == 1 for t in trees.values()), trees
    assert len({t for ts in trees.values() for t in ts}) == len(trees), trees
    for name in trees:
        covers = [c for c in COVERS if c.name.startswith(name + "-0000-")]
        single = len([p for p in PATCHES if p.name.startswith(name + "-")]) == 1
        # A single patch is sent without a cover letter; a series has exactly one.
        assert len(covers) == (0 if single else 1), f"series {name}: {covers}"


def test_subjects_number_their_series():
    """NAME-NNNN-*.patch is [PATCH vV N/TOTAL] of its series, the cover letter [PATCH vV
    0/TOTAL], one version for the whole series; a single patch is [PATCH vV] (vV optional)."""
    for name in {p.name.split("-", 1)[0] for p in MAILS}:
        mails = [p for p in MAILS if p.name.startswith(name + "-")]
        total = len(mails) - 1
        versions = set()
        for p in mails:
            number = int(p.name.split("-")[1])
            subject = re.search(r"^Subject: \[PATCH(?: (v\d+))?(?: (\d+)/(\d+))?\]",
                                p.read_text(), re.M)
            assert subject, f"{p.name}: no [PATCH ...] subject"
            versions.add(subject.group(1))
            if len(mails) == 1:
                assert subject.group(2) is None and number == 1, p.name
            else:
                assert subject.group(2), f"{p.name}: no N/TOTAL in the subject"
                assert (int(subject.group(2)), int(subject.group(3))) == (number, total), \
                    p.name
        assert len(versions) == 1, f"series {name}: versions {versions}"


def test_the_wakeup_skip_left_out_links_its_proposal():
    """The pipe cover letter says why the rd_wait wakeup test is not in the series, and links
    the thread where WangYuli proposed it."""
    (cover,) = [p for p in COVERS if p.name.startswith("pipe-")]
    text = cover.read_text()
    assert "wq_has_sleeper()" in text
    assert re.search(r"https://lore\.kernel\.org/\S+uniontech\.com/", text)
