"""Hybrid retrieval with a sub-question's list-field filters (years, entities).

Two kinds of filter (`ListFilters`): `vector` restricts the vector search only (the seed's way:
BM25 keeps every keyword match, and the embedding, which cannot tell 1996 from 1997, is held to
chunks that carry the value), `hard` restricts every ranking. Which field goes where is chosen
by measurement (benchmarks/results/subquestions.md). Matching chunk ids are found in the
collection state and pushed to Milvus as `id in [...]` (Milvus Lite's `array_contains` is slow
and loses recall under HNSW). A filter that no chunk matches is dropped, not left to empty the
search.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from llama_index.core.vector_stores.types import MetadataFilters

from citerag.retrieve.hybrid import HybridRetriever

MAX_PUSHED_IDS = 5000  # beyond this the id list costs more than filtering the hits


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

    def _vector_scope(
        self, allowed: set[str] | None
    ) -> tuple[set[str] | None, Sequence[str] | None]:
        """The chunks the vector filters match (or the hard filters' `allowed`), pushed to the
        search as ids when there are not too many."""
        wanted = self._matching(self._vector_filters, allowed, "vector")
        if wanted is None:
            if allowed is None or self._hard_filters is None:
                return super()._vector_scope(allowed)
            wanted = allowed
        pushed = sorted(wanted) if len(wanted) <= MAX_PUSHED_IDS else None
        return wanted, pushed

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
