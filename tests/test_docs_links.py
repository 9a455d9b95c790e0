# SPDX-License-Identifier: MIT
"""The docs hold together: every relative Markdown link and anchor in README.md, docs/**/*.md
and tests/README.md names a file and a heading that exist, and docs/lab.md stays a reference
(no heading carries a date: measurements go under docs/measured/, with their dates)."""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`[^`]*`")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


def doc_files():
    files = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "tests", "README.md")]
    for top, _, names in os.walk(os.path.join(ROOT, "docs")):
        files += [os.path.join(top, n) for n in sorted(names) if n.endswith(".md")]
    return [f for f in files if os.path.exists(f)]


def prose_lines(path):
    """(line number, line) outside fenced code blocks."""
    inside = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if FENCE.match(line):
                inside = not inside
                continue
            if not inside:
                yield n, line.rstrip("\n")


def headings(path):
    return [(n, line) for n, line in prose_lines(path) if re.match(r"#{1,6} ", line)]


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped,
    spaces to '-'."""
    text = re.sub(r"^#{1,6} ", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for _, h in headings(path):
        s = slug(h)
        out.add(s if s not in seen else f"{s}-{seen[s]}")
        seen[s] = seen.get(s, 0) + 1
    return out


def broken_links(path):
    bad = []
    for n, line in prose_lines(path):
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):        # http:, mailto:, ...
                continue
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            where = f"{os.path.relpath(path, ROOT)}:{n}: {target}"
            if not os.path.exists(dest):
                bad.append(f"{where}: no such file")
            elif anchor and (not dest.endswith(".md") or anchor not in anchors(dest)):
                bad.append(f"{where}: no such heading")
    return bad


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: os.path.relpath(p, ROOT))
def test_every_relative_link_and_anchor_resolves(path):
    assert broken_links(path) == []


def test_the_lab_reference_has_no_dated_heading():
    dated = [f"{n}: {h}" for n, h in headings(os.path.join(ROOT, "docs", "lab.md"))
             if DATE.search(h)]
    assert dated == []


def test_the_checks_find_what_they_look_for(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("# A title: `x`\n\n## Measured (2026-11-24)\n\n"
                   "[ok](a.md#a-title-x) [gone](b.md) [bad](a.md#nope) `[code](c.md)`\n"
                   "```\n[fenced](d.md)\n```\n")
    assert [b.rsplit(": ", 1)[1] for b in broken_links(str(doc))] == [
        "no such file", "no such heading"]
    assert [h for _, h in headings(str(doc)) if DATE.search(h)] == ["## Measured (2026-11-24)"]
