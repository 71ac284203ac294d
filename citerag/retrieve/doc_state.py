"""What retrieval keeps in memory of one ready document, loaded without its chunks' text.

Per chunk: its place (document, page, section, block type, label, page label), held as columns
(`doc_places`). Per page: its number, whether it is one of the domain's key pages
(a filing's financial statements: `citerag.domain`); its head vector stays in the docstore and
the vector index's page collection. A key page needs its first lines, so only the first chunk
of each page that holds a table is read (and, for the rare first chunk with fewer lines than
the title search needs, that page's other chunks).

A chunk's enrichment lists stay in the docstore's value table (`DocStore.chunks_carrying`,
`values_carried`); per document, only the distinct topics it names, as written (a question
names a topic by its value part, which the value table does not index:
`CollectionState.known_values`).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import cast

from citerag.domain import GENERIC, LINES_SEARCHED, DomainVocabulary
from citerag.enrich.cards import PAGES_READ, read_card
from citerag.enrich.fields import TOPICS
from citerag.nodes import BLOCK_TYPE, PAGE, PAGE_LABEL
from citerag.retrieve.doc_places import DocPages, DocPlaces, PageChunks, PlacesBuilder
from citerag.retrieve.page_evidence import PageKey, merged_text
from citerag.retrieve.place import PLACE_KEYS, Place, place_texts, shared_text
from citerag.store.base import ChunkMetadata, DocStore
from citerag.types import DocumentCard

log = logging.getLogger(__name__)
# The list fields whose distinct values a document's state keeps: topics, which LangExtract
# writes a few of per document. Entity names grow with every document, so a question's
# mentions of them are looked up in the docstore instead.
COUNTED_FIELDS = (TOPICS,)


@dataclass(frozen=True)
class DocState:
    doc_id: str
    version: float  # the record's created_at: a document ingested again is loaded again
    places: Mapping[str, Place]  # chunk id -> place, in chunk order (`DocPlaces`)
    pages: Sequence[PageKey]  # in order of first appearance (`DocPages`)
    chunk_ids: Mapping[PageKey, list[str]]  # each page's, in chunk order (`PageChunks`)
    statement_ids: frozenset[str]
    card: DocumentCard = DocumentCard()  # what the document is (citerag.enrich.cards)
    statement_kinds: Mapping[str, str] = field(default_factory=dict)  # key page id -> its kind
    page_count: int = 0  # the record's pages (the file's, chunks or not)
    # COUNTED_FIELDS -> the distinct values the document's chunks carry, as written
    values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.pages, DocPages):  # page keys given one by one (a test's)
            object.__setattr__(self, "pages", DocPages.of(self.doc_id, self.pages))

    def page_row(self, page_id: str) -> int | None:
        """The row in `pages` of the page whose id is `page_id` (None: not this document's)."""
        return cast(DocPages, self.pages).row_of(page_id)

    def page_ids(self) -> Iterator[str]:
        """The ids of the document's pages, in the order of `pages`."""
        return cast(DocPages, self.pages).ids()

    @cached_property
    def chunks_by_prefix(self) -> bool:
        """Whether every chunk id starts with the document id's first 16 characters and a "-"
        (the chunker's ids and the figure descriptions'), readable back from the chunk id
        (`citerag.retrieve.doc_index`), so a chunk is found through its document."""
        prefix = self.doc_id[:16] + "-"
        readable = len(self.doc_id) >= 16 or "-" not in self.doc_id
        # Columns hold the chunker's ids as numbers after that prefix: only the others are read.
        ids = self.places.others if isinstance(self.places, DocPlaces) else self.places
        return readable and all(chunk_id.startswith(prefix) for chunk_id in ids)


def load_doc_state(
    docstore: DocStore,
    collection: str,
    doc_id: str,
    version: float,
    vocabulary: DomainVocabulary = GENERIC,
    card: DocumentCard | None = None,
    page_count: int = 0,
) -> DocState:
    """The document's state; its key pages are those `vocabulary` knows by their title. A
    document stored before cards were made gets its card read from its first pages now."""
    chunks = docstore.chunk_metadata(collection, doc_id, (*PLACE_KEYS, PAGE_LABEL, *COUNTED_FIELDS))
    built = PlacesBuilder(doc_id)
    chunk_ids: dict[PageKey, list[str]] = defaultdict(list)
    first: dict[PageKey, ChunkMetadata] = {}
    with_tables: set[PageKey] = set()
    values: dict[str, dict[str, None]] = {name: {} for name in COUNTED_FIELDS}
    for chunk in chunks:
        held = chunk.metadata
        key = built.add(chunk.chunk_id, int(held.get(PAGE, 0)), place_texts(held))
        for name in COUNTED_FIELDS:
            for value in held.get(name) or ():
                values[name].setdefault(shared_text(str(value)), None)
        chunk_ids[key].append(chunk.chunk_id)
        if key not in first or chunk.start < first[key].start:
            first[key] = chunk
        if held.get(BLOCK_TYPE) == "table":
            with_tables.add(key)
    kinds = _statement_pages(docstore, collection, with_tables, first, chunk_ids, vocabulary)
    if card is None:
        card = _card_from_chunks(docstore, collection, built.doc_name(), chunk_ids)
    counted = {name: tuple(found) for name, found in values.items() if found}
    return places_state(doc_id, built.built(), version, kinds, card, page_count, counted)


def places_state(
    doc_id: str,
    places: DocPlaces,
    version: float,
    kinds: Mapping[str, str],
    card: DocumentCard,
    page_count: int,
    values: Mapping[str, tuple[str, ...]],
) -> DocState:
    """The state of document `doc_id` whose places are `places`."""
    pages = places.pages
    chunks = PageChunks(places)
    return DocState(
        doc_id, version, places, pages, chunks, frozenset(kinds), card, dict(kinds), page_count,
        values,
    )  # fmt: skip


def _card_from_chunks(
    docstore: DocStore,
    collection: str,
    name: str,
    chunk_ids: dict[PageKey, list[str]],
) -> DocumentCard:
    first_pages = sorted(chunk_ids, key=lambda key: key.page)[:PAGES_READ]
    texts = [merged_text(docstore.get_chunks(collection, chunk_ids[key])) for key in first_pages]
    return read_card(name, texts)


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
