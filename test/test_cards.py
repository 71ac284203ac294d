"""Document cards read by rules: a filing's cover names its issuer, form and fiscal period; the
file name fills what the cover leaves open; other documents get a title and a kind. Covers
written here follow the SEC's forms; the shared filings are checked by the shelf benchmark suite."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from citerag.enrich.cards import card_of, read_card, read_name
from citerag.parse.pymupdf_parser import PyMuPDFParser
from citerag.types import DocumentCard

TEN_K = """UNITED STATES
SECURITIES AND EXCHANGE COMMISSION
Washington, D.C. 20549
FORM 10-K
ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the fiscal year ended January 28, 2023
Commission File Number: 1-9595
ACME STORES CO., INC.
(Exact name of registrant as specified in its charter)
Title of each class Trading Symbol Name of exchange on which registered
Common Stock ACME New York Stock Exchange
"""
TEN_Q = """FORM 10-Q
QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the quarterly period ended July 29, 2023
GLOBEX PLC
(Exact name of registrant as specified in its charter)
"""
EIGHT_K = """FORM 8-K
CURRENT REPORT
Date of Report (Date of earliest event reported): April 26, 2022
Initech, Inc.
(Exact name of registrant as specified in its charter)
"""
RELEASE = """Umbrella Corp. (NYSE: UMB) reports fiscal 2023 results
Net sales of $14,694 million in the June 2023 quarter.
"""
PAPER = """Retrieval with Section Trees for Long Documents
Ada Lovelace, Alan Turing
Abstract
We show that section trees help retrieval.
"""


def test_an_annual_report_cover_gives_issuer_form_period_and_ticker() -> None:
    # Fiscal 2023 ends in January 2023 for this issuer: the year the text names decides.
    card = read_card("report.pdf", [TEN_K, "Our fiscal 2023 results. In fiscal 2023 we grew."])
    assert card.organisation == "ACME STORES CO., INC."
    assert card.kind == "annual report"
    assert card.ticker == "ACME"
    assert card.period_end == "2023-01-28"
    assert card.fiscal_year == 2023
    assert card.quarter is None


def test_a_year_ending_in_january_is_named_by_the_year_before_when_the_text_says_so() -> None:
    body = "Fiscal 2022 was a 52-week year. Sales in fiscal 2022 fell; fiscal 2022 ended in Jan."
    assert read_card("report.pdf", [TEN_K, body]).fiscal_year == 2022


def test_a_quarterly_report_says_which_quarter_of_which_fiscal_year() -> None:
    body = "Results for the second quarter of fiscal 2024 (Q2 FY24) were mixed."
    card = read_card("q.pdf", [TEN_Q, body])
    assert (card.kind, card.organisation) == ("quarterly report", "GLOBEX PLC")
    assert (card.fiscal_year, card.quarter, card.period_end) == (2024, 2, "2023-07-29")


def test_a_current_report_keeps_its_event_date() -> None:
    card = read_card("x.pdf", [EIGHT_K])
    assert (card.kind, card.organisation, card.date) == (
        "current report",
        "Initech, Inc.",
        "2022-04-26",
    )
    assert card.fiscal_year == 2022  # nothing names a fiscal year: the event's year


def test_an_earnings_release_is_read_from_its_headline() -> None:
    card = read_card("release.pdf", [RELEASE])
    assert (card.kind, card.organisation, card.ticker) == (
        "earnings release",
        "Umbrella Corp.",
        "UMB",
    )
    assert card.fiscal_year == 2023


def test_the_file_name_fills_what_the_cover_leaves_open() -> None:
    assert read_name("BESTBUY_2024Q2_10Q.pdf") == read_name("BESTBUY_2024Q2_10Q.PDF")
    named = read_name("AMCOR_2022_8K_dated-2022-07-01.pdf")
    assert (named.company, named.kind, named.year, str(named.date)) == (
        "AMCOR",
        "current report",
        2022,
        "2022-07-01",
    )
    # a cover whose issuer is a picture: the name says whose, the cover says the rest
    cover = TEN_K.replace("ACME STORES CO., INC.\n", "")
    card = read_card("FOOTLOCKER_2022_10K.pdf", [cover])
    assert (card.organisation, card.kind, card.fiscal_year) == ("Footlocker", "annual report", 2022)


def test_a_paper_gets_its_title_and_kind_but_no_issuer_or_period() -> None:
    card = read_card("2401.pdf", [PAPER])
    assert card.title == "Retrieval with Section Trees for Long Documents"
    assert card.kind == "paper"
    assert (card.organisation, card.fiscal_year, card.quarter) == ("", None, None)
    assert read_name("2401.18059v1.pdf").company == ""


def test_a_card_round_trips_through_its_stored_form() -> None:
    card = read_card("q.pdf", [TEN_Q, "second quarter of fiscal 2024"])
    assert DocumentCard.from_dict(card.to_dict()) == card
    assert DocumentCard.from_dict({}) == DocumentCard()


@pytest.mark.parametrize(
    "metadata_title", ["Acme Annual Report 2022", "Microsoft Word - Acme Annual Report 2022"]
)
def test_a_pdf_title_in_its_metadata_is_the_card_title(tmp_path: Path, metadata_title: str) -> None:
    path = tmp_path / "a.pdf"
    with pymupdf.open() as document:
        document.new_page().insert_text((72, 72), "Some cover text that is long enough.")
        document.set_metadata({"title": metadata_title, "author": "Jane Roe; John Doe"})
        document.save(path)
    parsed = PyMuPDFParser().parse(path, "d1")
    card = card_of(path, parsed)
    assert card.title == "Acme Annual Report 2022"
    assert card.authors == ("Jane Roe", "John Doe")
