# SPDX-License-Identifier: MIT
"""The series' tables in their patch files: where a table's block is, what it holds now,
and putting the table its record gives in its place (scripts/series-tables --check and
--write)."""

from ipclab import Error, proc
from ipclab.report.series import render


def _block(lines, header):
    """(start, end) of the block of non-blank lines that holds the line of the words
    `header`, or None."""
    hits = [i for i, line in enumerate(lines) if line.split() == header]
    if len(hits) != 1:
        return None
    i = j = hits[0]
    while i > 0 and lines[i - 1].strip():
        i -= 1
    while j + 1 < len(lines) and lines[j + 1].strip():
        j += 1
    return i, j + 1


def in_patch(table):
    """The table as its patch file holds it now: [lines], or None when the file has no
    block with the table's header line, or more than one."""
    lines = table.patch_path.read_text().split("\n")
    span = _block(lines, table.header)
    return None if span is None else lines[span[0]:span[1]]


def rewrite(table):
    """Put the table, rendered from its record, in place of the block in its patch file.
    True when the file changed."""
    text = table.patch_path.read_text()
    lines = text.split("\n")
    span = _block(lines, table.header)
    if span is None:
        raise Error(f"{table.patch}: no single block with the header line of table"
                    f" {table.name}; paste `scripts/series-tables {table.name}` there once")
    new = "\n".join(lines[:span[0]] + render(table) + lines[span[1]:])
    if new == text:
        return False
    proc.write_text_atomic(str(table.patch_path), new)
    return True
