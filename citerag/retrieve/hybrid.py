"""Hybrid retrieval: BM25 and vector candidates, fused by reciprocal rank."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from citerag.retrieve.collection_state import CollectionState
from citerag.retrieve.fusion import reciprocal_rank_fusion
from citerag.store.base import PageRange, VectorIndex


@dataclass(frozen=True)
class RetrievalSettings:
    top_k_each: int = 35  # candidates from each of BM25 and the vector index
    rrf_k: int = 60
    fusion_top_n: int = 25


@dataclass
class RetrievalResult:
    dense: list[str] = field(default_factory=list)
    keyword: list[str] = field(default_factory=list)
    fused: list[tuple[str, float]] = field(default_factory=list)


class HybridRetriever:
    def __init__(self, vectors: VectorIndex, state: CollectionState, settings: RetrievalSettings):
        self._vectors = vectors
        self._state = state
        self._settings = settings

    @property
    def is_empty(self) -> bool:
        return self._state.is_empty

    def retrieve(
        self, query: str, query_vector: np.ndarray, page_range: PageRange | None = None
    ) -> RetrievalResult:
        if self._state.is_empty:
            return RetrievalResult()
        dense = self.dense(query_vector, page_range)
        keyword = self.keyword(query, page_range)
        fused = reciprocal_rank_fusion(
            [dense, keyword], k=self._settings.rrf_k, top_n=self._settings.fusion_top_n
        )
        return RetrievalResult(dense=dense, keyword=keyword, fused=fused)

    def dense(self, query_vector: np.ndarray, page_range: PageRange | None) -> list[str]:
        hits = self._vectors.search(
            self._state.name,
            query_vector.reshape(1, -1),
            self._settings.top_k_each,
            page_range=page_range,
        )[0]
        # Rows of a document still being ingested (or half-removed) are not visible.
        return [chunk_id for chunk_id, _ in hits if self._state.is_visible(chunk_id, page_range)]

    def keyword(self, query: str, page_range: PageRange | None) -> list[str]:
        allowed = None
        if page_range is not None:
            allowed = {
                chunk_id
                for chunk_id, place in self._state.places.items()
                if page_range.first <= place.page <= page_range.last
            }
        hits = self._state.bm25.search(query, self._settings.top_k_each, allowed_ids=allowed)
        return [chunk_id for chunk_id, _ in hits if self._state.is_visible(chunk_id, page_range)]
