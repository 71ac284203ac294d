"""What retrieval keeps in memory of one ready document, loaded without its chunks' text.

Per chunk: its place (document, page, section, block type, label and enrichment lists, shared
strings). Per page: its key, the ids of its chunks, whether it is one of the domain's key pages
(a filing's financial statements: `citerag.domain`), and its head vector. A key page needs its
first lines, so only the first chunk of each page that
holds a table is read (and, for the rare first chunk with fewer lines than the title search
needs, that page's other chunks).
"""

from __future__ import annotations

import logging
import sys
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from citerag.domain import GENERIC, LINES_SEARCHED, DomainVocabulary
from citerag.enrich.cards import PAGES_READ, read_card
from citerag.enrich.fields import LIST_FIELDS
from citerag.nodes import BLOCK_TYPE, DOC_ID, DOC_NAME, LABEL, PAGE, PAGE_LABEL, SECTION
from citerag.retrieve.page_evidence import PageKey, merged_text
from citerag.store.base import ChunkMetadata, DocStore
from citerag.types import DocumentCard

log = logging.getLogger(__name__)
PLACE_KEYS = (DOC_ID, DOC_NAME, PAGE, SECTION, BLOCK_TYPE, LABEL)
# What filters and rankings read of a chunk: PLACE_KEYS and LIST_FIELDS, the values as the
# docstore's chunk metadata holds them (a str id, an int page, tuples of list-field values).
Place = dict[str, Any]
_NOTHING: tuple[str, ...] = ()


@dataclass(frozen=True)
class DocState:
    doc_id: str
    version: float  # the record's created_at: a document ingested again is loaded again
    places: dict[str, Place]  # chunk id -> place, in chunk order
    pages: tuple[PageKey, ...]  # in order of first appearance
    chunk_ids: dict[PageKey, list[str]]
    statement_ids: frozenset[str]
    vectors: np.ndarray | None  # one normalized head vector per page, None when any is missing
    card: DocumentCard = DocumentCard()  # what the document is (citerag.enrich.cards)
    statement_kinds: Mapping[str, str] = field(default_factory=dict)  # key page id -> its kind


def load_doc_state(
    docstore: DocStore,
    collection: str,
    doc_id: str,
    version: float,
    vocabulary: DomainVocabulary = GENERIC,
    card: DocumentCard | None = None,
) -> DocState:
    """The document's state; its key pages are those `vocabulary` knows by their title. A
    document stored before cards were made gets its card read from its first pages now."""
    chunks = docstore.chunk_metadata(collection, doc_id, (*PLACE_KEYS, PAGE_LABEL, *LIST_FIELDS))
    places = {c.chunk_id: _place(c) for c in chunks}
    chunk_ids: dict[PageKey, list[str]] = defaultdict(list)
    first: dict[PageKey, ChunkMetadata] = {}
    with_tables: set[PageKey] = set()
    for chunk in chunks:
        key = PageKey(doc_id, int(chunk.metadata.get(PAGE, 0)))
        chunk_ids[key].append(chunk.chunk_id)
        if key not in first or chunk.start < first[key].start:
            first[key] = chunk
        if chunk.metadata.get(BLOCK_TYPE) == "table":
            with_tables.add(key)
    pages = tuple(chunk_ids)
    kinds = _statement_pages(docstore, collection, with_tables, first, chunk_ids, vocabulary)
    vectors = _head_vectors(docstore, collection, pages)
    if card is None:
        card = _card_from_chunks(docstore, collection, places, chunk_ids)
    statements = frozenset(kinds)
    return DocState(
        doc_id, version, places, pages, dict(chunk_ids), statements, vectors, card, kinds
    )


def _card_from_chunks(
    docstore: DocStore,
    collection: str,
    places: dict[str, Place],
    chunk_ids: dict[PageKey, list[str]],
) -> DocumentCard:
    first_pages = sorted(chunk_ids, key=lambda key: key.page)[:PAGES_READ]
    texts = [merged_text(docstore.get_chunks(collection, chunk_ids[key])) for key in first_pages]
    name = str(next(iter(places.values()), {}).get(DOC_NAME, ""))
    return read_card(name, texts)


def _place(chunk: ChunkMetadata) -> Place:
    """What filters read of a chunk; repeated strings are shared and empty lists are one tuple,
    since a collection holds a place per chunk."""
    held = chunk.metadata
    place = {k: _shared(held.get(k)) for k in PLACE_KEYS}
    place.update({k: tuple(held[k]) if held.get(k) else _NOTHING for k in LIST_FIELDS})
    if held.get(PAGE_LABEL):  # only where the document prints its own page numbers
        place[PAGE_LABEL] = _shared(held[PAGE_LABEL])
    return place


def _shared(value: object) -> object:
    return sys.intern(value) if isinstance(value, str) else value


def _statement_pages(
    docstore: DocStore,
    collection: str,
    with_tables: set[PageKey],
    first: dict[PageKey, ChunkMetadata],
    chunk_ids: dict[PageKey, list[str]],
    vocabulary: DomainVocabulary,
) -> dict[str, str]:
    """The document's key pages, each with the kind its title names ("" when none)."""
    keys = [key for key in chunk_ids if key in with_tables and vocabulary.key_page_titles]
    if not keys:
        return {}
    heads = docstore.get_chunks(collection, [first[key].chunk_id for key in keys])
    head_text = {node.node_id: node.text for node in heads}
    found: dict[str, str] = {}
    short = []
    for key in keys:
        text = head_text.get(first[key].chunk_id, "")
        if sum(1 for line in text.splitlines() if line.strip()) < LINES_SEARCHED:
            short.append(key)
        elif vocabulary.is_key_page(text):
            found[key.id] = vocabulary.key_page_kind(text)
    for key in short:  # the title search reads past the first chunk
        text = merged_text(docstore.get_chunks(collection, chunk_ids[key]))
        if vocabulary.is_key_page(text):
            found[key.id] = vocabulary.key_page_kind(text)
    return found


def _head_vectors(
    docstore: DocStore, collection: str, pages: tuple[PageKey, ...]
) -> np.ndarray | None:
    stored = docstore.get_sentence_vectors(collection, [key.id for key in pages])
    if pages and len(stored) == len(pages):
        return np.stack([stored[key.id][0] for key in pages]).astype(np.float32)
    if stored:
        log.warning("%s: %d of %d pages have head vectors", collection, len(stored), len(pages))
    return None
