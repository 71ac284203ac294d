"""Collection snapshots over a real docstore (SQLite, in memory), made from places written as
chunk metadata: the enrichment lists a test gives go to the docstore's value table, where a
snapshot asks for them, and each document is loaded as a serving process loads it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from citerag.nodes import DOC_ID, PAGE, chunk_node
from citerag.retrieve.collection_state import CollectionState
from citerag.retrieve.doc_state import DocState, load_doc_state
from citerag.store.keywords import KeywordIndex
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.types import DocumentCard, DocumentRecord

Places = Mapping[str, Mapping[str, Any]]  # chunk id -> its metadata (doc_id and page at least)


def memory_docstore() -> SQLiteDocStore:
    return SQLiteDocStore(Path(":memory:"))


def stored_doc(
    docstore: SQLiteDocStore,
    doc_id: str,
    places: Places,
    version: float = 1.0,
    collection: str = "c",
) -> DocState:
    """Document `doc_id` written with a chunk per place (in the order given) and loaded."""
    docstore.delete_document(collection, doc_id)
    record = DocumentRecord(doc_id, f"{doc_id}.pdf", collection, 1, "pymupdf", "pending", version)
    docstore.put_document(record)
    chunks = []
    for index, (chunk_id, where) in enumerate(places.items()):
        node = chunk_node(
            node_id=chunk_id,
            doc_id=doc_id,
            doc_name=str(where.get("doc_name", f"{doc_id}.pdf")),
            page=int(where.get(PAGE, 1)),
            chunk_index=index,
            text=f"Chunk {chunk_id}.",
            start=0,
        )
        node.metadata.update(where)
        chunks.append(node)
    docstore.put_chunks(collection, chunks)
    docstore.mark_ready(collection, doc_id)
    return load_doc_state(docstore, collection, doc_id, version, card=DocumentCard())


def stored_state(
    places: Places, keywords: KeywordIndex | None = None, docstore: SQLiteDocStore | None = None
) -> CollectionState:
    """A snapshot of every place's document, over `docstore` (a new one by default)."""
    docstore = docstore or memory_docstore()
    by_doc: dict[str, dict[str, Mapping[str, Any]]] = {}
    for chunk_id, where in places.items():
        by_doc.setdefault(str(where[DOC_ID]), {})[chunk_id] = where
    docs = {doc_id: stored_doc(docstore, doc_id, held) for doc_id, held in by_doc.items()}
    return CollectionState("c", docs, keywords, docstore)  # type: ignore[arg-type]
