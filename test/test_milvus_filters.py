"""LlamaIndex `MetadataFilters` become the Milvus expression the vector index searches with, and
the retriever hands the index exactly the part of a question's filters it applied before."""

from __future__ import annotations

import pytest
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilters,
)

from citerag.enrich.fields import LIST_FIELDS
from citerag.errors import InputError
from citerag.retrieve.filters import page_filters, vector_filters
from citerag.store.milvus_filters import matches_nothing, milvus_expression
from citerag.store.milvus_lists import LIST_COLUMNS, list_entity
from citerag.testing.vector_index import docs, leaf, pages


def test_a_page_range_and_documents_become_scalar_clauses() -> None:
    assert milvus_expression(pages(2, 5)) == "(page >= 2) and (page <= 5)"
    assert milvus_expression(docs("a", 'b"c')) == '(doc_id in ["a", "b\\"c"])'
    assert milvus_expression(None) == ""
    assert milvus_expression(MetadataFilters(filters=[])) == ""


def test_conditions_and_nesting_are_kept() -> None:
    either = MetadataFilters(
        filters=[leaf("page", 2), leaf("page", 9)], condition=FilterCondition.OR
    )
    assert milvus_expression(either) == "(page == 2) or (page == 9)"
    negated = MetadataFilters(filters=[either], condition=FilterCondition.NOT)
    assert milvus_expression(negated) == "not (((page == 2) or (page == 9)))"
    nested = MetadataFilters(
        filters=[pages(1, 3), MetadataFilters(filters=[leaf("block_type", "table")])]
    )
    assert milvus_expression(nested) == '((page >= 1) and (page <= 3)) and ((node_type == "table"))'
    not_in = MetadataFilters(filters=[leaf("label", ["3", "4"], FilterOperator.NIN)])
    assert milvus_expression(not_in) == '(label not in ["3", "4"])'


def test_numbers_are_checked_and_text_is_quoted() -> None:
    assert milvus_expression(MetadataFilters(filters=[leaf("page", "7")])) == "(page == 7)"
    with pytest.raises(InputError, match="needs a number"):
        milvus_expression(MetadataFilters(filters=[leaf("page", "seven")]))
    quoted = MetadataFilters(filters=[leaf("section", 'Item 7 "MD&A" \\ x')])
    assert milvus_expression(quoted) == '(section == "Item 7 \\"MD&A\\" \\\\ x")'


def test_fields_and_operators_milvus_lacks_are_refused_in_one_sentence() -> None:
    with pytest.raises(InputError, match="cannot filter on 'colour'"):
        milvus_expression(MetadataFilters(filters=[leaf("colour", "red")]))
    with pytest.raises(InputError, match="'nin' to the list field 'entities'"):
        milvus_expression(MetadataFilters(filters=[leaf("entities", ["A"], FilterOperator.NIN)]))
    with pytest.raises(InputError, match="'contains'"):
        milvus_expression(MetadataFilters(filters=[leaf("doc_id", "a", FilterOperator.CONTAINS)]))


def test_list_fields_become_array_tests_with_the_in_memory_meaning() -> None:
    """`==`/contains/all: holds every value; in/any: shares one; case-blind (values folded as
    stored); rows whose lists were cut to the column bounds always pass (checked after)."""
    one_year = MetadataFilters(filters=[leaf("years", 1996)])
    assert milvus_expression(one_year) == '(array_contains(years, "1996") or lists_cut == true)'
    both = MetadataFilters(filters=[leaf("entities", ["Viaweb", "YAHOO"], FilterOperator.ALL)])
    assert milvus_expression(both) == (
        '(array_contains_all(entities, ["viaweb", "yahoo"]) or lists_cut == true)'
    )
    either = MetadataFilters(filters=[leaf("topics", ["a=1", "b=2"], FilterOperator.ANY)])
    assert milvus_expression(either) == (
        '(array_contains_any(topics, ["a=1", "b=2"]) or lists_cut == true)'
    )
    quoted = MetadataFilters(filters=[leaf("entities", 'Say "Hi"', FilterOperator.CONTAINS)])
    assert milvus_expression(quoted) == (
        '(array_contains(entities, "say \\"hi\\"") or lists_cut == true)'
    )


def test_every_list_field_enrichment_fills_has_a_column() -> None:
    assert tuple(LIST_COLUMNS) == LIST_FIELDS


def test_list_values_past_the_column_bounds_are_left_out_and_the_row_flagged() -> None:
    """Never cut mid-value (a cut name could match another); the flag lets the row through
    positive filters so the full lists decide."""
    capacity = LIST_COLUMNS["entities"].capacity
    names = [f"Entity {i}" for i in range(capacity + 10)]
    too_long = "9" * (LIST_COLUMNS["years"].max_bytes + 1)
    entity = list_entity({"entities": names, "years": ["1996", too_long, "1996"]}, cut=False)
    assert entity["entities"] == [f"entity {i}" for i in range(capacity)]
    assert entity["years"] == ["1996"] and entity["lists_cut"] is True
    within = list_entity({"years": ["1996", "1990s"], "entities": ["Viaweb", "VIAWEB"]}, False)
    assert within["years"] == ["1996", "1990s"] and within["entities"] == ["viaweb"]
    assert within["topics"] == [] and within["lists_cut"] is False
    assert list_entity({}, cut=True)["lists_cut"] is True  # a row read back keeps its flag


def test_an_empty_in_at_the_top_matches_nothing() -> None:
    assert matches_nothing(docs())
    assert not matches_nothing(docs("a"))
    assert not matches_nothing(None)
    either = MetadataFilters(filters=[docs(), leaf("page", 1)], condition=FilterCondition.OR)
    assert not matches_nothing(either)


def test_the_retriever_pushes_page_bounds_and_documents_only() -> None:
    assert vector_filters(None) is None
    assert vector_filters(page_filters(2, 5, doc_id="doc-a")) == MetadataFilters(
        filters=[
            leaf("page", 2, FilterOperator.GTE),
            leaf("page", 5, FilterOperator.LTE),
            leaf("doc_id", ["doc-a"], FilterOperator.IN),
        ]
    )
    with_years = MetadataFilters(filters=[leaf("years", "1996"), leaf("page", 4)])
    assert milvus_expression(vector_filters(with_years)) == "(page >= 4) and (page <= 4)"
    either = MetadataFilters(
        filters=[leaf("page", 2), leaf("block_type", "table")], condition=FilterCondition.OR
    )
    assert vector_filters(either) is None
