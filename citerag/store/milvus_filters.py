"""LlamaIndex `MetadataFilters` as a Milvus boolean expression over the index's scalar fields.

Keys are the chunk metadata names (`page`, `doc_id`, `block_type`, ...), mapped to the columns
`MilvusIndex` writes; enrichment's list fields (`years`, `entities`, ...) are ARRAY columns of
the same name (`milvus_lists`). Nested filters and AND / OR / NOT are kept. A key that has no
column or an operator Milvus cannot apply to it is refused with one sentence, never dropped: a
filter left out would widen the search without telling anyone.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from citerag.errors import InputError
from citerag.store.milvus_lists import LIST_COLUMNS, list_clause

# Chunk metadata key -> Milvus column (see `milvus_index._schema`); `id` is the chunk id.
COLUMN_OF_KEY = {
    "id": "id",
    "doc_id": "doc_id",
    "doc_name": "doc_name",
    "page": "page",
    "block_type": "node_type",
    "section": "section",
    "label": "label",
}
INTEGER_COLUMNS = frozenset({"page"})
_COMPARISONS = {
    FilterOperator.EQ: "==",
    FilterOperator.NE: "!=",
    FilterOperator.GT: ">",
    FilterOperator.GTE: ">=",
    FilterOperator.LT: "<",
    FilterOperator.LTE: "<=",
}
_MEMBERSHIP = {FilterOperator.IN: "in", FilterOperator.NIN: "not in"}


def milvus_literal(value: str) -> str:
    # A JSON string literal is a valid Milvus string literal: quotes and backslashes escaped.
    return json.dumps(value)


def id_filters(ids: Collection[str], per_slice: int) -> list[str]:
    """One `id in [...]` expression per slice of `per_slice` ids (bounded expressions)."""
    ordered = sorted(ids)
    return [
        f"id in [{', '.join(milvus_literal(i) for i in ordered[start : start + per_slice])}]"
        for start in range(0, len(ordered), per_slice)
    ]


def milvus_expression(filters: MetadataFilters | None) -> str:
    """The Milvus expression `filters` stand for ("" when there is nothing to filter)."""
    if filters is None or not filters.filters:
        return ""
    parts = [
        milvus_expression(item) if isinstance(item, MetadataFilters) else _clause(item)
        for item in filters.filters
    ]
    parts = [f"({part})" for part in parts if part]
    if filters.condition == FilterCondition.NOT:
        return f"not ({' or '.join(parts)})" if parts else ""
    joiner = " or " if filters.condition == FilterCondition.OR else " and "
    return joiner.join(parts)


def matches_nothing(filters: MetadataFilters | None) -> bool:
    """True when a top-level AND holds an `in` over no value: no row can match."""
    if filters is None or filters.condition not in (None, FilterCondition.AND):
        return False
    return any(
        isinstance(item, MetadataFilter)
        and item.operator == FilterOperator.IN
        and isinstance(item.value, list)
        and not item.value
        for item in filters.filters
    )


def _clause(item: MetadataFilter) -> str:
    if item.key in LIST_COLUMNS:
        return list_clause(item)
    column = COLUMN_OF_KEY.get(item.key)
    if column is None:
        raise InputError(
            f"The vector index cannot filter on {item.key!r}; filter it on the candidates, or "
            f"use one of {', '.join([*COLUMN_OF_KEY, *LIST_COLUMNS])}."
        )
    if item.operator in _COMPARISONS:
        return f"{column} {_COMPARISONS[item.operator]} {_literal(column, item.value)}"
    if item.operator in _MEMBERSHIP:
        values = item.value if isinstance(item.value, list) else [item.value]
        listed = ", ".join(_literal(column, value) for value in values)
        return f"{column} {_MEMBERSHIP[item.operator]} [{listed}]"
    raise InputError(
        f"The vector index cannot apply the filter operator {item.operator.value!r} to "
        f"{item.key!r}; use ==, !=, <, <=, >, >=, in or nin."
    )


def _literal(column: str, value: object) -> str:
    if column in INTEGER_COLUMNS:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise InputError(f"The filter on {column!r} needs a number, not {value!r}.")
        try:
            return str(int(value))
        except ValueError:
            raise InputError(f"The filter on {column!r} needs a number, not {value!r}.") from None
    return milvus_literal(str(value))


def search_expression(
    filters: MetadataFilters | None, node_ids: Sequence[str] | None
) -> str | None:
    """The search's Milvus filter, or None when no row can match (no round trip then)."""
    if (node_ids is not None and not node_ids) or matches_nothing(filters):
        return None
    clauses = [milvus_expression(filters)]
    if node_ids is not None:
        clauses.append(f"id in [{', '.join(milvus_literal(i) for i in node_ids)}]")
    return " and ".join(f"({clause})" for clause in clauses if clause)
