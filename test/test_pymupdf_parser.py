"""The PyMuPDF parser gives typed, located blocks: what chunking, citing and highlighting need."""

from __future__ import annotations

import re

import pytest
from helpers import DEMO_PDF, shared_eval_file

from citerag.parse.pymupdf_parser import PyMuPDFParser
from citerag.parse.tables import clean_row, rows_to_markdown
from citerag.testing.parser import ParserContract
from citerag.types import Block, ParsedDocument

NUMBER = re.compile(r"\d[\d,]*")
HEADER = "CiteRAG technical note"  # demo/make_demo_pdf.py prints it atop every page


@pytest.fixture(scope="module")
def demo() -> ParsedDocument:
    return PyMuPDFParser().parse(DEMO_PDF, doc_id="demo")


def _blocks(document: ParsedDocument, kind: str) -> list[tuple[int, Block]]:
    return [(p.number, b) for p in document.pages for b in p.blocks if b.kind == kind]


def test_pages_are_one_based_and_bboxes_lie_inside_their_page(demo: ParsedDocument) -> None:
    assert [p.number for p in demo.pages] == [1, 2, 3]
    assert demo.name == "citerag_demo.pdf" and demo.parser == "pymupdf"
    for page in demo.pages:
        for block in page.blocks:
            box = block.bbox
            assert 0 <= box.x0 <= box.x1 <= page.width
            assert 0 <= box.y0 <= box.y1 <= page.height


def test_numbered_headings_become_titles_with_levels(demo: ParsedDocument) -> None:
    titles = {b.text: b.level for _, b in _blocks(demo, "title")}
    assert titles["CiteRAG: Cited Answers from PDF Documents"] == 1
    assert titles["1 Introduction"] == titles["3 Retrieval"] == 2
    assert titles["3.1 Rank fusion"] == 3


def test_table_keeps_each_row_label_with_its_values(demo: ParsedDocument) -> None:
    [(page, table)] = _blocks(demo, "table")
    assert page == 1 and table.label == "1"
    assert table.text.startswith("Table 1: Parser comparison")
    assert "|Parser|Table fidelity|Headings found|Pages per second|" in table.text
    assert "|PyMuPDF|0.97|41|35.0|" in table.text
    body_text = " ".join(b.text for p in demo.pages for b in p.blocks if b.kind == "text")
    assert "0.97" not in body_text  # table cells are not repeated as loose text


def test_figure_caption_becomes_a_labelled_figure_block(demo: ParsedDocument) -> None:
    [(page, figure)] = _blocks(demo, "figure")
    assert page == 2 and figure.label == "1"
    assert figure.text.startswith("Figure 1: The CiteRAG pipeline")


def test_display_equation_is_labelled(demo: ParsedDocument) -> None:
    [(page, equation)] = _blocks(demo, "equation")
    assert page == 2 and equation.label == "1"
    assert "rank_r(d)" in equation.text


def test_a_running_header_is_kept_once_and_page_numbers_are_dropped(demo: ParsedDocument) -> None:
    """Printed on all three pages, the header is kept on the first only: findable, but not
    repeated in every page's text."""
    with_header = [p.number for p in demo.pages for b in p.blocks if b.text == HEADER]
    assert with_header == [1]
    texts = [b.text for p in demo.pages for b in p.blocks]
    assert not any(t.strip().isdigit() for t in texts)


def test_retrieval_section_text_is_kept(demo: ParsedDocument) -> None:
    page_two = demo.pages[1].text
    assert "combines BM25 keyword hits and dense vector hits before reranking" in page_two


def test_table_cleanup_joins_currency_and_pads_rows() -> None:
    rows = [clean_row(["Revenue", "$", "1,200", "", "$", "900"]), clean_row(["Cost", "", "(300)"])]
    assert rows_to_markdown([["Item", "2021", "2020"], *rows]).splitlines() == [
        "|Item|2021|2020|",
        "|---|---|---|",
        "|Revenue|$1,200|$900|",
        "|Cost|(300)||",
    ]


@pytest.mark.slow
def test_netflix_financial_table_rows_keep_label_and_numbers() -> None:
    path = shared_eval_file("finance", "NETFLIX_2020_10K.pdf")
    document = PyMuPDFParser().parse(path, doc_id="netflix")
    tables = [b.text for _, b in _blocks(document, "table")]
    assert len(tables) >= 20
    rows = [line for table in tables for line in table.splitlines()]
    assert "|Net income|$2,761,395|$1,866,916|$1,211,242|" in rows
    titles = [b.text for _, b in _blocks(document, "title")]
    assert not any(NUMBER.fullmatch(t.replace("$", "").strip()) for t in titles)


class TestPyMuPDFParserContract(ParserContract):
    @pytest.fixture
    def parser(self) -> PyMuPDFParser:
        return PyMuPDFParser()
