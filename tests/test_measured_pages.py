# SPDX-License-Identifier: MIT
"""Every page under docs/measured/ is what its record gives (scripts/measured-pages), and
every page there has a record: a figure the docs cite is printed from what was measured."""
import pytest

from ipclab.report import measured


@pytest.mark.parametrize("page,text", measured.rendered(), ids=lambda x: getattr(x, "name", ""))
def test_a_page_is_its_record_rendered(page, text):
    assert page.path.read_text() == text, \
        f"{page.path} differs from {page.record}: run {measured.REWRITE}"


def test_every_page_under_docs_measured_has_a_record():
    pages = {p.path for p in measured.PAGES}
    assert {p for p in measured.PAGES_DIR.glob("*.md")} <= pages

