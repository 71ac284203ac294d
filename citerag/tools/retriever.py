"""Hybrid retrieval with a sub-question's list-field filters (years, entities) on one side.

The seed filters the vector search and leaves BM25 unfiltered: keyword matches are kept, and
the embedding, which cannot tell 1996 from 1997, is held to chunks that carry the year. The
matching chunk ids are found in the collection state and pushed to Milvus as `id in [...]`
(Milvus Lite's `array_contains` is slow and loses recall under HNSW). A filter that no chunk
matches is dropped rather than emptying the search. `scope` says which rankings it restricts:
"vector" (the seed's, the default), "both", or "none".
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llama_index.core.vector_stores.types import MetadataFilters

from citerag.retrieve.filters import matches, pushdown
from citerag.retrieve.hybrid import HybridRetriever

MAX_PUSHED_IDS = 5000  # beyond this the id list costs more than filtering the hits
SCOPES = ("vector", "both", "none")


class ListFilteredRetriever(HybridRetriever):
    def __init__(
        self,
        *args: Any,
        list_filters: MetadataFilters | None = None,
        scope: str = "vector",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._list_filters = list_filters if scope != "none" else None
        self._scope = scope
        self.matched: int | None = None  # chunks the list filters matched (None: no filter)

    def _list_allowed(self, allowed: set[str] | None) -> set[str] | None:
        if self._list_filters is None or not self._list_filters.filters:
            return None
        places = self._state.places
        pool = places.keys() if allowed is None else allowed
        wanted = {cid for cid in pool if matches(places[cid], self._list_filters)}
        self.matched = len(wanted)
        return wanted or None

    def _dense(self, query_vector: np.ndarray, allowed: set[str] | None) -> list[str]:
        wanted = self._list_allowed(allowed)
        if wanted is None:
            return super()._dense(query_vector, allowed)
        page_range, doc_ids = pushdown(self._filters)
        pushed = sorted(wanted) if len(wanted) <= MAX_PUSHED_IDS else None
        hits = self._vectors.search(
            self._state.name,
            query_vector.reshape(1, -1),
            self._settings.top_k_each,
            page_range=page_range,
            doc_ids=doc_ids,
            ids=pushed,
        )[0]
        return [cid for cid, _ in hits if cid in wanted]

    def _keyword(self, question: str, allowed: set[str] | None) -> list[str]:
        if self._scope == "both":
            wanted = self._list_allowed(allowed)
            if wanted is not None:
                allowed = wanted
        return super()._keyword(question, allowed)
