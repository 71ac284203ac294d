"""Ingestion: validate, then the declared steps (`STEP_TYPES`), idempotent and all-or-nothing.

A document is keyed by the hash of its bytes and of the steps' fingerprints (the settings that
shape its stored chunks: parser, chunking, figure descriptions, enrichment, embedding model), so
a change of those re-ingests it and the chunks of the older version go once the new one is
ready. It is written as `pending` and only marked `ready` after the docstore, the vector index
and the keyword index all hold it; any failure (or Ctrl-C) removes what was written, so no
half-ingested document is ever visible. Split-brain repair reruns the same steps
(`ingest.repair`).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Literal

from citerag.embed.embedder import Embedder
from citerag.enrich.card_llm import CardCache, LLMCardReader
from citerag.enrich.figure_descriptions import FigureDescriber, describer_for
from citerag.enrich.step import Enricher
from citerag.errors import RagError
from citerag.ingest.prefetch import ParsePrefetcher
from citerag.ingest.reading_steps import (
    ChunkStep,
    DescribeFiguresStep,
    EnrichStep,
    ParseStep,
    TreeStep,
)
from citerag.ingest.steps import DocumentRun, IngestStep, IngestSteps, Progress, document_key
from citerag.ingest.writing_steps import EmbedStep, StoreStep
from citerag.llm.llm_chat import LLMChat
from citerag.parse.cache import load_cached
from citerag.parse.ocr import missing_engine
from citerag.parse.validate import PdfInfo, inspect_pdf
from citerag.settings import Settings
from citerag.store.base import Stores
from citerag.text.names import display_name
from citerag.tree.ingest_step import summarizer_for

log = logging.getLogger(__name__)
CARDS = "card_cache"  # the LLM's card replies, under the storage folder
# The declared steps, in the order they run. A document's key hashes their fingerprints.
STEP_TYPES: tuple[type[IngestStep], ...] = (
    ParseStep,
    ChunkStep,
    DescribeFiguresStep,
    EnrichStep,
    TreeStep,
    EmbedStep,
    StoreStep,
)
STAGES = tuple(step.name for step in STEP_TYPES)  # what `ingest` tells `progress`
# "ingested": stored anew; "skipped": already stored whole; "replaced": an older version (other
# bytes or settings, or scanned pages now readable) made way for it; "repaired": it was stored
# incompletely and is stored again.
IngestStatus = Literal["ingested", "skipped", "replaced", "repaired"]


def ingest_key(file_sha256: str, settings: Settings) -> str:
    """The document's id: its bytes and every setting that shapes its stored chunks."""
    return document_key(file_sha256, (step.fingerprint(settings) for step in STEP_TYPES))


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


@dataclass
class IngestOutcome:
    name: str
    doc_id: str
    status: IngestStatus
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


class Ingestor:
    """Ingests PDFs into collections with `STEP_TYPES`, built from these parts (the "none"
    enricher when not given)."""

    def __init__(
        self,
        settings: Settings,
        stores: Stores,
        embedder: Embedder,
        enricher: Enricher | None = None,
    ) -> None:
        self._settings = settings
        self._stores = stores
        self._docstore = stores.docstore
        self._embedder = embedder
        self._enricher = enricher or Enricher("none")

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

    @cached_property
    def steps(self) -> IngestSteps:
        """`STEP_TYPES` built with this ingestor's parts; what needs an LLM is set up only
        when a fresh ingest first asks for it (split-brain repair reruns these steps too)."""
        settings = self._settings
        steps = IngestSteps(
            settings,
            [
                ParseStep(settings, self._prefetch),
                ChunkStep(settings),
                DescribeFiguresStep(lambda: self._figures),
                EnrichStep(self._enricher, lambda: self._card_reader),
                TreeStep(lambda: summarizer_for(settings)),
                EmbedStep(settings, self._embedder),
                StoreStep(settings, self._stores),
            ],
        )
        assert tuple(type(step) for step in steps.steps) == STEP_TYPES
        return steps

    def ingest(
        self, path: Path, collection: str, progress: Progress | None = None
    ) -> IngestOutcome:
        """Ingest `path` under its file name, made safe first (`display_name`: undecodable
        bytes and bidirectional controls replaced), read through an alias of that name."""
        with _readable_name(path) as named:
            return self._ingest(named, collection, progress)

    def _ingest(self, path: Path, collection: str, progress: Progress | None) -> IngestOutcome:
        started = time.perf_counter()
        clock = StageClock(progress)
        info = inspect_pdf(path, self._settings.parse.ocr_languages)
        doc_id = self.steps.key(info.sha256)
        existing = self._docstore.get_document(collection, doc_id)
        status: IngestStatus = "ingested"
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
        _ = self._embedder_loader
        run = DocumentRun(collection, path.name, info.sha256, doc_id, pdf=path, progress=progress)
        self.steps.run(run, clock)
        replaced = self._remove_older_versions(collection, path.name, doc_id)
        seconds = time.perf_counter() - started
        if replaced and status == "ingested":
            status = "replaced"
        pages = len(run.document.pages)
        return IngestOutcome(
            path.name, doc_id, status, pages, len(run.chunks), seconds, "", clock.finish()
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
