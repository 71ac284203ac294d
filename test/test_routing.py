"""Questions routed to the documents they name, by the documents' cards: the company (by name,
first word or ticker, under a renamed issuer too), the fiscal period, the kind of filing; a
question that names none is not routed; `--where` keeps the documents whose cards match."""

from __future__ import annotations

import pytest

from citerag.errors import InputError
from citerag.retrieve.routing import DocumentRouter, answering, checked_where, question_asked
from citerag.text.periods import named_period
from citerag.types import DocumentCard

ANNUAL, QUARTERLY, RELEASE = "annual report", "quarterly report", "earnings release"
CARDS = {
    "adbe15": DocumentCard(
        organisation="ADOBE SYSTEMS INCORPORATED", kind=ANNUAL, fiscal_year=2015
    ),
    "adbe16": DocumentCard(
        organisation="ADOBE SYSTEMS INCORPORATED", kind=ANNUAL, fiscal_year=2016
    ),
    "adbe22": DocumentCard(organisation="Adobe Inc.", ticker="ADBE", kind=ANNUAL, fiscal_year=2022),
    "bby23": DocumentCard(
        organisation="BEST BUY CO., INC.", ticker="BBY", kind=ANNUAL, fiscal_year=2023
    ),
    "bby24q2": DocumentCard(
        organisation="BEST BUY CO., INC.", kind=QUARTERLY, fiscal_year=2024, quarter=2
    ),
    "bby23r": DocumentCard(organisation="Best Buy Co., Inc.", kind=RELEASE, fiscal_year=2023),
    "awk21": DocumentCard(
        organisation="AMERICAN WATER WORKS COMPANY, INC.", kind=ANNUAL, fiscal_year=2021
    ),
    "amx21": DocumentCard(organisation="American Express Company", kind=ANNUAL, fiscal_year=2021),
    "paper": DocumentCard(title="Section trees", kind="paper"),
    "lic": DocumentCard(organisation="Life Insurance Corporation", kind="report"),
}
NAMES = {doc_id: f"{doc_id}.pdf" for doc_id in CARDS}


def adjusted_means_release(question: str) -> str:
    return RELEASE if "adjusted" in question.lower() else ""


@pytest.fixture
def router() -> DocumentRouter:
    return DocumentRouter(CARDS, NAMES)


def test_a_named_company_and_fiscal_year_route_to_that_annual_report(
    router: DocumentRouter,
) -> None:
    routing = router.route("What is the FY2015 operating cash flow ratio for Adobe?")
    assert routing.scope == ("adbe15",)
    assert "Adobe" in routing.names
    assert "for 2015" in routing.reason and "adbe15.pdf" in routing.reason


def test_two_years_of_one_company_get_both_filings_the_newer_first(router: DocumentRouter) -> None:
    routing = router.route("What is Adobe's change in operating income from FY2015 to FY2016?")
    assert routing.scope == ("adbe16", "adbe15")


def test_a_renamed_issuer_is_one_company(router: DocumentRouter) -> None:
    # "Adobe" names both "Adobe Systems Incorporated" and "Adobe Inc.": one company, its years
    assert router.route("Does Adobe have an improving margin as of FY2022?").scope == ("adbe22",)
    assert router.route("ADBE revenue in FY2016").scope == ("adbe16",)


def test_a_quarter_picks_the_quarterly_report(router: DocumentRouter) -> None:
    routing = router.route("Did Best Buy's cash drop between FY2023 and Q2 of FY2024?")
    assert routing.scope == ("bby24q2",)


def test_the_profile_picks_the_kind_of_filing_that_reports_what_is_asked(
    router: DocumentRouter,
) -> None:
    question = "What was Best Buy's adjusted EPS in FY2023?"
    assert router.route(question).scope == ("bby23",)
    assert router.route(question, adjusted_means_release).scope == ("bby23r",)


def test_two_companies_get_each_its_own_filing(router: DocumentRouter) -> None:
    routing = router.route("Compare Adobe's and Best Buy's revenue in FY2022 and FY2023")
    assert routing.scope == ("adbe22", "bby23")


def test_a_generic_first_word_names_no_company(router: DocumentRouter) -> None:
    assert router.route("Which American companies grew in FY2021?").scope == ()
    assert router.route("American Water Works capex in FY2021").scope == ("awk21",)
    assert router.route("American Express revenue FY2021").scope == ("amx21",)


def test_a_question_naming_nothing_is_not_routed(router: DocumentRouter) -> None:
    routing = router.route("What does the paper say about section trees?")
    assert not routing.routed and routing.reason == ""


def test_a_period_alone_prefers_its_filings_softly(router: DocumentRouter) -> None:
    routing = router.route("Was there any drop in cash between FY 2023 and Q2 of FY2024?")
    assert not routing.routed  # never searched alone
    assert routing.preferred == ("bby24q2",)
    assert router.route("What happened in 2023?").preferred == ()  # not named as a fiscal period


def test_one_document_has_nothing_to_route() -> None:
    single = DocumentRouter({"adbe15": CARDS["adbe15"]}, NAMES)
    assert router_scope(single, "Adobe FY2015 revenue") == ()


def router_scope(router: DocumentRouter, question: str) -> tuple[str, ...]:
    return router.route(question).scope


def test_the_question_less_its_names_is_what_is_searched_within(router: DocumentRouter) -> None:
    routing = router.route("What is Adobe's FY2015 operating income?")
    assert routing.without_names("What is Adobe's FY2015 operating income?") == (
        "What is FY2015 operating income?"
    )


def test_where_keeps_the_documents_whose_cards_match(router: DocumentRouter) -> None:
    assert router.documents_where({"company": "Best Buy"}) == ["bby23", "bby23r", "bby24q2"]
    assert router.documents_where({"company": "bby", "year": "2024"}) == ["bby24q2"]
    assert router.documents_where({"company": "adobe", "year": "2016"}) == ["adbe16"]
    assert router.documents_where({"kind": "Earnings Release"}) == ["bby23r"]
    assert router.documents_where({"quarter": "2"}) == ["bby24q2"]
    assert router.documents_where({"title": "section"}) == ["paper"]
    assert router.documents_where({"company": "Initech"}) == []


def test_a_where_on_an_unknown_field_or_without_a_value_is_one_sentence() -> None:
    with pytest.raises(InputError, match="Cannot filter documents on 'colour'; use one of company"):
        checked_where({"colour": "red"})
    with pytest.raises(InputError, match="has no value"):
        checked_where({"year": " "})
    assert checked_where({"year": "2018"}) == {"year": "2018"}


def test_sub_questions_know_the_question_they_come_from() -> None:
    assert question_asked() == ""
    with answering("What is Corning's FY2020 DPO?"):
        assert question_asked() == "What is Corning's FY2020 DPO?"
    assert question_asked() == ""


@pytest.mark.parametrize(
    ("question", "years", "quarter", "kind"),
    [
        ("FY2019 inventories", (2019,), None, ""),
        ("fiscal year 2021 versus FY22", (2021, 2022), None, ""),
        ("in the second quarter of 2023", (2023,), 2, ""),
        ("Q4 FY23 results in the 10-Q", (2023,), 4, QUARTERLY),
        ("the 8-K filed in 2022", (2022,), None, "current report"),
        ("revenue of $2019 million", (), None, ""),
    ],
)
def test_the_periods_a_question_names(
    question: str, years: tuple[int, ...], quarter: int | None, kind: str
) -> None:
    period = named_period(question)
    assert (period.years, period.quarter, period.kind) == (years, quarter, kind)


def test_a_name_is_matched_only_where_it_is_written_with_a_capital(router: DocumentRouter) -> None:
    assert router.route("The author mentions a significant life change in 1996.").scope == ()
    assert router.route("What premiums did Life Insurance Corporation collect?").scope == ("lic",)
