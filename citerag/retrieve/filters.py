"""LlamaIndex `MetadataFilters` applied to chunk places, and pushed down to Milvus where they can.

Milvus takes what it filters fast (page range, document ids); every filter is also checked on
the candidates, so a filter that cannot be pushed down still holds. On a list field (enrichment's
years, entities, labels) `==` means "contains" and `in`/`any` mean "shares a value": a filter on a
list must match what the list holds, case-blind for text.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from citerag.enrich.fields import LIST_FIELDS
from citerag.errors import InputError
from citerag.nodes import DOC_ID, PAGE, fold
from citerag.store.base import PageRange

FILTERABLE = ("doc_id", "doc_name", "page", "section", "block_type", "label", *LIST_FIELDS)

_COMPARE: dict[FilterOperator, Callable[[Any, Any], bool]] = {
    FilterOperator.EQ: operator.eq,
    FilterOperator.NE: operator.ne,
    FilterOperator.GT: operator.gt,
    FilterOperator.GTE: operator.ge,
    FilterOperator.LT: operator.lt,
    FilterOperator.LTE: operator.le,
    FilterOperator.IN: lambda value, allowed: value in allowed,
    FilterOperator.NIN: lambda value, allowed: value not in allowed,
    FilterOperator.TEXT_MATCH: lambda value, text: str(text).lower() in str(value).lower(),
}
_LIST_COMPARE: dict[FilterOperator, Callable[[set[str], set[str]], bool]] = {
    FilterOperator.EQ: lambda held, wanted: wanted <= held,
    FilterOperator.CONTAINS: lambda held, wanted: wanted <= held,
    FilterOperator.ALL: lambda held, wanted: wanted <= held,
    FilterOperator.NE: lambda held, wanted: not wanted <= held,
    FilterOperator.IN: lambda held, wanted: bool(held & wanted),
    FilterOperator.ANY: lambda held, wanted: bool(held & wanted),
    FilterOperator.NIN: lambda held, wanted: not held & wanted,
    FilterOperator.TEXT_MATCH: lambda held, wanted: any(w in h for h in held for w in wanted),
}


def page_filters(first: int, last: int, doc_id: str | None = None) -> MetadataFilters:
    """Pages first..last (1-based, inclusive), optionally of one document."""
    items: list[MetadataFilter | MetadataFilters] = [
        MetadataFilter(key=PAGE, value=first, operator=FilterOperator.GTE),
        MetadataFilter(key=PAGE, value=last, operator=FilterOperator.LTE),
    ]
    if doc_id:
        items.append(MetadataFilter(key=DOC_ID, value=doc_id, operator=FilterOperator.EQ))
    return MetadataFilters(filters=items, condition=FilterCondition.AND)


def check_filters(filters: MetadataFilters | None) -> None:
    for item in _leaves(filters):
        if item.key not in FILTERABLE:
            raise InputError(
                f"Cannot filter on {item.key!r}; filter on one of {', '.join(FILTERABLE)}."
            )
        if item.operator not in (_LIST_COMPARE if item.key in LIST_FIELDS else _COMPARE):
            raise InputError(f"Filter operator {item.operator.value!r} is not supported here.")


def matches(metadata: Mapping[str, object], filters: MetadataFilters | None) -> bool:
    if filters is None or not filters.filters:
        return True
    results = (
        matches(metadata, item) if isinstance(item, MetadataFilters) else _holds(metadata, item)
        for item in filters.filters
    )
    if filters.condition == FilterCondition.OR:
        return any(results)
    if filters.condition == FilterCondition.NOT:
        return not any(results)
    return all(results)


_UNION_OPERATORS = frozenset({FilterOperator.ANY, FilterOperator.IN})
_ALL_OPERATORS = frozenset({FilterOperator.EQ, FilterOperator.CONTAINS, FilterOperator.ALL})
# (list field, values, partial) -> each folded value carried -> the chunks carrying it (with
# `partial`, carrying a value that contains it): the docstore's value table, as a snapshot shows.
Carriers = Callable[[str, Sequence[str], bool], Mapping[str, set[str]]]


def chunk_matches(
    filters: MetadataFilters,
    places: Mapping[str, Mapping[str, object]],
    carriers: Carriers,
    pool: Collection[str] | None = None,
) -> set[str]:
    """The chunk ids among `pool` (default every place) that `filters` match: what `matches`
    gives on each place holding its chunk's lists, with the lists' conditions read as the
    carriers of the values they name, so no chunk's lists are held or read one by one. A
    condition on other keys checks the places still in the running (all of them only where
    nothing narrowed them first)."""
    return _Matcher(places, carriers).ids(filters, pool)


class _Matcher:
    def __init__(self, places: Mapping[str, Mapping[str, object]], carriers: Carriers) -> None:
        self.places = places
        self.carriers = carriers

    def ids(self, filters: MetadataFilters, within: Collection[str] | None) -> set[str]:
        if not filters.filters:
            return self._every(within)
        if filters.condition == FilterCondition.OR:
            return set().union(*(self._item(item, within) for item in filters.filters))
        if filters.condition == FilterCondition.NOT:
            hit = set().union(*(self._item(item, within) for item in filters.filters))
            return self._every(within) - hit
        found: Collection[str] | None = within
        # conditions that name their carriers first: the rest check only what those left
        for item in sorted(filters.filters, key=lambda item: not _narrows(item)):
            found = self._item(item, found)
            if not found:
                return set()
        return set(found) if found is not None else self._every(None)

    def _item(
        self, item: MetadataFilter | MetadataFilters, within: Collection[str] | None
    ) -> set[str]:
        if isinstance(item, MetadataFilters):
            return self.ids(item, within)
        if item.key not in LIST_FIELDS:
            return {cid for cid in self._every(within) if _holds(self.places[cid], item)}
        if item.operator not in _LIST_COMPARE:
            raise InputError(f"Filter operator {item.operator.value!r} is not supported here.")
        wanted = list(_folded(_as_list(item.value)))
        partial = item.operator == FilterOperator.TEXT_MATCH
        by_value = self.carriers(item.key, wanted, partial) if wanted else {}
        groups = [by_value.get(v, set()) for v in wanted]
        if item.operator in _ALL_OPERATORS | {FilterOperator.NE}:
            held = set.intersection(*groups) if groups else None  # None: every chunk
        else:
            held = set().union(*groups)
        if item.operator in (FilterOperator.NE, FilterOperator.NIN):
            return set() if held is None else self._every(within) - held
        if held is None:
            return self._every(within)
        return held if within is None else held.intersection(within)

    def _every(self, within: Collection[str] | None) -> set[str]:
        return set(self.places if within is None else within)


def _narrows(item: MetadataFilter | MetadataFilters) -> bool:
    """Whether the condition's chunks are its values' carriers (not every chunk but those)."""
    return (
        isinstance(item, MetadataFilter)
        and item.key in LIST_FIELDS
        and item.operator in _UNION_OPERATORS | _ALL_OPERATORS | {FilterOperator.TEXT_MATCH}
        and bool(_as_list(item.value))
    )


def pushable_list_filters(filters: MetadataFilters | None) -> MetadataFilters | None:
    """The top-level AND filters on list fields that every match holds and a vector index can
    apply itself (contains / shares a value, with some value), or None when there are none."""
    if filters is None or filters.condition not in (None, FilterCondition.AND):
        return None
    items: list[MetadataFilter | MetadataFilters] = [
        item
        for item in filters.filters
        if isinstance(item, MetadataFilter)
        and item.key in LIST_FIELDS
        and item.operator in _UNION_OPERATORS | _ALL_OPERATORS
        and _as_list(item.value)
    ]
    return MetadataFilters(filters=items) if items else None


def pushdown(filters: MetadataFilters | None) -> tuple[PageRange | None, list[str] | None]:
    """The page range and document ids that every match must satisfy (top-level AND only)."""
    if filters is None or filters.condition not in (None, FilterCondition.AND):
        return None, None
    first, last, doc_ids = 1, 10**9, None
    for item in filters.filters:
        if not isinstance(item, MetadataFilter):
            continue
        if item.key == PAGE and item.operator in (FilterOperator.GTE, FilterOperator.GT):
            first = max(first, int(item.value) + (item.operator == FilterOperator.GT))  # type: ignore[arg-type]
        elif item.key == PAGE and item.operator in (FilterOperator.LTE, FilterOperator.LT):
            last = min(last, int(item.value) - (item.operator == FilterOperator.LT))  # type: ignore[arg-type]
        elif item.key == PAGE and item.operator == FilterOperator.EQ:
            first, last = max(first, int(item.value)), min(last, int(item.value))  # type: ignore[arg-type]
        elif item.key == DOC_ID and item.operator == FilterOperator.EQ:
            doc_ids = [str(item.value)]
        elif item.key == DOC_ID and item.operator == FilterOperator.IN:
            doc_ids = [str(v) for v in item.value]  # type: ignore[union-attr]
    page_range = None if (first, last) == (1, 10**9) else PageRange(first, last)
    return page_range, doc_ids


def vector_filters(filters: MetadataFilters | None) -> MetadataFilters | None:
    """What the vector index applies itself: the page bounds and document ids of `pushdown`."""
    page_range, doc_ids = pushdown(filters)
    items: list[MetadataFilter | MetadataFilters] = []
    if page_range is not None:
        items.append(MetadataFilter(key=PAGE, value=page_range.first, operator=FilterOperator.GTE))
        items.append(MetadataFilter(key=PAGE, value=page_range.last, operator=FilterOperator.LTE))
    if doc_ids is not None:
        items.append(MetadataFilter(key=DOC_ID, value=doc_ids, operator=FilterOperator.IN))
    return MetadataFilters(filters=items) if items else None


def _holds(metadata: Mapping[str, object], item: MetadataFilter) -> bool:
    if item.key not in metadata:
        return False
    held = metadata[item.key]
    if held is None:
        return False
    if isinstance(held, list | tuple | set):
        return _LIST_COMPARE[item.operator](_folded(held), _folded(_as_list(item.value)))
    return bool(_COMPARE[item.operator](metadata[item.key], item.value))


def _leaves(filters: MetadataFilters | None) -> list[MetadataFilter]:
    if filters is None:
        return []
    leaves: list[MetadataFilter] = []
    for item in filters.filters:
        leaves.extend(_leaves(item) if isinstance(item, MetadataFilters) else [item])
    return leaves


def _as_list(value: object) -> list[object]:
    return list(value) if isinstance(value, list | tuple | set) else [value]


def _folded(values: Iterable[object]) -> set[str]:
    return {fold(v) for v in values}
