"""A collection of 10,000+ chunks for latency at scale, made from already-ingested documents.

Each copy of a document gets its own document id, chunk ids and name, and reuses the
original's chunk, sentence and page vectors, written through the project's own store
interfaces (docstore, vector index, keyword index), document by document, exactly as ingestion
writes them: nothing collection-wide is rebuilt.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence

import numpy as np
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

from citerag.engine import Engine
from citerag.ingest.page_rows import write_page_rows
from citerag.ingest.vectors import PREVIEW_CHARS, chunk_vectors
from citerag.nodes import (
    DOC_ID,
    DOC_NAME,
    block_type_of,
    chunk_index_of,
    doc_id_of,
    label_of,
    page_of,
    page_vector_key,
    section_of,
)
from citerag.retrieve.page_evidence import keyword_entries
from citerag.store.base import VectorRow
from citerag.types import DocumentRecord


def build_big_collection(
    engine: Engine, sources: Sequence[str], target: str, min_chunks: int = 10_000
) -> dict[str, np.ndarray]:
    """Copy every document of `sources` into `target` until it holds `min_chunks` chunks;
    returns each copied chunk's vector by id."""
    by_collection = {c: engine.docstore.ready_chunks(c) for c in sources}
    vectors = {c: _chunk_vectors(engine, c, nodes) for c, nodes in by_collection.items()}
    copies = -(-min_chunks // sum(len(nodes) for nodes in by_collection.values()))
    written: dict[str, np.ndarray] = {}
    for copy in range(copies):
        for collection, nodes in by_collection.items():
            written.update(
                _write_copy(engine, collection, nodes, vectors[collection], target, copy)
            )
    return written


def drop_collection(engine: Engine, target: str) -> None:
    """Remove every document of `target` from the three stores."""
    for record in engine.docstore.list_documents(target, include_pending=True):
        engine.vectors.delete_document(target, record.doc_id)
        engine.docstore.delete_document(target, record.doc_id)
    engine.keywords.drop_collection(target)


def _chunk_vectors(engine: Engine, collection: str, nodes: Sequence[TextNode]) -> np.ndarray:
    """The vectors ingest stored: each chunk's from its stored sentence vectors."""
    sentences = engine.docstore.get_sentence_vectors(collection, [n.node_id for n in nodes])
    return chunk_vectors(engine.embedder, nodes, sentences)


def _write_copy(
    engine: Engine,
    collection: str,
    nodes: Sequence[TextNode],
    vectors: np.ndarray,
    target: str,
    copy: int,
) -> dict[str, np.ndarray]:
    written: dict[str, np.ndarray] = {}
    for doc_id in dict.fromkeys(doc_id_of(n) for n in nodes):
        rows = [i for i, n in enumerate(nodes) if doc_id_of(n) == doc_id]
        doc_nodes = [nodes[i] for i in rows]
        new_id = hashlib.sha256(f"{doc_id}:{copy}".encode()).hexdigest()
        name = f"copy{copy:02d}-{doc_nodes[0].metadata[DOC_NAME]}"
        copied = _copied_nodes(doc_nodes, new_id, name)
        sentence = engine.docstore.get_sentence_vectors(collection, [n.node_id for n in doc_nodes])
        pages = sorted({page_of(n) for n in doc_nodes})
        heads = engine.docstore.get_sentence_vectors(
            collection, [page_vector_key(doc_id, p) for p in pages]
        )
        record = DocumentRecord(new_id, name, target, max(pages), "copy", "pending", time.time())
        engine.docstore.put_document(record)
        engine.docstore.put_chunks(target, copied)
        features = {c.node_id: sentence[o.node_id] for c, o in zip(copied, doc_nodes, strict=True)}
        copied_heads = {
            page_vector_key(new_id, p): heads[page_vector_key(doc_id, p)]
            for p in pages
            if page_vector_key(doc_id, p) in heads
        }
        features.update(copied_heads)
        engine.docstore.put_sentence_vectors(target, features)
        engine.vectors.ensure_collection(target, vectors.shape[1])
        engine.vectors.insert(
            target, [_row(c, vectors[i]) for c, i in zip(copied, rows, strict=True)]
        )
        write_page_rows(engine.stores, target, new_id, pages, copied_heads)
        engine.keywords.add_document(target, new_id, keyword_entries(copied))
        engine.docstore.mark_ready(target, new_id)
        written.update((c.node_id, vectors[i]) for c, i in zip(copied, rows, strict=True))
    return written


def _copied_nodes(nodes: Sequence[TextNode], doc_id: str, name: str) -> list[TextNode]:
    ids = {n.node_id: f"{doc_id[:16]}-{chunk_index_of(n):05d}" for n in nodes}
    copied = []
    for node in nodes:
        clone = node.model_copy(deep=True)
        clone.id_ = ids[node.node_id]
        copied.append(relinked(clone, ids, doc_id, name))
    return copied


def relinked(clone: TextNode, ids: dict[str, str], doc_id: str, name: str) -> TextNode:
    """`clone` made a chunk of document `doc_id` (named `name`): its neighbours are the copies'
    (`ids`: source node id -> copy's) and its source the new document."""
    clone.metadata[DOC_ID] = doc_id
    clone.metadata[DOC_NAME] = name
    clone.relationships = {
        relation: RelatedNodeInfo(node_id=ids.get(info.node_id, doc_id))
        for relation, info in clone.relationships.items()
        if isinstance(info, RelatedNodeInfo)
    }
    clone.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc_id)
    return clone


def _row(node: TextNode, vector: np.ndarray) -> VectorRow:
    return VectorRow(
        chunk_id=node.node_id,
        vector=vector,
        doc_id=doc_id_of(node),
        doc_name=str(node.metadata[DOC_NAME]),
        page=page_of(node),
        node_type=block_type_of(node),
        section=section_of(node),
        label=label_of(node),
        preview=node.text[:PREVIEW_CHARS],
    )
