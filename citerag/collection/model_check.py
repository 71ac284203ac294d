"""The embedding model a collection was stored with, checked against the engine's."""

from __future__ import annotations

import threading

from citerag.embed.collection_model import check_model, record_model
from citerag.embed.embedder import Embedder
from citerag.retrieve.collection_state import CollectionState
from citerag.store.base import DocStore


class ModelCheck:
    """Refuses a question or an ingest whose embedder differs from the collection's recorded
    model. For questions the record is read once per snapshot: it only changes with the
    documents, and every document change makes a new snapshot."""

    def __init__(self, docstore: DocStore, embedder: Embedder) -> None:
        self._docstore = docstore
        self._embedder = embedder
        self._checked: dict[str, CollectionState] = {}  # the snapshot last checked
        self._lock = threading.Lock()

    def before_asking(self, collection: str, state: CollectionState) -> None:
        with self._lock:
            if self._checked.get(collection) is state:
                return
            check_model(self._docstore, collection, self._embedder, "ask")
            self._checked[collection] = state

    def before_ingest(self, collection: str) -> None:
        check_model(self._docstore, collection, self._embedder, "ingest into")

    def after_ingest(self, collection: str) -> None:
        record_model(self._docstore, collection, self._embedder)
