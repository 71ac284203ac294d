"""Pages as the reader numbers them: the PDF's page labels or the numbers printed in the
margin, and "page 3", "page three", "the cover", "the last page" in questions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf
import pytest

from citerag.engine import Engine
from citerag.parse.page_labels import offset_labels
from citerag.parse.pymupdf_parser import PyMuPDFParser
from citerag.plan.offline import PAGES, route
from citerag.plan.references import page_spans, sheet_refs
from citerag.settings import Settings
from citerag.store.base import PageRange

COLLECTION = "labelled"
# Sheets 1-3 are numbered i-iii (cover, contents, foreword), sheets 4-8 are pages 1-5.
SHEETS = (
    "Annual Report of the Harbor Trust. Cover photograph: the old lighthouse at dawn.",
    "Contents. Foreword, the dredging programme, the budget, the berths, the outlook.",
    "Foreword. The dredging programme on page 3 continues the work begun last year.",
    "The trust manages the harbor, its berths and its cranes for the city.",
    "The berths were extended to take larger container ships.",
    "The dredging programme removed four hundred thousand cubic meters of silt.",
    "The budget for maintenance rose by six percent over the year.",
    "Outlook. The trust expects traffic to grow again next year.",
)


def labelled_pdf(path: Path, pdf_labels: bool = True) -> Path:
    with pymupdf.open() as doc:
        for number, text in enumerate(SHEETS, start=1):
            page = doc.new_page()
            page.insert_textbox(pymupdf.Rect(72, 90, 540, 300), text, fontsize=12)
            if not pdf_labels and number > 3:  # the printed number in the footer instead
                page.insert_text((300, 770), str(number - 3), fontsize=10)
        if pdf_labels:
            doc.set_page_labels(
                [
                    {"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
                    {"startpage": 3, "prefix": "", "style": "D", "firstpagenum": 1},
                ]
            )
        doc.save(path)
    return path


@pytest.mark.parametrize(
    "question, pages",
    [
        ("What does page 28 show?", [PageRange(28, 28)]),
        ("the table at p. 28", [PageRange(28, 28)]),
        ("Summarize pages 30-31", [PageRange(30, 31)]),
        ("How many cars appear on page three?", [PageRange(3, 3)]),
        ("What is on pages twenty-one to twenty-three?", [PageRange(21, 23)]),
        ("a 10-page report", []),
    ],
)
def test_page_numbers_in_digits_and_words(question: str, pages: list[PageRange]) -> None:
    assert page_spans(question) == pages


@pytest.mark.parametrize(
    "question, sheets",
    [
        ("What is on the cover?", [1]),
        ("What does the cover page show?", [1]),
        ("What is written on the first page?", [1]),
        ("What does the last page say?", [-1]),
        ("What does the second-to-last page say?", [-2]),
        ("Which table is on the second last page?", [-2]),
        ("the penultimate page", [-2]),
        ("What does the cover letter ask for?", []),
        ("What does the report cover?", []),
    ],
)
def test_pages_named_by_their_place_are_sheets(question: str, sheets: list[int]) -> None:
    assert [r.first for r in sheet_refs(question)] == sheets
    assert (route(question) == PAGES) == bool(sheets)


def test_printed_numbers_give_labels_only_at_one_agreed_offset() -> None:
    assert offset_labels([None, None, 1, 2, 3, 4]) == [None, None, "1", "2", "3", "4"]
    assert offset_labels([None, 2, 3, 4, 5]) == [None, None, None, None, None]  # the sheets
    assert offset_labels([None, 7, None, 40]) == [None] * 4  # no offset holds
    stray = [None, 1, 2, 3, 4, 5, 99]  # one misread number does not move the others
    assert offset_labels(stray) == [None, "1", "2", "3", "4", "5", "6"]


@pytest.mark.parametrize("pdf_labels", [True, False])
def test_the_parser_stores_each_page_label(tmp_path: Path, pdf_labels: bool) -> None:
    pdf = labelled_pdf(tmp_path / "harbor.pdf", pdf_labels=pdf_labels)
    parsed = PyMuPDFParser().parse(pdf, "harbor")
    labels = [page.label for page in parsed.pages]
    front = ["i", "ii", "iii"] if pdf_labels else [None, None, None]
    assert labels == [*front, "1", "2", "3", "4", "5"]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("labels")
    engine = Engine(Settings(storage_dir=folder / "storage", reranker="none"))
    try:
        assert engine.ingest(labelled_pdf(folder / "harbor.pdf"), COLLECTION).status == "ingested"
        yield engine
    finally:
        engine.close()


def sources(engine: Engine, question: str, top_k: int = 3) -> list[dict[str, Any]]:
    result = engine.query(question, COLLECTION, top_k=top_k).to_dict()
    return list(result["sources"])


@pytest.mark.slow
@pytest.mark.parametrize("question", ["What does page 3 say?", "What is on page three?"])
def test_page_3_is_the_page_printed_3(engine: Engine, question: str) -> None:
    found = sources(engine, question)
    assert (found[0]["pageNumber"], found[0]["pageLabel"]) == (6, "3")
    assert "dredging programme removed" in found[0]["content"]


@pytest.mark.slow
def test_the_sheet_of_that_number_comes_after_the_printed_page(engine: Engine) -> None:
    found = sources(engine, "What does page 3 say?", top_k=5)
    pages = [s["pageNumber"] for s in found]
    assert pages[0] == 6 and 3 in pages and pages.index(3) > 0


@pytest.mark.slow
def test_the_cover_and_the_last_page_are_sheets(engine: Engine) -> None:
    cover = sources(engine, "What is on the cover?")
    assert (cover[0]["pageNumber"], cover[0]["pageLabel"]) == (1, "i")
    last = sources(engine, "What does the last page say?")
    assert (last[0]["pageNumber"], last[0]["pageLabel"]) == (8, "5")
    second_last = sources(engine, "What does the second-to-last page say?")
    assert second_last[0]["pageNumber"] == 7


@pytest.mark.slow
def test_a_page_reference_does_not_starve_the_answer(engine: Engine) -> None:
    """Page 3 holds one chunk: the rest of the budget comes from the rest of the document."""
    found = sources(engine, "What does page 3 say about the dredging programme?", top_k=4)
    assert len(found) == 4 and found[0]["pageNumber"] == 6
    assert len({s["id"] for s in found}) == 4


@pytest.mark.slow
def test_a_summary_of_page_3_summarizes_the_page_printed_3(engine: Engine) -> None:
    result = engine.query("Summarize page 3", COLLECTION, top_k=3).to_dict()
    assert result["metadata"]["subQuestions"][0]["tool"] == "summary"
    assert {s["pageLabel"] for s in result["sources"]} == {"3"}
