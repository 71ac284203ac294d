"""A shelf of filings in one collection, end to end: each document gets its card at ingest,
`list` shows it, a compound question about two companies is answered from each company's
filing for the year it names, the answer says why, and `--where` keeps the matching filings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest

import main
from citerag.engine import Engine
from citerag.errors import InputError
from citerag.retrieve.routing import answering
from citerag.settings import Settings

pytestmark = pytest.mark.slow
COMPANIES = {"ACME": "Acme Anvils, Inc.", "GLOBEX": "Globex Corporation"}
REVENUE = {("ACME", 2021): 410, ("ACME", 2022): 455, ("GLOBEX", 2021): 920, ("GLOBEX", 2022): 870}


def filing(folder: Path, short: str, year: int) -> Path:
    """A two-page 10-K: its cover, then a page on revenues (the same words in every filing, so
    only the card tells them apart)."""
    path = folder / f"{short}_{year}_10K.pdf"
    cover = (
        "UNITED STATES SECURITIES AND EXCHANGE COMMISSION\nFORM 10-K\n"
        f"ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d)\nFor the fiscal year ended "
        f"December 31, {year}\n{COMPANIES[short]}\n(Exact name of registrant as specified in "
        "its charter)"
    )
    revenue = (
        f"Results of operations. Total revenues were ${REVENUE[(short, year)]} million in fiscal "
        f"{year}. Revenues grew with demand for our products across every region we serve."
    )
    with pymupdf.open() as document:
        for text in (cover, revenue):
            document.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 720), text)
        document.save(path)
    return path


@pytest.fixture(scope="module")
def shelf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, Path]]:
    folder = tmp_path_factory.mktemp("filings")
    storage = tmp_path_factory.mktemp("storage")
    engine = Engine(Settings(storage_dir=storage, reranker="none"))
    for short, year in REVENUE:
        engine.ingest(filing(folder, short, year), "shelf")
    yield engine, storage
    engine.close()


def test_each_filing_gets_its_card_and_list_and_inspect_show_it(
    shelf: tuple[Engine, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, storage = shelf
    monkeypatch.setenv("RAG_STORAGE_DIR", str(storage))
    assert main.main(["list", "--json", "--collection", "shelf"]) == 0
    listed = {d["name"]: d["card"] for d in json.loads(capsys.readouterr().out)}
    assert listed["GLOBEX_2022_10K.pdf"]["organisation"] == "Globex Corporation"
    assert listed["GLOBEX_2022_10K.pdf"]["kind"] == "annual report"
    assert listed["ACME_2021_10K.pdf"]["fiscal_year"] == 2021
    assert listed["ACME_2021_10K.pdf"]["period_end"] == "2021-12-31"
    assert main.main(["inspect", "shelf"]) == 0
    shown = capsys.readouterr().out
    assert "card: annual report, Globex Corporation, fiscal 2022 to 2022-12-31" in shown


def test_a_question_naming_a_company_and_year_is_answered_from_that_filing(
    shelf: tuple[Engine, Path],
) -> None:
    engine, _ = shelf
    result = engine.query("What were Globex's total revenues in fiscal 2022?", "shelf")
    assert result.sources[0].document_name == "GLOBEX_2022_10K.pdf"
    assert "$870 million" in result.sources[0].content
    routing = result.to_dict()["metadata"]["documentRouting"]
    assert any("Globex Corporation named for 2022" in reason for reason in routing)


def test_a_compound_two_company_question_is_answered_from_both_filings(
    shelf: tuple[Engine, Path],
) -> None:
    engine, _ = shelf
    question = (
        "What were Acme's total revenues in fiscal 2021, and what were Globex's total revenues "
        "in fiscal 2021?"
    )
    result = engine.query(question, "shelf")
    assert len(result.metadata.sub_questions) == 2
    cited = {s.document_name for s in result.sources[:2]}
    assert cited == {"ACME_2021_10K.pdf", "GLOBEX_2021_10K.pdf"}
    assert "410" in result.answer and "920" in result.answer


def test_where_keeps_the_matching_filings_and_says_when_none_matches(
    shelf: tuple[Engine, Path],
) -> None:
    engine, _ = shelf
    result = engine.query("Total revenues", "shelf", where={"company": "Acme", "year": "2022"})
    assert {s.document_name for s in result.sources} == {"ACME_2022_10K.pdf"}
    with pytest.raises(
        InputError, match="No document in collection 'shelf' matches company=Initech"
    ):
        engine.query("Total revenues", "shelf", where={"company": "Initech"})


def paper(folder: Path) -> Path:
    """A two-page research paper: no filing, no issuer."""
    path = folder / "anvil_survey.pdf"
    pages = (
        "A Survey of Anvil Metallurgy\nJ. Smith and R. Jones\nAbstract. We review how forged "
        "anvils harden and how their faces wear under repeated strikes.",
        "Figure 3 shows the hardness of forged steel faces after ten thousand hammer strikes: "
        "tempered faces kept ninety percent of their hardness.",
    )
    with pymupdf.open() as document:
        for text in pages:
            document.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 720), text)
        document.save(path)
    return path


def test_a_part_naming_nothing_follows_its_whole_question_only_to_documents_of_that_kind(
    shelf: tuple[Engine, Path], tmp_path: Path
) -> None:
    # A sub-question that names nothing is routed as its whole question ("what were total
    # revenues in fiscal 2022?" split from a question about Acme), unless it is about another
    # kind of document joined to it (a paper's question asked with a filing's).
    engine, _ = shelf
    for path in (filing(tmp_path, "ACME", 2022), filing(tmp_path, "GLOBEX", 2022), paper(tmp_path)):
        engine.ingest(path, "mixed")
    whole = (
        "What were Acme's total revenues in fiscal 2022? Also, what does Figure 3 of the survey "
        "show about hardness?"
    )
    with answering(whole):
        about_the_paper = engine.retrieve("What does Figure 3 show about hardness?", "mixed", 2)
        about_acme = engine.retrieve("What were total revenues in fiscal 2022?", "mixed", 2)
    assert about_the_paper[0].node.metadata["doc_name"] == "anvil_survey.pdf"
    assert about_acme[0].node.metadata["doc_name"] == "ACME_2022_10K.pdf"
