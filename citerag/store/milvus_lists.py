"""Enrichment's list fields (years, entities, topics, ...) as Milvus ARRAY<VARCHAR> columns.

A filter on a year or an entity is then part of the vector search itself (`array_contains*`),
so the top hits are the best among the matching chunks however many match. Values are stored
case-folded (a list filter is case-blind, `retrieve.filters`) and as strings: years hold decades
("1990s") too, so they are not integers.

Bounds: each column holds at most `capacity` values of at most `max_bytes` UTF-8 bytes. A value
longer than that or past the capacity is left out of the column (never cut: a cut value could
match another name) and the row's `lists_cut` is set; a positive filter lets such rows through
(`or lists_cut`) and the retriever checks every hit against the chunk's full lists, so a left-out
value costs a search slot, never a match. Negations are not pushed (`PUSHED_OPERATORS`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters
from pymilvus import CollectionSchema, DataType

from citerag.errors import InputError
from citerag.nodes import folded


@dataclass(frozen=True)
class ListColumn:
    capacity: int  # values per row
    max_bytes: int  # UTF-8 bytes per value


# Enrichment's LIST_FIELDS by name (the store layer does not import enrich; a test keeps the
# two the same), sized from what it writes: years/decades are 4-5 characters, dates and amounts
# as written ("March 3, 2019", "$4.5 billion"), entity names and "attribute=value" topics longer.
LIST_COLUMNS: dict[str, ListColumn] = {
    "years": ListColumn(64, 16),
    "dates": ListColumn(32, 64),
    "money": ListColumn(64, 64),
    "percents": ListColumn(64, 32),
    "labels": ListColumn(16, 64),
    "entities": ListColumn(64, 128),
    "topics": ListColumn(32, 128),
}
CUT = "lists_cut"  # True when some value of the row's lists was left out of its columns
_ALL = frozenset({FilterOperator.EQ, FilterOperator.CONTAINS, FilterOperator.ALL})
_ANY = frozenset({FilterOperator.IN, FilterOperator.ANY})
PUSHED_OPERATORS = _ALL | _ANY


def add_list_fields(schema: CollectionSchema) -> None:
    for name, column in LIST_COLUMNS.items():
        schema.add_field(
            name,
            DataType.ARRAY,
            element_type=DataType.VARCHAR,
            max_capacity=column.capacity,
            max_length=column.max_bytes,
        )
    schema.add_field(CUT, DataType.BOOL)


def list_entity(lists: Mapping[str, Sequence[str]], cut: bool) -> dict[str, object]:
    """The row's list columns within their bounds, and `lists_cut`."""
    entity: dict[str, object] = {}
    for name, column in LIST_COLUMNS.items():
        values = folded(lists.get(name) or [])
        kept = [v for v in values if len(v.encode("utf-8")) <= column.max_bytes]
        kept = kept[: column.capacity]
        cut = cut or len(kept) < len(values)
        entity[name] = kept
    entity[CUT] = cut
    return entity


def list_keys(filters: MetadataFilters | None) -> set[str]:
    """The list fields `filters` name, at any depth."""
    if filters is None:
        return set()
    keys: set[str] = set()
    for item in filters.filters:
        if isinstance(item, MetadataFilters):
            keys |= list_keys(item)
        elif item.key in LIST_COLUMNS:
            keys.add(item.key)
    return keys


def is_pushable(item: MetadataFilter) -> bool:
    """Whether the search itself can apply this filter on a list field."""
    return item.key in LIST_COLUMNS and item.operator in PUSHED_OPERATORS


def list_clause(item: MetadataFilter) -> str:
    """The Milvus expression of a positive filter on a list field (`retrieve.filters` meaning:
    `==`/contains/all hold every value, `in`/any share one), rows with left-out values kept."""
    if item.operator not in PUSHED_OPERATORS:
        raise InputError(
            f"The vector index cannot apply the filter operator {item.operator.value!r} to the "
            f"list field {item.key!r}; use ==, contains, all, in or any."
        )
    raw = item.value if isinstance(item.value, list | tuple | set) else [item.value]
    values = folded(raw)
    if not values:
        # Python's meaning: "holds all of nothing" is true, "shares one of nothing" is false.
        return 'id != ""' if item.operator in _ALL else 'id == ""'  # ids are never empty
    # A JSON string literal is a valid Milvus string literal (quotes and backslashes escaped).
    listed = ", ".join(json.dumps(v) for v in values)
    if len(values) == 1:
        test = f"array_contains({item.key}, {listed})"
    elif item.operator in _ALL:
        test = f"array_contains_all({item.key}, [{listed}])"
    else:
        test = f"array_contains_any({item.key}, [{listed}])"
    return f"{test} or {CUT} == true"
