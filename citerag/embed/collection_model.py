"""Which embedding model a collection's vectors come from, so that no collection mixes two.

The first ingest into a collection records the model's id (`local:all-MiniLM-L6-v2`,
`openai:text-embedding-3-small`, ...) and dimension in the docstore, beside the documents'
trees under a key no document id can take (ids are sha256 hex). Ingesting into or asking a
collection with another model is one ConfigError naming both. A collection with no documents
takes the model of its next ingest; one built before models were recorded takes the model of
its next ingest too (its dimension is still checked by the vector index).
"""

from __future__ import annotations

from dataclasses import dataclass

from citerag.embed.embedder import Embedder
from citerag.errors import ConfigError
from citerag.store.base import DocStore

RECORD_KEY = "__embedding_model__"


@dataclass(frozen=True)
class CollectionModel:
    model_id: str
    dim: int


def stored_model(docstore: DocStore, collection: str) -> CollectionModel | None:
    data = docstore.get_tree(collection, RECORD_KEY)
    if not data or not isinstance(data.get("model_id"), str):
        return None
    dim = data.get("dim", 0)
    return CollectionModel(str(data["model_id"]), int(dim) if isinstance(dim, int | str) else 0)


def check_model(docstore: DocStore, collection: str, embedder: Embedder, action: str) -> None:
    """A ConfigError when `collection` holds documents embedded by another model than
    `embedder`'s; `action` says what was refused ("ingest into", "ask")."""
    stored = stored_model(docstore, collection)
    if stored is None or stored.model_id == embedder.model_id:
        return
    if not docstore.list_documents(collection):
        return  # nothing embedded is left: the next ingest records its own model
    raise ConfigError(
        f"Cannot {action} collection {collection!r}: its vectors come from {stored.model_id} "
        f"({stored.dim} dimensions) but the configured embeddings are {embedder.model_id}; set "
        "EMBEDDING_PROVIDER and EMBEDDING_MODEL back, or use another collection."
    )


def record_model(docstore: DocStore, collection: str, embedder: Embedder) -> None:
    """Record `embedder`'s model for `collection` (after an ingest stored its vectors)."""
    current = CollectionModel(embedder.model_id, embedder.dim)
    if stored_model(docstore, collection) != current:
        docstore.put_tree(
            collection, RECORD_KEY, {"model_id": current.model_id, "dim": current.dim}
        )
