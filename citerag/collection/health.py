"""The documents of each collection and whether Milvus and the docstore agree on them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from citerag.enrich.enrichment_summary import enrichment_summary
from citerag.retrieve.collection_state import CollectionState
from citerag.store.base import DocStore, VectorIndex
from citerag.types import DocumentRecord, camel_case_fields


@dataclass
class DocumentSummary:
    collection: str
    name: str
    doc_id: str
    pages: int
    parser: str
    chunks_in_milvus: int
    chunks_in_docstore: int
    metadata: dict[str, Any] | None = None  # what enrichment stored (enrich.enrichment_summary)
    card: dict[str, Any] | None = None  # what the document is (citerag.enrich.cards)

    @property
    def health(self) -> str:
        """ "ok" when Milvus and the docstore hold the same chunks, else what is missing."""
        if self.chunks_in_milvus == self.chunks_in_docstore > 0:
            return "ok"
        if self.chunks_in_docstore == 0:
            return "no chunks in the docstore"
        if self.chunks_in_milvus < self.chunks_in_docstore:
            return "vectors missing in Milvus"
        return "chunks missing in the docstore"

    def to_dict(self) -> dict[str, object]:
        unenriched = {"enrichedBy": "none", "fields": {}}
        record = camel_case_fields(self, metadata=self.metadata or unenriched)
        return {**record, "health": self.health}


class DocumentHealth:
    """Summaries of a collection's documents. `state(collection)` gives its loaded state, read
    only for the cards of documents stored before cards were made."""

    def __init__(
        self,
        docstore: DocStore,
        vectors: VectorIndex,
        state: Callable[[str], CollectionState],
    ) -> None:
        self._docstore = docstore
        self._vectors = vectors
        self._state = state

    def summaries(self, collection: str) -> list[DocumentSummary]:
        has_vectors = self._vectors.has_collection(collection)
        records = self._docstore.list_documents(collection)
        cards = self._cards(collection, records)
        return [
            DocumentSummary(
                collection=collection,
                name=record.name,
                doc_id=record.doc_id,
                pages=record.pages,
                parser=record.parser,
                chunks_in_milvus=(
                    self._vectors.count(collection, record.doc_id) if has_vectors else 0
                ),
                chunks_in_docstore=self._docstore.count_chunks(collection, record.doc_id),
                metadata=enrichment_summary(self._docstore.chunks_of(collection, record.doc_id)),
                card=cards.get(record.doc_id),
            )
            for record in records
        ]

    def _cards(
        self, collection: str, records: Sequence[DocumentRecord]
    ) -> dict[str, dict[str, Any]]:
        """Each ready document's card (`records`): stored at ingest, or read now from the first
        pages of a document stored before cards were made."""
        stored = self._docstore.get_cards(collection)
        if all(r.doc_id in stored for r in records):
            return {d: dict(card) for d, card in stored.items()}
        docs = self._state(collection).docs
        return {d: doc.card.to_dict() for d, doc in docs.items()}
