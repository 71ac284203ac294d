"""The lean character list finds exactly PyMuPDF's tables, and only inside its block."""

from __future__ import annotations

import pymupdf
import pytest
from helpers import DEMO_PDF, shared_eval_file
from pymupdf import table as pymupdf_table

from citerag.parse.table_chars import lean_table_chars


def _tables(page: pymupdf.Page) -> list[tuple[tuple[float, ...], list[list[object]]]]:
    found = page.find_tables(use_layout=False).tables
    return [(tuple(t.bbox), [list(row.cells) for row in t.rows]) for t in found]


@pytest.mark.parametrize("name", ["demo", "netflix"])
def test_lean_characters_find_the_same_tables(name: str) -> None:
    path = DEMO_PDF if name == "demo" else shared_eval_file("finance", "NETFLIX_2020_10K.pdf")
    doc = pymupdf.open(path)
    pages = range(len(doc)) if name == "demo" else range(38, 48)  # financial statements
    found = 0
    for number in pages:
        stock = _tables(doc[number])
        with lean_table_chars():
            lean = _tables(doc[number])
        assert lean == stock
        found += len(stock)
    assert found > 0


def test_pymupdf_gets_its_own_character_list_back() -> None:
    original = pymupdf_table.make_chars
    with lean_table_chars():
        assert pymupdf_table.make_chars is not original
    assert pymupdf_table.make_chars is original
    with pytest.raises(RuntimeError), lean_table_chars():
        raise RuntimeError("a failed find")
    assert pymupdf_table.make_chars is original
    # Outside the block a table's text reads as PyMuPDF gives it.
    table = pymupdf.open(DEMO_PDF)[0].find_tables(use_layout=False).tables[0]
    assert any(cell for row in table.extract() for cell in row)
