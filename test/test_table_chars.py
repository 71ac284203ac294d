"""The lean finder sees exactly PyMuPDF's tables, writes the same Markdown, and leaves PyMuPDF's
own `find_tables()` untouched for other threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pymupdf
import pytest
from helpers import DEMO_PDF, shared_eval_file

from citerag.parse import tables as table_module
from citerag.parse.table_chars import RuledRow, RuledTable, find_ruled_tables

NETFLIX_STATEMENTS = range(38, 48)  # the financial statements: many ruled tables


def _stock(page: pymupdf.Page, paths: list[dict[str, object]]) -> list[RuledTable]:
    found = page.find_tables(use_layout=False, paths=paths).tables
    return [
        RuledTable(
            bbox=tuple(t.bbox),
            rows=tuple(RuledRow(bbox=tuple(r.bbox), cells=tuple(r.cells)) for r in t.rows),
        )
        for t in found
    ]


def _pages(name: str) -> tuple[Path, range]:
    if name == "demo":
        return DEMO_PDF, range(len(pymupdf.open(DEMO_PDF)))
    return shared_eval_file("finance", "NETFLIX_2020_10K.pdf"), NETFLIX_STATEMENTS


@pytest.mark.parametrize("name", ["demo", "netflix"])
def test_lean_characters_find_the_same_tables(name: str) -> None:
    path, pages = _pages(name)
    doc = pymupdf.open(path)
    found = 0
    for number in pages:
        page = doc[number]
        stock = _stock(page, page.get_drawings())
        assert find_ruled_tables(page, page.get_drawings()) == stock
        found += len(stock)
    assert found > 0


def test_table_markdown_is_the_same_as_with_pymupdfs_own_finder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, pages = _pages("netflix")
    doc = pymupdf.open(path)
    lean = [t.markdown for n in pages for t in table_module.find_tables(doc[n])]
    monkeypatch.setattr(table_module, "find_ruled_tables", _stock)
    stock = [t.markdown for n in pages for t in table_module.find_tables(doc[n])]
    assert lean == stock
    assert any("|---|" in markdown for markdown in lean)


def test_pymupdfs_finder_on_another_thread_reads_its_own_characters() -> None:
    # A table's `extract()` reads the full character list (fonts, colours); the lean finder
    # running at the same time on another thread must not hand it the lean one.
    path, pages = _pages("netflix")

    def lean_pass(_: int) -> int:
        doc = pymupdf.open(path)
        return sum(len(find_ruled_tables(doc[n], doc[n].get_drawings())) for n in pages)

    def stock_extract(_: int) -> list[list[list[object]]]:
        page = pymupdf.open(DEMO_PDF)[0]
        return [table.extract() for table in page.find_tables(use_layout=False).tables]

    expected = stock_extract(0)
    assert any(cell for table in expected for row in table for cell in row)
    with ThreadPoolExecutor(max_workers=4) as pool:
        lean = [pool.submit(lean_pass, i) for i in range(2)]
        stock = [pool.submit(stock_extract, i) for i in range(12)]
        assert all(future.result() == expected for future in stock)
        assert all(future.result() > 0 for future in lean)
