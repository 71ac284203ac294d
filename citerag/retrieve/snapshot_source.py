"""What rankers ask of a collection, answered from its in-memory snapshot, the docstore and
the vector index (`citerag.retrieve.rankers.RankSource`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from citerag.retrieve.collection_state import CollectionState
from citerag.retrieve.page_evidence import PageKey
from citerag.retrieve.place import Place
from citerag.store.base import DocStore
from citerag.store.keywords import KeywordKind

# The retriever's vector search: (question vector, top k, allowed chunks) -> chunk ids. It
# holds the retriever's own filters and scope (`HybridRetriever._dense`).
VectorSearch = Callable[[np.ndarray, int, set[str] | None], list[str]]


@dataclass(frozen=True)
class SnapshotSource:
    state: CollectionState
    docstore: DocStore
    vector_search: VectorSearch

    def vector_hits(self, vector: np.ndarray, top_k: int, allowed: set[str] | None) -> list[str]:
        return self.vector_search(vector, top_k, allowed)

    def keyword_hits(
        self, kind: KeywordKind, text: str, top_k: int, among: Collection[str] | None
    ) -> list[str]:
        return [found for found, _ in self.state.keyword_hits(kind, text, top_k, among)]

    def sentence_vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self.docstore.get_sentence_vectors(self.state.name, list(chunk_ids))

    def head_vectors(self, pages: Collection[PageKey]) -> dict[str, np.ndarray]:
        return self.sentence_vectors(sorted({page.id for page in pages})) if pages else {}

    def page_vector_hits(
        self, vector: np.ndarray, top_k: int, allowed: set[str] | None
    ) -> list[str]:
        return self.state.page_vector_hits(vector, top_k, allowed)

    def place(self, chunk_id: str) -> Place:
        return self.state.places[chunk_id]

    def pages_of(self, chunk_ids: Collection[str]) -> set[str]:
        places = self.state.places
        return {places[c].page_key.id for c in chunk_ids}

    def chunks_on(self, page_id: str) -> list[str]:
        """The page's chunk ids, in reading order."""
        return self.state.chunks_on(page_id)

    def mentions(self, key: str, text: str) -> list[str]:
        return self.state.mentions(key, text)

    def carriers(self, key: str, values: Sequence[str]) -> Mapping[str, set[str]]:
        return self.state.carriers(key, values)

    @property
    def chunk_count(self) -> int:
        return len(self.state.places)

    def key_pages(self) -> Mapping[str, str]:
        return self.state.key_pages
