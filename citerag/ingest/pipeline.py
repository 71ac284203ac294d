"""Ingestion: validate → parse → chunk → enrich → embed → store, idempotent and all-or-nothing.

A document is keyed by the hash of its bytes and of the settings that shape its stored chunks
(parser, chunking, embedding model), so a change of those re-ingests it and the chunks of the
older version go once the new one is ready. It is written as `pending` and only marked `ready`
after the docstore, the vector index and the keyword index all hold it; any failure (or Ctrl-C)
removes what was written, so no half-ingested document is ever visible.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.schema import TextNode

from citerag.chunk.chunker import chunk_document
from citerag.embed.embedder import Embedder
from citerag.enrich.card_llm import CardCache, LLMCardReader
from citerag.enrich.cards import PAGES_READ, card_of
from citerag.enrich.figure_descriptions import FigureDescriber, describer_for, figure_nodes
from citerag.errors import InputError, RagError
from citerag.ingest.prefetch import ParsePrefetcher
from citerag.ingest.vectors import chunk_vectors, document_vectors, vector_rows
from citerag.ingest.writer import DocumentWriter
from citerag.llm.llm_chat import LLMChat
from citerag.parse.cache import load_cached
from citerag.parse.ocr import OcrOptions, PageProgress, missing_engine
from citerag.parse.scanned import unread_warning
from citerag.parse.select import parse_document
from citerag.parse.validate import PdfInfo, inspect_pdf
from citerag.retrieve.page_evidence import keyword_entries
from citerag.settings import Settings
from citerag.text.names import display_name
from citerag.tree.ingest_step import build_tree_logged, summarizer_for
from citerag.types import DocumentCard, DocumentRecord, ParsedDocument

log = logging.getLogger(__name__)
# Bump when the chunker or the stored node layout changes: documents are then ingested again.
# 3: chunks know their section-tree node; 4 and 5: parse.cache.PARSE_FORMAT 2 and 3.
# PARSE_FORMAT 4 (page labels, OCR) leaves it at 5: a born-digital page's chunks are the same
# text, boxes and vectors, so stored documents keep their ids (and every measured ranking);
# their page labels arrive when they are ingested again. Scanned files were refused before.
CHUNK_FORMAT = 5
Progress = Callable[[str], None]
CARDS = "card_cache"  # the LLM's card replies, under the storage folder
STAGES = ("parse", "chunk", "enrich", "tree", "embed", "store")  # what `ingest` tells `progress`


def ingest_key(file_sha256: str, settings: Settings) -> str:
    """The document's id: its bytes and every setting that shapes its stored chunks."""
    shaping = {
        "file": file_sha256,
        "parser": settings.parse.parser,
        "mineru_tier": settings.parse.mineru_tier if settings.parse.parser == "mineru" else "",
        "chunk_size": settings.ingest.chunk_size,
        "chunk_overlap": settings.ingest.chunk_overlap,
        "embedding_model": settings.embedding.embedding_model,
        # Float32 ONNX gives PyTorch's vectors; only int8 moves them (the packed graph's
        # per-column int8, embed.packed, since "int8-packed").
        **({"embedding_backend": "int8-packed"} if _int8(settings) else {}),
        **(
            {"sentence_vectors": "pooled"}
            if settings.embedding.sentence_vectors == "pooled"
            else {}
        ),
        "format": CHUNK_FORMAT,
        "metadata": settings.ingest.metadata,
    }
    if settings.parse.ocr_pictures:  # parse.picture_text: pictures' words on text pages
        shaping["ocr_pictures"] = settings.parse.ocr_languages
    if settings.llm.vision_model and settings.llm.llm_provider:  # enrich.figure_descriptions
        shaping["vision_model"] = settings.llm.vision_model
    return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()


def ocr_progress(progress: Progress | None) -> PageProgress | None:
    """Tells `progress` which page OCR is reading, inside the parse stage."""
    if progress is None:
        return None

    def tell(page: int, read: int, total: int) -> None:
        progress(f"parse: OCR page {page} ({min(read + 1, total)} of {total})")

    return tell


def _load_quietly(embedder: Embedder) -> None:
    try:
        embedder.load()
    except Exception as error:  # noqa: BLE001 (raised again where the model is first used)
        log.debug("loading the embedding model ahead failed: %s", error)


@contextmanager
def _readable_name(path: Path) -> Iterator[Path]:
    """`path`, or when its name is not one a document can take (`display_name` changes it) a
    link to it under the safe name in a temporary folder: the document takes that name, and
    every reader (PyMuPDF, MinerU, messages) gets a UTF-8 path. A copy where links fail."""
    name = display_name(path.name)
    if name == path.name or not path.is_file():
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="citerag-name-") as folder:
        alias = Path(folder) / name
        try:
            alias.symlink_to(path.absolute())
        except OSError:
            shutil.copyfile(path, alias)
        yield alias


def _int8(settings: Settings) -> bool:
    return settings.embedding.embedding_backend == "onnx-int8"


@dataclass
class IngestOutcome:
    name: str
    doc_id: str
    status: str  # "ingested", "skipped" (already there) or "repaired" (was inconsistent)
    pages: int
    chunks: int
    seconds: float
    same_as: str = ""  # skipped because these bytes are stored under this other name
    stages: dict[str, float] = field(default_factory=dict)  # seconds spent in each stage


class StageClock:
    """Tells `progress` each stage as it starts and keeps the seconds each one took."""

    def __init__(
        self, progress: Progress | None, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self._progress = progress
        self._clock = clock
        self._current = ""
        self._since = 0.0
        self.seconds: dict[str, float] = {}

    def __call__(self, stage: str) -> None:
        self._close()
        self._current, self._since = stage, self._clock()
        if self._progress is not None:
            self._progress(stage)

    def _close(self) -> None:
        if self._current:
            spent = self._clock() - self._since
            self.seconds[self._current] = self.seconds.get(self._current, 0.0) + spent
            self._current = ""

    def finish(self) -> dict[str, float]:
        self._close()
        return self.seconds


class Ingestor(DocumentWriter):
    @cached_property
    def _prefetch(self) -> ParsePrefetcher:
        return ParsePrefetcher(self._settings)

    @cached_property
    def _embedder_loader(self) -> threading.Thread | None:
        """The local model loads in a thread while the first file is parsed: both take seconds.
        A failure is left to the embed step, which meets it again and reports it in line."""
        if not isinstance(self._embedder, Embedder):
            return None
        thread = threading.Thread(
            target=_load_quietly, args=(self._embedder,), name="load-embedder", daemon=True
        )
        thread.start()
        return thread

    def prepare(self, path: Path) -> None:
        """Start parsing `path` in the background: the ingest that follows finds it parsed (a
        name that `ingest` reads through an alias is parsed there, in line)."""
        if display_name(path.name) == path.name:
            self._prefetch.start(path)

    def close(self) -> None:
        self._prefetch.close()

    @cached_property
    def _figures(self) -> FigureDescriber | None:
        """Set up at the first ingest that parses a file (its log line only then)."""
        return describer_for(self._settings)

    @cached_property
    def _card_reader(self) -> LLMCardReader | None:
        """With an LLM configured, cards are read by it too (cached under the storage folder)."""
        try:
            chat = LLMChat.from_settings(self._settings.llm)
        except RagError as error:
            log.warning("document cards are read by rules only: %s", error)
            return None
        if chat is None:
            return None
        return LLMCardReader(
            chat.chat, chat.model, CardCache(self._settings.storage.storage_dir / CARDS)
        )

    def _card(self, path: Path, parsed: ParsedDocument) -> DocumentCard:
        card = card_of(path, parsed)
        if self._card_reader is None:
            return card
        first_pages = "\n\n".join(page.text for page in parsed.pages[:PAGES_READ])
        return self._card_reader.improve(card, path.name, first_pages)

    def ingest(
        self, path: Path, collection: str, progress: Progress | None = None
    ) -> IngestOutcome:
        """Ingest `path` under its file name, made safe first (`display_name`: undecodable
        bytes and bidirectional controls replaced), read through an alias of that name."""
        with _readable_name(path) as named:
            return self._ingest(named, collection, progress)

    def _ingest(self, path: Path, collection: str, progress: Progress | None) -> IngestOutcome:
        started = time.perf_counter()
        step = StageClock(progress)
        info = inspect_pdf(path, self._settings.parse.ocr_languages)
        doc_id = ingest_key(info.sha256, self._settings)
        existing = self._docstore.get_document(collection, doc_id)
        status = "ingested"
        if existing is not None:
            unread = self._unread_before(info)
            if existing.status == "ready" and self._is_consistent(collection, doc_id):
                if not unread:
                    stored = self._docstore.count_chunks(collection, doc_id)
                    same_as = existing.name if existing.name != path.name else ""
                    return IngestOutcome(
                        path.name, doc_id, "skipped", existing.pages, stored, 0.0, same_as
                    )
                log.info("%s: its scanned pages can now be read; ingesting it again", path.name)
                status = "replaced"
            else:
                log.warning(
                    "%s was stored incompletely; removing it and ingesting again", path.name
                )
                status = "repaired"
            self.remove(collection, doc_id)
        step("parse")
        _ = self._embedder_loader
        self._prefetch.wait(path, ocr_progress(progress))
        parsed = parse_document(
            path,
            info.sha256,
            self._settings.parse.parser,
            self._settings.storage.parse_cache_dir,
            mineru_tier=self._settings.parse.mineru_tier,
            ocr=OcrOptions.of(self._settings.parse),
            progress=ocr_progress(progress),
        )
        if parsed.unread_pages:
            languages = self._settings.parse.ocr_languages
            log.warning(unread_warning(path.name, parsed.unread_pages, languages))
        parsed = replace(parsed, doc_id=doc_id)
        step("chunk")
        chunks = chunk_document(
            parsed, self._settings.ingest.chunk_size, self._settings.ingest.chunk_overlap
        )
        if not chunks:
            raise InputError(f"{path.name} contains no text to index; check that it is not blank.")
        step("enrich")
        if self._figures is not None:  # a vision model is configured
            chunks += figure_nodes(path, parsed, self._figures, len(chunks))[0]
        self._enricher.enrich(chunks)
        card = self._card(path, parsed)
        step("tree")
        tree = build_tree_logged(path, parsed, chunks, summarizer_for(self._settings))
        step("embed")
        sentences, heads = document_vectors(
            self._embedder, chunks, parsed, self._settings.embedding.sentence_vectors
        )
        vectors = chunk_vectors(self._embedder, chunks, sentences)
        sentences.update(heads)
        step("store")
        self._store(collection, parsed, chunks, vectors, sentences, tree, card)
        replaced = self._remove_older_versions(collection, path.name, doc_id)
        seconds = time.perf_counter() - started
        if replaced and status == "ingested":
            status = "replaced"
        return IngestOutcome(
            path.name, doc_id, status, len(parsed.pages), len(chunks), seconds, "", step.finish()
        )

    def _unread_before(self, info: PdfInfo) -> bool:
        """Whether the stored parse left scanned pages unread that an engine here now reads
        (the document's id is the same: its bytes and settings did not change)."""
        if not info.scanned_pages or self._settings.parse.parser != "pymupdf":
            return False
        if missing_engine(self._settings.parse.ocr_languages) is not None:
            return False
        cached = load_cached(self._settings.storage.parse_cache_dir, info.sha256, "pymupdf")
        return cached is not None and bool(cached.unread_pages)

    def _remove_older_versions(self, collection: str, name: str, doc_id: str) -> bool:
        """Drop documents of the same name stored under other settings (or older bytes)."""
        older = [r for r in self._docstore.find_by_name(collection, name) if r.doc_id != doc_id]
        for record in older:
            log.info("%s: removing the version stored under other settings", name)
            self.remove(collection, record.doc_id)
        return bool(older)

    def remove(self, collection: str, doc_id: str) -> None:
        """Delete a document everywhere (`Stores.remove_document`)."""
        self._stores.remove_document(collection, doc_id)

    def _is_consistent(self, collection: str, doc_id: str) -> bool:
        return self._stores.is_whole(collection, doc_id)

    def _store(
        self,
        collection: str,
        parsed: ParsedDocument,
        chunks: list[TextNode],
        chunk_vectors: np.ndarray,
        sentence_vectors: dict[str, np.ndarray],
        tree: dict[str, Any] | None = None,
        card: DocumentCard | None = None,
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
            if tree is not None:
                self._docstore.put_tree(collection, parsed.doc_id, tree)
            if card is not None:
                self._docstore.put_card(collection, parsed.doc_id, card.to_dict())
            self._vectors.ensure_collection(collection, chunk_vectors.shape[1])
            self._vectors.insert(collection, vector_rows(chunks, chunk_vectors))
            self._keywords.add_document(collection, parsed.doc_id, keyword_entries(chunks))
            self._docstore.mark_ready(collection, parsed.doc_id)
        except BaseException:
            log.error("ingesting %s failed; removing what was written", parsed.name)
            self.remove(collection, parsed.doc_id)
            raise
