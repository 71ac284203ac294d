"""Ingestion: validate → parse → chunk → embed → store, idempotent and all-or-nothing.

A document is keyed by the hash of its bytes. It is written as `pending` and only marked
`ready` after the docstore, the vector index and the keyword index all hold it; any failure
(or Ctrl-C) removes what was written, so no half-ingested document is ever visible.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from citerag.chunk.chunker import chunk_document
from citerag.embed.embedder import Embedder
from citerag.errors import InputError
from citerag.parse.select import parse_document
from citerag.parse.validate import inspect_pdf
from citerag.retrieve.collection_state import rebuild_bm25
from citerag.settings import Settings
from citerag.store.base import DocStore, VectorIndex, VectorRow
from citerag.types import Chunk, DocumentRecord, ParsedDocument

log = logging.getLogger(__name__)
PREVIEW_CHARS = 240
Progress = Callable[[str], None]


@dataclass
class IngestOutcome:
    name: str
    doc_id: str
    status: str  # "ingested", "skipped" (already there) or "repaired" (was inconsistent)
    pages: int
    chunks: int
    seconds: float


class Ingestor:
    def __init__(
        self,
        settings: Settings,
        docstore: DocStore,
        vectors: VectorIndex,
        embedder: Embedder,
        bm25_dir: Callable[[str], Path],
    ) -> None:
        self._settings = settings
        self._docstore = docstore
        self._vectors = vectors
        self._embedder = embedder
        self._bm25_dir = bm25_dir

    def ingest(
        self, path: Path, collection: str, progress: Progress | None = None
    ) -> IngestOutcome:
        started = time.perf_counter()
        step = progress or (lambda _message: None)
        info = inspect_pdf(path)
        existing = self._docstore.get_document(collection, info.sha256)
        status = "ingested"
        if existing is not None:
            if existing.status == "ready" and self._is_consistent(collection, info.sha256):
                stored = self._docstore.count_chunks(collection, info.sha256)
                return IngestOutcome(path.name, info.sha256, "skipped", existing.pages, stored, 0.0)
            log.warning("%s was stored incompletely; removing it and ingesting again", path.name)
            self.remove(collection, info.sha256)
            status = "repaired"
        step("parse")
        parsed = parse_document(
            path,
            info.sha256,
            self._settings.parser,
            self._settings.parse_cache_dir,
            mineru_tier=self._settings.mineru_tier,
        )
        step("chunk")
        chunks = chunk_document(parsed, self._settings.chunk_size, self._settings.chunk_overlap)
        if not chunks:
            raise InputError(f"{path.name} contains no text to index; check that it is not blank.")
        step("embed")
        sentence_vectors = self._sentence_vectors(chunks)
        chunk_vectors = _chunk_vectors(chunks, sentence_vectors)
        step("store")
        self._store(collection, parsed, chunks, chunk_vectors, sentence_vectors)
        seconds = time.perf_counter() - started
        return IngestOutcome(
            path.name, info.sha256, status, len(parsed.pages), len(chunks), seconds
        )

    def remove(self, collection: str, doc_id: str) -> None:
        """Delete a document everywhere and bring the keyword index back in line."""
        self._vectors.delete_document(collection, doc_id)
        self._docstore.delete_document(collection, doc_id)
        rebuild_bm25(self._docstore.ready_chunks(collection), self._bm25_dir(collection))

    def _is_consistent(self, collection: str, doc_id: str) -> bool:
        in_docstore = self._docstore.count_chunks(collection, doc_id)
        in_vectors = (
            self._vectors.count(collection, doc_id)
            if self._vectors.has_collection(collection)
            else 0
        )
        return in_docstore > 0 and in_docstore == in_vectors

    def _sentence_vectors(self, chunks: Sequence[Chunk]) -> dict[str, np.ndarray]:
        """Embed each distinct sentence once, even where overlapping chunks share it."""
        keys: dict[tuple[int, int, int], int] = {}
        texts: list[str] = []
        for chunk in chunks:
            for a, b in chunk.sentences:
                key = (chunk.page, chunk.start + a, chunk.start + b)
                if key not in keys:
                    keys[key] = len(texts)
                    texts.append(chunk.text[a:b])
        vectors = self._embedder.embed(texts)
        result = {}
        for chunk in chunks:
            rows = [
                keys[(chunk.page, chunk.start + a, chunk.start + b)] for a, b in chunk.sentences
            ]
            result[chunk.id] = (
                vectors[rows] if rows else np.zeros((0, vectors.shape[1]), np.float32)
            )
        return result

    def _store(
        self,
        collection: str,
        parsed: ParsedDocument,
        chunks: list[Chunk],
        chunk_vectors: np.ndarray,
        sentence_vectors: dict[str, np.ndarray],
    ) -> None:
        record = DocumentRecord(
            doc_id=parsed.doc_id,
            name=parsed.name,
            collection=collection,
            pages=len(parsed.pages),
            parser=parsed.parser,
            status="pending",
            created_at=time.time(),
        )
        try:
            self._docstore.put_document(record)
            self._docstore.put_chunks(collection, chunks)
            self._docstore.put_sentence_vectors(collection, sentence_vectors)
            self._vectors.ensure_collection(collection, chunk_vectors.shape[1])
            self._vectors.insert(collection, _vector_rows(chunks, chunk_vectors))
            ready = self._docstore.ready_chunks(collection) + chunks
            rebuild_bm25(ready, self._bm25_dir(collection))
            self._docstore.mark_ready(collection, parsed.doc_id)
        except BaseException:
            log.error("ingesting %s failed; removing what was written", parsed.name)
            self.remove(collection, parsed.doc_id)
            raise


def _chunk_vectors(chunks: Sequence[Chunk], sentence_vectors: dict[str, np.ndarray]) -> np.ndarray:
    """The normalized mean of a chunk's sentence vectors.

    MiniLM reads 256 word pieces at most, so embedding a 512-token chunk whole would drop its
    tail; the sentence mean covers all of it, costs no second model pass, and matched embedding
    sentence-aligned windows on the Paul Graham questions (docs/RETRIEVAL.md).
    """
    means = np.stack([sentence_vectors[c.id].mean(axis=0) for c in chunks]).astype(np.float32)
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    return np.divide(means, norms, out=np.zeros_like(means), where=norms > 0)


def _vector_rows(chunks: Sequence[Chunk], vectors: np.ndarray) -> list[VectorRow]:
    return [
        VectorRow(
            chunk_id=chunk.id,
            vector=vector,
            doc_id=chunk.doc_id,
            doc_name=chunk.doc_name,
            page=chunk.page,
            node_type=chunk.block_type,
            section=chunk.section,
            label=chunk.label,
            preview=chunk.text[:PREVIEW_CHARS],
        )
        for chunk, vector in zip(chunks, vectors, strict=True)
    ]
