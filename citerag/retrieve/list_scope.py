"""How the vector search is held to the chunks a filter on list fields (years, entities) matches.

Three ways, chosen per question (measured in benchmarks/results/list_filters.md):
- the matching chunk ids as `id in [...]`, up to the index's `id_list_limit` where that is the
  faster way (Milvus Lite scans an array filter row by row: 15-17x slower than an id list at
  60k rows), and up to `MAX_PUSHED_IDS` in a collection made before the columns;
- the filter itself (`array_contains*` on the list columns), at any size, where the collection
  has the columns: the top hits are then the best among all the matching chunks;
- neither, for a collection made before the columns with more matches than `MAX_PUSHED_IDS`:
  the hits are filtered after the search (fewer of them; the index logs how to upgrade).
Whatever was pushed, every hit is still checked against `among` (the chunks' full lists).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llama_index.core.vector_stores.types import FilterCondition, MetadataFilter, MetadataFilters

from citerag.retrieve.filters import pushable_list_filters
from citerag.store.base import VectorIndex

MAX_PUSHED_IDS = 5000  # beyond this an id list costs more than the filter it stands for


@dataclass(frozen=True)
class VectorScope:
    among: set[str] | None = None  # the chunks hits must be among (None: any)
    ids: Sequence[str] | None = None  # the ids the search is limited to (None: no id list)
    filters: MetadataFilters | None = None  # list-field filters the search applies itself


def list_scope(
    vectors: VectorIndex, collection: str, among: set[str] | None, filters: MetadataFilters | None
) -> VectorScope:
    """The scope of a vector search whose hits must be among `among`, the chunks that match
    `filters` (and maybe more conditions, checked on the hits)."""
    pushable = pushable_list_filters(filters)
    if among is None or pushable is None:
        return VectorScope(among)
    keys = {item.key for item in pushable.filters if isinstance(item, MetadataFilter)}
    in_search = keys <= vectors.list_fields(collection)
    if len(among) <= (vectors.id_list_limit if in_search else MAX_PUSHED_IDS):
        return VectorScope(among, sorted(among))
    return VectorScope(among, None, pushable if in_search else None)


def joined(first: MetadataFilters | None, second: MetadataFilters | None) -> MetadataFilters | None:
    """Both sets of filters, each holding (None when neither has any)."""
    parts = [f for f in (first, second) if f is not None and f.filters]
    if len(parts) < 2:
        return parts[0] if parts else None
    return MetadataFilters(filters=list(parts))


def all_of(filters: Sequence[MetadataFilters | None]) -> MetadataFilters | None:
    """One AND of every filter given: the top-level items of each AND, an OR or NOT whole."""
    items: list[MetadataFilter | MetadataFilters] = []
    for each in filters:
        if each is None or not each.filters:
            continue
        if each.condition in (None, FilterCondition.AND):
            items.extend(each.filters)
        else:
            items.append(each)
    return MetadataFilters(filters=items) if items else None
