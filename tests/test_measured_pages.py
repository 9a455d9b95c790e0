# SPDX-License-Identifier: MIT
"""Every page under docs/measured/ is what its record gives (scripts/measured-pages), and
every page there has a record: a figure the docs cite is printed from what was measured."""
import pytest

from ipclab.report import measured


@pytest.mark.parametrize("page,text", measured.rendered(), ids=lambda x: getattr(x, "name", ""))
def test_a_page_is_its_record_rendered(page, text):
    assert page.path.read_text() == text, \
        f"{page.path} differs from {page.record}: run {measured.REWRITE}"


def test_every_file_under_docs_measured_is_written_from_a_record():
    """A page typed by hand has no record to check its figures by: none may sit beside the
    printed ones, at any depth (what was measured by hand is in docs/history.md)."""
    assert measured.strays() == [], "not written by " + measured.REWRITE


def test_measured_pages_check_names_a_stray_page(tmp_path, monkeypatch, capsys):
    """scripts/measured-pages --check fails on a page no record writes (on a copy of
    docs/measured/, so the tree is not touched)."""
    import shutil
    pages = tmp_path / "measured"
    shutil.copytree(measured.PAGES_DIR, pages)
    (pages / "by-hand").mkdir()
    (pages / "by-hand" / "stray-test.md").write_text("# typed by hand\n")
    monkeypatch.setattr(measured, "PAGES_DIR", pages)
    monkeypatch.setattr("sys.argv", ["measured-pages", "--check"])
    assert _script("measured-pages").main() == 1
    assert "stray-test.md is not written from a record" in capsys.readouterr().err
    (pages / "by-hand" / "stray-test.md").unlink()
    assert _script("measured-pages").main() == 0


REFERENCE = ["README.md", "tests/README.md"] + sorted(
    f"docs/{p.name}" for p in (measured.ROOT / "docs").glob("*.md") if p.name != "history.md")


@pytest.mark.parametrize("doc", REFERENCE)
def test_a_reference_doc_links_to_no_page_typed_by_hand(doc):
    """The reference cites measured figures from the printed pages; what was typed by hand
    is history (docs/history.md), linked as such, never a page under docs/measured/by-hand/."""
    text = (measured.ROOT / doc).read_text()
    assert "measured/by-hand" not in text, f"{doc} names a by-hand page"


SAYS = ("| command |", "| commit |", "| machine |", "| kernel base and config |", "| vCPUs |",
        "| architecture |")


@pytest.mark.parametrize("page", [p for p in measured.PAGES if isinstance(p.record, tuple)],
                         ids=lambda p: p.name)
def test_a_series_page_says_how_each_record_was_measured(page):
    text = page.path.read_text()
    for rec in page.record:
        section = text.split(f"[`{rec.relative_to(measured.ROOT)}`]", 1)
        assert len(section) == 2, f"{page.path} has no section for {rec}"
        head = section[0].rsplit("\n## ", 1)[1] + section[1].split("\n\n", 1)[0]
        for line in SAYS:
            assert line in head, f"{page.path}, {rec.name}: no {line!r} row"


def test_a_changed_record_value_shows_on_its_page(tmp_path):
    """The check compares figures, not only that a page exists: a median changed in a copy
    of a record changes the page rendered from it."""
    import json
    page = next(p for p in measured.PAGES if p.name == "series-v4")
    data = json.loads(page.record[0].read_text())
    cell = "pipe-throughput/copies=1 | counters.task_clock_ns / metrics.loops"
    data["kernels"][0]["cells"][cell]["median"] = 1234.5
    bad = tmp_path / page.record[0].name
    bad.write_text(json.dumps(data))
    text = page.render((bad,) + page.record[1:])
    assert "| 1234.5 |" in text and text != page.path.read_text()


def _script(name):
    from importlib.machinery import SourceFileLoader
    from importlib.util import module_from_spec, spec_from_loader
    loader = SourceFileLoader(name.replace("-", "_"), str(measured.ROOT / "scripts" / name))
    mod = module_from_spec(spec_from_loader(loader.name, loader))
    loader.exec_module(mod)
    return mod


def test_a_cost_model_file_says_how_it_was_made_and_its_page_says_so(tmp_path):
    """scripts/cost-calibrate writes the command line, the commit and the machine into the
    file; the page prints them in place of "not recorded"."""
    import json
    how = _script("cost-calibrate").provenance(["cost-calibrate", "--rounds", "41"])
    assert how["command"] == "scripts/cost-calibrate --rounds 41"
    assert how["commit"] and how["machine"]["cpus"]
    data = json.loads(measured.COST_MODEL.read_text())
    data.update(how)
    rec = tmp_path / "cost-model.json"
    rec.write_text(json.dumps(data))
    text = measured.render_cost_model(rec)
    assert f"| commit | {how['commit']} |" in text
    assert "| command | `scripts/cost-calibrate --rounds 41` |" in text
    assert f"{how['machine']['cpus']} host CPUs" in text


def code_blocks(doc, marker):
    """The code blocks of a doc that hold `marker`."""
    return [b for b in (measured.ROOT / doc).read_text().split("```")[1::2] if marker in b]


def not_in_page(block, page):
    """The lines of an excerpt that its page does not print. A line cut short ends in
    "  ...", and "..." alone stands for lines left out."""
    lines = page.splitlines()
    missing = []
    for line in block.strip("\n").splitlines():
        if line.strip() == "...":
            continue
        cut = line.endswith("  ...")
        want = line[:-len("  ...")] if cut else line
        if not any(p.startswith(want) if cut else p == want for p in lines):
            missing.append(line)
    return missing


@pytest.mark.parametrize("doc, marker, count, page", [
    ("README.md", "seed-pipe-prealloc: ", 2, "host-run"),
    ("docs/lab.md", "all functions", 1, "profile-write-cost"),
])
def test_an_example_output_in_the_docs_is_an_excerpt_of_its_measured_page(doc, marker, count,
                                                                          page):
    blocks = code_blocks(doc, marker)
    assert len(blocks) == count, f"{doc}: expected {count} example output(s) with {marker!r}"
    text = {p.name: p for p in measured.PAGES}[page]
    rendered = text.render(text.record)
    assert [line for b in blocks for line in not_in_page(b, rendered)] == []
