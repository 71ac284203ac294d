"""The steps that write a document: embed, then store.

On a fresh ingest every vector is computed and the document is written whole: `pending` first,
`ready` once the docstore, the vector index and the keyword index all hold it, and removed again
when anything fails. A rerun computes only the vectors the docstore lost and writes only what
the stores lack (and deletes index rows of no chunk); the repairer rebuilds its keyword entries.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from llama_index.core.schema import TextNode

from citerag.embed.embedder import Embedder
from citerag.ingest.page_rows import write_page_rows
from citerag.ingest.steps import DocumentRun, Fingerprint, IngestStep, StoredDocument
from citerag.ingest.vectors import (
    chunk_vectors,
    document_vectors,
    page_head_vectors,
    sentence_vectors,
    vector_rows,
)
from citerag.nodes import doc_id_of, doc_name_of, page_of, page_vector_key
from citerag.retrieve.page_evidence import keyword_entries
from citerag.settings import Settings
from citerag.store.base import Stores
from citerag.types import DocumentRecord, ParsedDocument

log = logging.getLogger(__name__)


class EmbedStep(IngestStep):
    """Sentence vectors of every chunk, page heads, and the vectors of the index rows."""

    name = "embed"

    def __init__(self, settings: Settings, embedder: Embedder) -> None:
        self._settings = settings
        self._embedder = embedder

    @classmethod
    def fingerprint(cls, settings: Settings) -> Fingerprint:
        shaping: Fingerprint = {"embedding_model": settings.embedding.embedding_model}
        # Float32 ONNX gives PyTorch's vectors; only int8 moves them (the packed graph's
        # per-column int8, embed.packed).
        if settings.embedding.embedding_backend == "onnx-int8":
            shaping["embedding_backend"] = "int8-packed"
        if settings.embedding.sentence_vectors == "pooled":
            shaping["sentence_vectors"] = "pooled"
        return shaping

    def run(self, document: DocumentRun) -> None:
        if document.stored is None:
            self._embed_all(document)
        else:
            self._embed_lost(document, document.stored)
        if document.rows:
            document.row_vectors = chunk_vectors(self._embedder, document.rows, document.sentences)

    def _embed_all(self, document: DocumentRun) -> None:
        mode = self._settings.embedding.sentence_vectors
        sentences, heads = document_vectors(
            self._embedder, document.chunks, document.document, mode
        )
        document.sentences, document.heads = sentences, heads
        document.unstored = set(sentences) | set(heads)
        document.rows = list(document.chunks)

    def _embed_lost(self, document: DocumentRun, stored: StoredDocument) -> None:
        mode = self._settings.embedding.sentence_vectors
        kept = stored.sentence_vectors([c.node_id for c in document.chunks])
        lost = [c for c in document.chunks if c.node_id not in kept]
        embedded = sentence_vectors(self._embedder, lost, mode) if lost else {}
        if embedded:
            document.note(f"embedded the sentences of {len(lost)} chunks again")
        document.sentences = {**kept, **embedded}
        document.unstored = set(embedded)
        if document.parsed is not None:
            keys = page_head_keys(document.parsed)
            if len(stored.sentence_vectors(keys)) != len(keys):
                document.heads = page_head_vectors(self._embedder, document.parsed, mode)
                document.unstored |= set(document.heads)
                document.note("embedded the page heads again")
        document.rows = [c for c in document.chunks if c.node_id not in stored.row_ids]


class StoreStep(IngestStep):
    """The document written to the docstore, the vector index and the keyword index."""

    name = "store"

    def __init__(self, settings: Settings, stores: Stores) -> None:
        self._settings = settings
        self._stores = stores

    @classmethod
    def fingerprint(cls, settings: Settings) -> Fingerprint:
        return {}

    def run(self, document: DocumentRun) -> None:
        if document.stored is None:
            self._write_whole(document)
        else:
            self._write_differences(document, document.stored)

    def _write_whole(self, document: DocumentRun) -> None:
        docstore, parsed = self._stores.docstore, document.document
        record = DocumentRecord(
            doc_id=document.doc_id,
            name=parsed.name,
            collection=document.collection,
            pages=len(parsed.pages),
            parser=parsed.parser,
            status="pending",
            created_at=time.time(),
        )
        collection = document.collection
        try:
            docstore.put_document(record)
            docstore.put_chunks(collection, document.chunks)
            docstore.put_sentence_vectors(collection, {**document.sentences, **document.heads})
            if document.tree is not None:
                docstore.put_tree(collection, document.doc_id, document.tree)
            if document.card is not None:
                docstore.put_card(collection, document.doc_id, document.card.to_dict())
            self._write_rows(document)
            pages = (page_of(c) for c in document.chunks)
            write_page_rows(self._stores, collection, document.doc_id, pages, document.heads)
            keywords = keyword_entries(document.chunks)
            self._stores.keywords.add_document(collection, document.doc_id, keywords)
            docstore.mark_ready(collection, document.doc_id)
        except BaseException:
            log.error("ingesting %s failed; removing what was written", parsed.name)
            self._stores.remove_document(collection, document.doc_id)
            raise

    def _write_differences(self, document: DocumentRun, stored: StoredDocument) -> None:
        docstore, collection = self._stores.docstore, document.collection
        have = {c.node_id for c in stored.chunks}
        missing = [c for c in document.chunks if c.node_id not in have]
        if missing:
            docstore.put_chunks(collection, missing)
            document.note(f"restored {len(missing)} docstore chunks from the parse cache")
        vectors = {**document.sentences, **document.heads}
        if document.unstored:
            docstore.put_sentence_vectors(collection, {k: vectors[k] for k in document.unstored})
        if stored.record is None:
            record = _ready_record(collection, document.chunks, document.parsed, self._settings)
            docstore.put_document(record)
            document.note("restored the document record")
            if document.card is not None:  # the card went with the record
                docstore.put_card(collection, record.doc_id, document.card.to_dict())
        orphans = sorted(stored.row_ids - {c.node_id for c in document.chunks})
        if orphans:
            self._stores.vectors.delete_ids(collection, orphans)
            document.note(f"deleted {len(orphans)} Milvus rows of no chunk")
        if document.rows:
            self._write_rows(document)
            document.note(f"restored {len(document.rows)} Milvus rows from the docstore")
        self._write_lost_pages(document)

    def _write_lost_pages(self, document: DocumentRun) -> None:
        """The page rows again where the vector index has none of the document's (or its page
        heads were embedded again): from the heads just made, the others from the docstore."""
        collection, doc_id = document.collection, document.doc_id
        if not document.heads and self._stores.vectors.pages.count(collection, doc_id):
            return
        stored = self._stores.docstore.get_sentence_vectors(
            collection, [page_vector_key(doc_id, p) for p in {page_of(c) for c in document.chunks}]
        )
        pages = (page_of(c) for c in document.chunks)
        written = write_page_rows(
            self._stores, collection, doc_id, pages, {**stored, **document.heads}
        )
        if written:
            document.note(f"wrote the page rows of {written} pages")

    def _write_rows(self, document: DocumentRun) -> None:
        vectors = document.row_vectors
        if vectors is None:
            return
        self._stores.vectors.ensure_collection(document.collection, int(vectors.shape[1]))
        self._stores.vectors.insert(document.collection, vector_rows(document.rows, vectors))


def page_head_keys(parsed: ParsedDocument) -> list[str]:
    return [page_vector_key(parsed.doc_id, p.number) for p in parsed.pages if p.text.strip()]


def _ready_record(
    collection: str, chunks: Sequence[TextNode], parsed: ParsedDocument | None, settings: Settings
) -> DocumentRecord:
    first = chunks[0]
    return DocumentRecord(
        doc_id=doc_id_of(first),
        name=parsed.name if parsed else doc_name_of(first),
        collection=collection,
        pages=len(parsed.pages) if parsed else max(page_of(c) for c in chunks),
        parser=parsed.parser if parsed else settings.parse.parser,
        status="ready",
        created_at=time.time(),
    )
