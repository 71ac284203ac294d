"""Hybrid retrieval with a sub-question's list-field filters (years, entities).

Two kinds of filter (`ListFilters`): `vector` restricts the vector search only (the seed's way:
BM25 keeps every keyword match, and the embedding, which cannot tell 1996 from 1997, is held to
chunks that carry the value), `hard` restricts every ranking. Which field goes where is chosen
by measurement (benchmarks/results/subquestions.md). Matching chunk ids are found in the
collection state; the search is held to them as an id list or by the filter itself on the
collection's list columns (`retrieve.list_scope` says which, when). A filter that no chunk
matches is dropped, not left to empty the search.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from llama_index.core.vector_stores.types import MetadataFilters

from citerag.retrieve.hybrid import HybridRetriever
from citerag.retrieve.list_scope import MAX_PUSHED_IDS, VectorScope, all_of, list_scope

__all__ = ["MAX_PUSHED_IDS", "FilterScope", "ListFilteredRetriever", "ListFilters"]


class FilterScope(StrEnum):
    """Where a sub-question's list-field filter (years, entities) applies."""

    EVERY_RANKING = "both"  # keyword, vector and page rankings alike
    VECTOR_ONLY = "vector"  # the vector search only
    NOWHERE = "none"  # not a filter (the retriever may still weigh it as evidence)


@dataclass(frozen=True)
class ListFilters:
    """A sub-question's list-field filters: `vector` on the vector search only, `hard` on
    every ranking."""

    vector: MetadataFilters | None = None
    hard: MetadataFilters | None = None


class ListFilteredRetriever(HybridRetriever):
    def __init__(self, *args: Any, list_filters: ListFilters | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        list_filters = list_filters or ListFilters()
        self._vector_filters = list_filters.vector
        self._hard_filters = list_filters.hard
        self.matched: dict[str, int] = {}  # chunks each kind of filter matched

    def _allowed_chunks(self) -> set[str] | None:
        allowed = super()._allowed_chunks()
        hard = self._matching(self._hard_filters, allowed, "hard")
        return allowed if hard is None else hard

    def _vector_scope(self, allowed: set[str] | None) -> VectorScope:
        """The chunks the vector filters match (or the hard filters' `allowed`), the search
        held to them by ids or by the list filters themselves (`list_scope`)."""
        wanted = self._matching(self._vector_filters, allowed, "vector")
        if wanted is None:
            if allowed is None or self._hard_filters is None:
                return super()._vector_scope(allowed)
            wanted = allowed
        # The filters `wanted` holds to: the question's, and each kind that matched something
        # (one that matched nothing was dropped).
        held = [self._filters]
        held += [self._hard_filters] if self.matched.get("hard") else []
        held += [self._vector_filters] if self.matched.get("vector") else []
        scope = list_scope(self._vectors, self._state.name, wanted, all_of(held))
        if scope.ids is None and scope.filters is None and len(wanted) <= MAX_PUSHED_IDS:
            return VectorScope(wanted, sorted(wanted))  # filters the search cannot apply
        return scope

    def _matching(
        self, filters: MetadataFilters | None, allowed: set[str] | None, kind: str
    ) -> set[str] | None:
        """Chunk ids (among `allowed`) the filters match; None when there is no filter or
        nothing matches."""
        if filters is None or not filters.filters:
            return None
        wanted = self._state.matching(filters, allowed)
        self.matched[kind] = len(wanted)
        return wanted or None
