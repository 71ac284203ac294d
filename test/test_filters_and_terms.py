"""MetadataFilters on chunk places, the filing vocabulary added to keyword queries, and the BM25
tokenizer's handling of figures."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from citerag.domain import GENERIC
from citerag.errors import InputError
from citerag.retrieve.filters import FILTERABLE, check_filters, matches, page_filters, pushdown
from citerag.retrieve.hybrid import HybridRetriever
from citerag.store.base import PageRange
from citerag.text.tokens import tokenize
from extraction_schemas import FINANCIAL_VOCABULARY

PLACE: dict[str, Any] = {
    "doc_id": "doc-a",
    "doc_name": "annual_report.pdf",
    "page": 7,
    "section": "Item 7. Management's Discussion",
    "block_type": "table",
    "label": "",
}


def leaf(key: str, value: Any, op: FilterOperator = FilterOperator.EQ) -> MetadataFilter:
    return MetadataFilter(key=key, value=value, operator=op)


def all_of(*items: MetadataFilter | MetadataFilters) -> MetadataFilters:
    return MetadataFilters(filters=list(items), condition=FilterCondition.AND)


def any_of(*items: MetadataFilter | MetadataFilters) -> MetadataFilters:
    return MetadataFilters(filters=list(items), condition=FilterCondition.OR)


# --- matches ---------------------------------------------------------------------------------


def test_no_filters_match_everything() -> None:
    assert matches(PLACE, None)
    assert matches(PLACE, MetadataFilters(filters=[]))


@pytest.mark.parametrize(
    ("first", "last", "expected"),
    [(7, 7, True), (1, 7, True), (7, 20, True), (1, 6, False), (8, 9, False)],
)
def test_page_filters_are_an_inclusive_range(first: int, last: int, expected: bool) -> None:
    assert matches(PLACE, page_filters(first, last)) is expected


def test_page_filters_with_a_document_require_that_document() -> None:
    assert matches(PLACE, page_filters(1, 10, doc_id="doc-a"))
    assert not matches(PLACE, page_filters(1, 10, doc_id="doc-b"))


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (leaf("page", 7, FilterOperator.GTE), True),
        (leaf("page", 8, FilterOperator.GTE), False),
        (leaf("page", 7, FilterOperator.LTE), True),
        (leaf("page", 6, FilterOperator.LTE), False),
        (leaf("page", 6, FilterOperator.GT), True),
        (leaf("page", 7, FilterOperator.LT), False),
        (leaf("page", [3, 7, 9], FilterOperator.IN), True),
        (leaf("page", [3, 9], FilterOperator.IN), False),
        (leaf("page", [3, 9], FilterOperator.NIN), True),
        (leaf("block_type", "text", FilterOperator.NE), True),
        (leaf("block_type", "table", FilterOperator.NE), False),
        (leaf("doc_id", ["doc-a", "doc-b"], FilterOperator.IN), True),
    ],
)
def test_each_operator(item: MetadataFilter, expected: bool) -> None:
    assert matches(PLACE, all_of(item)) is expected


def test_and_needs_every_filter_or_needs_one() -> None:
    table, text = leaf("block_type", "table"), leaf("block_type", "text")
    on_page = leaf("page", 7)
    assert matches(PLACE, all_of(table, on_page))
    assert not matches(PLACE, all_of(text, on_page))
    assert matches(PLACE, any_of(text, on_page))
    assert not matches(PLACE, any_of(text, leaf("page", 1)))


def test_nested_filters() -> None:
    # doc-a AND (page 1..3 OR a table): only the table clause holds
    nested = all_of(
        leaf("doc_id", "doc-a"), any_of(page_filters(1, 3), leaf("block_type", "table"))
    )
    assert matches(PLACE, nested)
    # doc-a AND (page 1..3 OR text): neither inner clause holds
    failing = all_of(
        leaf("doc_id", "doc-a"), any_of(page_filters(1, 3), leaf("block_type", "text"))
    )
    assert not matches(PLACE, failing)


def test_not_condition_negates() -> None:
    tables = MetadataFilters(filters=[leaf("block_type", "table")], condition=FilterCondition.NOT)
    assert not matches(PLACE, tables)
    assert matches({**PLACE, "block_type": "text"}, tables)


def test_a_key_missing_from_the_place_does_not_match() -> None:
    place = {k: v for k, v in PLACE.items() if k != "section"}
    assert not matches(place, all_of(leaf("section", "Item 7", FilterOperator.TEXT_MATCH)))


# --- pushdown --------------------------------------------------------------------------------


def test_pushdown_of_a_page_range_and_document() -> None:
    assert pushdown(page_filters(2, 5)) == (PageRange(2, 5), None)
    assert pushdown(page_filters(2, 5, doc_id="doc-a")) == (PageRange(2, 5), ["doc-a"])


def test_pushdown_of_strict_bounds_equality_and_document_lists() -> None:
    strict = all_of(leaf("page", 2, FilterOperator.GT), leaf("page", 9, FilterOperator.LT))
    assert pushdown(strict) == (PageRange(3, 8), None)
    assert pushdown(all_of(leaf("page", 4))) == (PageRange(4, 4), None)
    in_docs = all_of(leaf("doc_id", ["a", "b"], FilterOperator.IN))
    assert pushdown(in_docs) == (None, ["a", "b"])


def test_pushdown_keeps_only_what_every_match_satisfies() -> None:
    assert pushdown(None) == (None, None)
    # OR: a page bound on one branch says nothing about matches of the other.
    assert pushdown(any_of(leaf("page", 2), leaf("block_type", "table"))) == (None, None)
    # A nested group and a non-pushable key leave the range open; the filter still applies.
    nested = all_of(any_of(leaf("page", 2), leaf("page", 3)), leaf("section", "x"))
    assert pushdown(nested) == (None, None)


# --- check_filters ---------------------------------------------------------------------------


def test_every_filterable_key_is_accepted() -> None:
    check_filters(None)
    check_filters(all_of(*(leaf(key, "x") for key in FILTERABLE)))


def test_an_unknown_key_is_refused_with_the_keys_that_work() -> None:
    with pytest.raises(InputError) as raised:
        check_filters(all_of(leaf("page", 1), any_of(leaf("author", "me"))))
    message = str(raised.value)
    assert "'author'" in message
    assert all(key in message for key in FILTERABLE)


def test_an_unsupported_operator_is_refused() -> None:
    with pytest.raises(InputError, match="contains"):
        check_filters(all_of(leaf("section", "Item", FilterOperator.CONTAINS)))


def test_the_retriever_refuses_bad_filters_when_built() -> None:
    with pytest.raises(InputError, match="'year'"):
        HybridRetriever(
            None,  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
            filters=all_of(leaf("year", 2021)),
        )


# --- filing vocabulary (the finance profile's words) -----------------------------------------

keyword_query = FINANCIAL_VOCABULARY.keyword_query
filing_terms = FINANCIAL_VOCABULARY.terms


def test_income_statement_adds_statements_of_operations() -> None:
    query = keyword_query("Show me the income statement for 2022")
    assert query.startswith("Show me the income statement for 2022\n")
    assert "statements of operations" in query


def test_capex_adds_purchases_of_property_and_equipment() -> None:
    for question in ("What was capex in 2022?", "Total capital expenditures in FY2023?"):
        assert "purchases of property and equipment" in keyword_query(question), question


def test_operating_margin_adds_operating_income_and_revenues() -> None:
    query = keyword_query("FY2021 operating margin")
    added = query.split("\n", 1)[1]
    assert "operating income" in added
    assert "revenues" in added


@pytest.mark.parametrize(
    "question",
    [
        "How much cash did the company's operations generate in 2021?",
        "What was operating cash flow in FY2020?",
        "Cash provided by operating activities last year?",
    ],
)
def test_cash_from_operations_adds_the_cash_flow_line(question: str) -> None:
    assert "net cash provided by operating activities" in keyword_query(question)


def test_a_line_item_of_the_income_statement_points_at_that_statement() -> None:
    added = keyword_query("How much did net income increase from 2020 to 2021?").split("\n", 1)[1]
    assert "statements of operations" in added


def test_a_plain_question_is_unchanged() -> None:
    question = "What did the author do in 1996?"
    assert filing_terms(question) == []
    assert keyword_query(question) == question


def test_without_a_domain_profile_no_words_are_added() -> None:
    question = "Show me the income statement and the capex for 2022"
    assert filing_terms(question) and GENERIC.terms(question) == []
    assert GENERIC.keyword_query(question) == question


def test_terms_follow_a_stable_order_and_are_not_repeated() -> None:
    question = "Compare the balance sheet and the income statement; also the P&L"
    terms = filing_terms(question)
    assert terms == filing_terms(question)
    assert len(terms) == len(set(terms)) == 2
    assert "statements of operations" in terms[0]
    assert "balance sheets" in terms[1]


# --- BM25 tokens -----------------------------------------------------------------------------


def test_a_figure_is_one_token_however_it_is_written() -> None:
    assert tokenize("4,585,289") == tokenize("4585289") == ["4585289"]
    assert tokenize("Revenue was 4,585,289.") == tokenize("revenue was 4585289")


def test_decimals_stay_one_token() -> None:
    assert tokenize("3.5 percent") == ["3.5", "percent"]
