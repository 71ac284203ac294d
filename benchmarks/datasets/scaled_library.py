"""A library of N chunks grown from the ingested shared library, for the scale benchmark.

The source documents go in first, unchanged (ids, names, text, vectors): the labelled questions'
documents are inside the big library as the library suite has them. Then copies follow, document
by document in the source's order, until the library holds N chunks; copy number k renames the
names, shifts the years and perturbs the sentence, chunk and page vectors as
`benchmarks.datasets.realistic_copies` describes, in the chunk text and metadata, the cards, the
section trees and the document names. Nothing is embedded again: rows are written in batches
through the project's own stores (docstore `put_chunks`/`put_sentence_vectors`, the vector
index's `insert`, the keyword index's `add_document`), as ingestion writes them.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import Any

import numpy as np
from llama_index.core.schema import TextNode

from benchmarks.datasets.big_collection import relinked
from benchmarks.datasets.realistic_copies import CopyPlan, perturbed, renamable_words
from citerag.embed.collection_model import RECORD_KEY
from citerag.enrich.fields import ENRICHED_BY, ENTITIES
from citerag.ingest.page_rows import page_rows
from citerag.ingest.vectors import vector_rows
from citerag.nodes import (
    BLOCK_TYPE,
    BOXES,
    CHUNK_INDEX,
    DOC_ID,
    HIGHLIGHTS,
    OCR_CONFIDENCE,
    PAGE,
    SENTENCES,
    chunk_index_of,
    chunk_key,
    page_of,
    page_vector_key,
)
from citerag.retrieve.page_evidence import keyword_entries
from citerag.store.base import Stores
from citerag.types import DocumentRecord

# Ids, geometry and bookkeeping: copied as they are.
KEPT_KEYS: tuple[str, ...] = (DOC_ID, CHUNK_INDEX, BOXES, SENTENCES, HIGHLIGHTS, BLOCK_TYPE, PAGE)
KEPT_KEYS += (OCR_CONFIDENCE, ENRICHED_BY)
BATCH_CHUNKS = 5000  # chunks per batch of store writes
NAME_FIELDS = ("organisation", "authors", "ticker")  # the card fields that are names


@dataclass
class SourceDocument:
    record: DocumentRecord
    chunks: list[TextNode]
    sentences: dict[str, np.ndarray]  # by chunk id, and the page heads by page key
    vectors: np.ndarray  # the chunks' index vectors, in chunk order
    card: dict[str, Any] | None
    tree: dict[str, Any] | None


@dataclass
class Copied:
    record: DocumentRecord
    chunks: list[TextNode]
    sentences: dict[str, np.ndarray]
    vectors: np.ndarray
    card: dict[str, Any] | None
    tree: dict[str, Any] | None


@dataclass
class BuildSummary:
    chunks: int = 0
    documents: int = 0
    copies: int = 0  # copy numbers started (the source is copy 0)
    seconds: float = 0.0
    renamable_words: int = 0


def read_source(stores: Stores, collection: str) -> list[SourceDocument]:
    """Every ready document of `collection` with all it stores."""
    cards = stores.docstore.get_cards(collection)
    found = []
    for record in stores.docstore.list_documents(collection):
        chunks = stores.docstore.chunks_of(collection, record.doc_id)
        rows = stores.vectors.rows_of(collection, record.doc_id)
        by_id = {row.chunk_id: row.vector for row in rows}
        pages = sorted({page_of(c) for c in chunks})
        keys = [c.node_id for c in chunks] + [page_vector_key(record.doc_id, p) for p in pages]
        found.append(
            SourceDocument(
                record=record,
                chunks=chunks,
                sentences=stores.docstore.get_sentence_vectors(collection, keys),
                vectors=np.stack([np.asarray(by_id[c.node_id], np.float32) for c in chunks]),
                card=cards.get(record.doc_id),
                tree=stores.docstore.get_tree(collection, record.doc_id),
            )
        )
    return found


def source_words(documents: Sequence[SourceDocument]) -> frozenset[str]:
    """The words every copy renames: those of the source's entities and card names."""
    texts = [c.text for d in documents for c in d.chunks]
    names = [str(e) for d in documents for c in d.chunks for e in c.metadata.get(ENTITIES, [])]
    for document in documents:
        card = document.card or {}
        for key in NAME_FIELDS:
            value = card.get(key)
            names += [str(v) for v in value] if isinstance(value, list) else [str(value or "")]
    return renamable_words(texts, names)


def copy_document(
    source: SourceDocument, plan: CopyPlan, collection: str, rng: np.random.Generator, name: str
) -> Copied:
    """Copy `plan.copy` of `source` into `collection` under `name` (copy 0: the source)."""
    if plan.copy == 0:
        record = replace(source.record, collection=collection, status="pending")
        kept = (source.chunks, source.sentences, source.vectors, source.card, source.tree)
        return Copied(record, *kept)
    old_id = source.record.doc_id
    doc_id = hashlib.sha256(f"{old_id}:{plan.copy}".encode()).hexdigest()
    ids = {c.node_id: chunk_key(doc_id, chunk_index_of(c)) for c in source.chunks}
    chunks = [_copied_node(c, plan, ids, doc_id, name) for c in source.chunks]
    sentences = {ids.get(k, k): perturbed(v, rng) for k, v in source.sentences.items() if k in ids}
    for page in sorted({page_of(c) for c in source.chunks}):
        head = source.sentences.get(page_vector_key(old_id, page))
        if head is not None:
            sentences[page_vector_key(doc_id, page)] = perturbed(head, rng)
    record = replace(source.record, doc_id=doc_id, name=name, collection=collection)
    return Copied(
        record=replace(record, status="pending", created_at=time.time()),
        chunks=chunks,
        sentences=sentences,
        vectors=perturbed(source.vectors, rng),
        card=plan.card(source.card) if source.card is not None else None,
        tree=plan.value(source.tree) if source.tree is not None else None,
    )


def _copied_node(
    node: TextNode, plan: CopyPlan, ids: dict[str, str], doc_id: str, name: str
) -> TextNode:
    clone = node.model_copy()  # shallow: every field that differs is replaced below
    clone.id_ = ids[node.node_id]
    clone.text = plan.text(node.text)
    clone.metadata = plan.metadata(node.metadata, KEPT_KEYS)
    return relinked(clone, ids, doc_id, name)


def copy_name(name: str, plan: CopyPlan, used: set[str]) -> str:
    """The copy's document name: renamed and shifted, numbered where that leaves it taken."""
    renamed = plan.text(name)
    if renamed in used:
        path = PurePath(renamed)
        renamed = f"{path.stem}-{plan.copy:05d}{path.suffix}"
    used.add(renamed)
    return renamed


def copies(
    documents: Sequence[SourceDocument], collection: str, min_chunks: int, seed: int = 0
) -> Iterator[Copied]:
    """The source documents, then copies 1, 2, ... until `min_chunks` chunks are yielded."""
    words = source_words(documents)
    used = {d.record.name for d in documents}
    total, copy = 0, 0
    while total < min_chunks:
        plan = CopyPlan.of(copy, words)
        rng = np.random.default_rng([seed, copy])
        for document in documents:
            name = document.record.name
            if copy:
                name = copy_name(name, plan, used)
            yield copy_document(document, plan, collection, rng, name)
            total += len(document.chunks)
            if total >= min_chunks:
                return
        copy += 1


def write_batch(stores: Stores, collection: str, batch: Sequence[Copied]) -> None:
    """Documents written as ingestion writes them (`pending`, then every store, then `ready`),
    each store called once per batch where its interface takes many documents."""
    docstore = stores.docstore
    for document in batch:
        docstore.put_document(document.record)
    docstore.put_chunks(collection, [c for d in batch for c in d.chunks])
    docstore.put_sentence_vectors(collection, {k: v for d in batch for k, v in d.sentences.items()})
    for document in batch:
        if document.card is not None:
            docstore.put_card(collection, document.record.doc_id, document.card)
        if document.tree is not None:
            docstore.put_tree(collection, document.record.doc_id, document.tree)
    vectors = np.concatenate([d.vectors for d in batch])
    stores.vectors.ensure_collection(collection, int(vectors.shape[1]))
    stores.vectors.insert(collection, vector_rows([c for d in batch for c in d.chunks], vectors))
    stores.vectors.pages.insert(
        collection,
        [
            row
            for d in batch
            for row in page_rows(d.record.doc_id, map(page_of, d.chunks), d.sentences)
        ],
    )
    for document in batch:
        stores.keywords.add_document(
            collection, document.record.doc_id, keyword_entries(document.chunks)
        )
        docstore.mark_ready(collection, document.record.doc_id)


def build_scaled_library(
    source: Stores, source_collection: str, target: Stores, collection: str, min_chunks: int
) -> BuildSummary:
    """Write the source and its copies into `target`'s `collection` up to `min_chunks` chunks."""
    started = time.perf_counter()
    documents = read_source(source, source_collection)
    model = source.docstore.get_tree(source_collection, RECORD_KEY)  # the embedder's record
    if model is not None:
        target.docstore.put_tree(collection, RECORD_KEY, model)
    summary = BuildSummary(renamable_words=len(source_words(documents)))
    batch: list[Copied] = []
    for copied in copies(documents, collection, min_chunks):
        batch.append(copied)
        summary.documents += 1
        summary.chunks += len(copied.chunks)
        if sum(len(d.chunks) for d in batch) >= BATCH_CHUNKS:
            write_batch(target, collection, batch)
            batch = []
    if batch:
        write_batch(target, collection, batch)
    summary.copies = -(-summary.documents // max(1, len(documents)))
    summary.seconds = time.perf_counter() - started
    return summary
