"""The steps that read a document: parse, chunk, describe figures, enrich, tree.

Each step's fingerprint holds the settings that shape its stored output, under the names the
document key has always used, so stored documents keep their ids.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from llama_index.core.schema import TextNode

from citerag.chunk.chunker import chunk_document
from citerag.enrich.card_llm import LLMCardReader
from citerag.enrich.cards import PAGES_READ, card_of, read_card
from citerag.enrich.figure_descriptions import FIGURE_DESCRIPTION, FigureDescriber, figure_nodes
from citerag.enrich.step import Enricher
from citerag.errors import InputError
from citerag.ingest.prefetch import ParsePrefetcher
from citerag.ingest.steps import DocumentRun, Fingerprint, IngestStep, MissingParse, Progress
from citerag.nodes import block_type_of, chunk_index_of
from citerag.parse.cache import load_cached
from citerag.parse.ocr import OcrOptions, PageProgress
from citerag.parse.scanned import unread_warning
from citerag.parse.select import parse_document
from citerag.settings import Settings
from citerag.tree.build import point_chunk_to_node
from citerag.tree.ingest_step import build_tree_logged
from citerag.tree.model import DocumentTree
from citerag.tree.summaries import Summarizer
from citerag.types import DocumentCard, ParsedDocument

log = logging.getLogger(__name__)
# Bump when the chunker or the stored node layout changes: documents are then ingested again.
# A new parse format bumps it only when born-digital pages' chunks change with it, so that
# stored documents keep their ids (and every measured ranking).
CHUNK_FORMAT = 5


def ocr_progress(progress: Progress | None) -> PageProgress | None:
    """Tells `progress` which page OCR is reading, inside the parse stage."""
    if progress is None:
        return None

    def tell(page: int, read: int, total: int) -> None:
        progress(f"parse: OCR page {page} ({min(read + 1, total)} of {total})")

    return tell


def parse_tier(settings: Settings) -> str:
    """The MinerU tier a parse is cached under ("" for other parsers)."""
    return settings.parse.mineru_tier if settings.parse.parser == "mineru" else ""


class ParseStep(IngestStep):
    """The PDF parsed (or its cached parse); a rerun reads only the cache."""

    name = "parse"

    def __init__(self, settings: Settings, prefetch: ParsePrefetcher | None = None) -> None:
        self._settings = settings
        self._prefetch = prefetch

    @classmethod
    def fingerprint(cls, settings: Settings) -> Fingerprint:
        shaping: Fingerprint = {
            "parser": settings.parse.parser,
            "mineru_tier": parse_tier(settings),
        }
        if settings.parse.ocr_pictures:  # parse.picture_text: pictures' words on text pages
            shaping["ocr_pictures"] = settings.parse.ocr_languages
        return shaping

    def run(self, document: DocumentRun) -> None:
        document.parsed = replace(self._parsed(document), doc_id=document.doc_id)

    def _parsed(self, document: DocumentRun) -> ParsedDocument:
        settings = self._settings
        if document.pdf is None:
            return self._cached(document.sha256)
        told = ocr_progress(document.progress)
        if self._prefetch is not None:
            self._prefetch.wait(document.pdf, told)
        parsed = parse_document(
            document.pdf,
            document.sha256,
            settings.parse.parser,
            settings.storage.parse_cache_dir,
            mineru_tier=settings.parse.mineru_tier,
            ocr=OcrOptions.of(settings.parse),
            progress=told,
        )
        if parsed.unread_pages:
            log.warning(
                unread_warning(parsed.name, parsed.unread_pages, settings.parse.ocr_languages)
            )
        return parsed

    def _cached(self, sha256: str) -> ParsedDocument:
        """The parse `parse_document` would find: MinerU's under its tier, else PyMuPDF's (what
        a MinerU ingest falls back to when MinerU cannot read the file)."""
        folder, parser = self._settings.storage.parse_cache_dir, self._settings.parse.parser
        tiers = [(parser, parse_tier(self._settings))] if parser != "pymupdf" else []
        for variant, tier in [*tiers, ("pymupdf", "")]:
            cached = load_cached(folder, sha256, variant, tier)
            if cached is not None:
                return cached
        raise MissingParse(f"{sha256}: no parse of it is in the cache")


class ChunkStep(IngestStep):
    name = "chunk"

    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    @classmethod
    def fingerprint(cls, settings: Settings) -> Fingerprint:
        return {
            "chunk_size": settings.ingest.chunk_size,
            "chunk_overlap": settings.ingest.chunk_overlap,
            "format": CHUNK_FORMAT,
        }

    def run(self, document: DocumentRun) -> None:
        settings = self._settings
        chunks = chunk_document(
            document.document, settings.ingest.chunk_size, settings.ingest.chunk_overlap
        )
        if not chunks:
            raise InputError(
                f"{document.name} contains no text to index; check that it is not blank."
            )
        document.chunks = chunks


class DescribeFiguresStep(IngestStep):
    """A node per figure a vision model described. Describing needs the PDF: a rerun keeps the
    description nodes the docstore holds."""

    name = "describe"

    def __init__(self, describer: Callable[[], FigureDescriber | None]) -> None:
        self._describer = describer  # called at the first fresh ingest (its log line then)

    @classmethod
    def fingerprint(cls, settings: Settings) -> Fingerprint:
        if settings.llm.vision_model and settings.llm.llm_provider:
            return {"vision_model": settings.llm.vision_model}
        return {}

    def run(self, document: DocumentRun) -> None:
        stored = document.stored
        if stored is not None:
            kept = [c for c in stored.chunks if block_type_of(c) == FIGURE_DESCRIPTION]
            document.chunks += sorted(kept, key=chunk_index_of)
            # Ids as `figure_descriptions` makes them: rows of descriptions the docstore lost.
            prefix = f"{document.doc_id[:16]}-fig-"
            lost = {i for i in stored.row_ids if i.startswith(prefix)} - {c.node_id for c in kept}
            if lost:
                document.note(
                    f"lost {len(lost)} figure descriptions (describing needs the PDF): their "
                    "Milvus rows are removed; ingest the file again to get them back"
                )
            return
        describer = self._describer()
        if describer is None or document.pdf is None:
            return
        first = len(document.chunks)
        document.chunks += figure_nodes(document.pdf, document.document, describer, first)[0]


class EnrichStep(IngestStep):
    """Chunk metadata (`metadata` setting) and the document's card; a rerun reads the card by
    rules only, and only when the record (which the card goes with) is lost."""

    name = "enrich"

    def __init__(self, enricher: Enricher, card_reader: Callable[[], LLMCardReader | None]) -> None:
        self._enricher = enricher
        self._card_reader = card_reader

    @classmethod
    def fingerprint(cls, settings: Settings) -> Fingerprint:
        return {"metadata": settings.ingest.metadata}

    def run(self, document: DocumentRun) -> None:
        self._enricher.enrich(document.chunks)
        if document.stored is None:
            document.card = self._card(document)
        elif document.stored.record is None and document.parsed is not None:
            pages = [page.text for page in document.parsed.pages[:PAGES_READ]]
            document.card = read_card(document.parsed.name, pages)

    def _card(self, document: DocumentRun) -> DocumentCard | None:
        if document.pdf is None:
            return None
        parsed = document.document
        card = card_of(document.pdf, parsed)
        reader = self._card_reader()
        if reader is None:
            return card
        first_pages = "\n\n".join(page.text for page in parsed.pages[:PAGES_READ])
        return reader.improve(card, document.pdf.name, first_pages)


class TreeStep(IngestStep):
    """The section tree, built from the PDF; a rerun relinks the chunks to the stored tree."""

    name = "tree"

    def __init__(self, summarizer: Callable[[], Summarizer | None]) -> None:
        self._summarizer = summarizer

    @classmethod
    def fingerprint(cls, settings: Settings) -> Fingerprint:
        return {}

    def run(self, document: DocumentRun) -> None:
        if document.stored is None:
            if document.pdf is not None:
                parsed, chunks = document.document, document.chunks
                document.tree = build_tree_logged(document.pdf, parsed, chunks, self._summarizer())
            return
        document.tree = document.stored.tree
        if document.tree is not None:
            relink_to_tree(DocumentTree.from_record(document.tree), document.chunks)
        else:
            log.warning(
                "%s: its section tree is lost too (building one needs the PDF): its chunks come "
                "back without section links; ingest the file again for `tree` mode",
                document.name,
            )


def relink_to_tree(tree: DocumentTree, chunks: Sequence[TextNode]) -> None:
    """Give chunks rebuilt from a parse the section links that ingest gave them."""
    by_id = {c.node_id: c for c in chunks}
    for node in tree.walk():
        for chunk_id in node.chunk_ids:
            chunk = by_id.get(chunk_id)
            if chunk is not None:
                point_chunk_to_node(tree, node, chunk)
