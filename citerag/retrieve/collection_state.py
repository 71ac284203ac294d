"""What retrieval needs in memory for one collection: where each ready chunk sits, a BM25 index
over the chunks, and the collection's pages (their text for BM25, their head vectors).

A page is evidence in its own right: a financial statement is a page that is almost all table,
and what makes it findable is the page as a whole (its title, period and rows together), which no
single row chunk carries. Pages are derived from the chunks; their head vectors are computed at
ingest (`page_vector_key`). The BM25 indexes are derived from the docstore, saved with a
fingerprint of the ready chunks and rebuilt when it no longer matches, so keyword search never
disagrees with the docstore.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.schema import TextNode

from citerag.enrich.fields import LIST_FIELDS
from citerag.nodes import (
    BLOCK_TYPE,
    DOC_ID,
    DOC_NAME,
    LABEL,
    PAGE,
    SECTION,
    block_type_of,
    doc_id_of,
    keyword_text,
    page_of,
    page_vector_key,
    start_of,
)
from citerag.retrieve.statement_pages import has_statement_title
from citerag.store.base import DocStore
from citerag.store.bm25_index import BM25Index

log = logging.getLogger(__name__)
FINGERPRINT_FILE = "fingerprint.json"
PLACE_KEYS = (DOC_ID, DOC_NAME, PAGE, SECTION, BLOCK_TYPE, LABEL)


@dataclass(frozen=True)
class PageKey:
    doc_id: str
    page: int

    @property
    def id(self) -> str:
        return page_vector_key(self.doc_id, self.page)


@dataclass
class PageSet:
    keys: list[PageKey]
    chunk_ids: dict[PageKey, list[str]]
    bm25: BM25Index
    vectors: np.ndarray | None  # one normalized head vector per key, or None when absent
    statement_ids: frozenset[str] = frozenset()  # pages that are financial statements

    def position(self) -> dict[str, int]:
        return {key.id: i for i, key in enumerate(self.keys)}


class CollectionState:
    def __init__(
        self, name: str, places: dict[str, dict[str, Any]], bm25: BM25Index, pages: PageSet
    ) -> None:
        self.name = name
        self.places = places
        self.bm25 = bm25
        self.pages = pages
        self._page_of_key = {key.id: key for key in pages.keys}

    @property
    def is_empty(self) -> bool:
        return not self.places

    def page_key(self, page_id: str) -> PageKey:
        return self._page_of_key[page_id]


def load_collection_state(docstore: DocStore, collection: str, bm25_dir: Path) -> CollectionState:
    nodes = docstore.ready_chunks(collection)
    places = {n.node_id: place_of(n) for n in nodes}
    chunk_bm25 = _load_or_build(nodes, bm25_dir, [n.node_id for n in nodes], _chunk_texts)
    pages = _page_set(docstore, collection, nodes, bm25_dir.with_name(f"{bm25_dir.name}.pages"))
    return CollectionState(collection, places, chunk_bm25, pages)


def place_of(node: TextNode) -> dict[str, Any]:
    """What filters read of a chunk: its place and its enrichment lists (empty when absent)."""
    place = {k: node.metadata.get(k) for k in PLACE_KEYS}
    place.update({k: list(node.metadata.get(k) or []) for k in LIST_FIELDS})
    return place


def rebuild_bm25(nodes: Sequence[TextNode], bm25_dir: Path) -> None:
    """Build and save the keyword indexes (chunks and pages) of exactly these nodes."""
    _build_and_save(nodes, bm25_dir, [n.node_id for n in nodes], _chunk_texts(nodes))
    keys, texts = page_texts(nodes)
    _build_and_save(
        nodes, bm25_dir.with_name(f"{bm25_dir.name}.pages"), [k.id for k in keys], texts
    )


def _chunk_texts(nodes: Sequence[TextNode]) -> list[str]:
    return [keyword_text(n) for n in nodes]


def page_texts(nodes: Sequence[TextNode]) -> tuple[list[PageKey], list[str]]:
    """Each page's text, rebuilt from its chunks' offsets (overlaps merged), in reading order."""
    by_page: dict[PageKey, list[TextNode]] = defaultdict(list)
    for node in nodes:
        by_page[PageKey(doc_id_of(node), page_of(node))].append(node)
    keys = list(by_page)
    return keys, [_merged_text(by_page[key]) for key in keys]


def _merged_text(nodes: list[TextNode]) -> str:
    pieces, covered = [], 0
    for node in sorted(nodes, key=start_of):
        start, text = start_of(node), node.text
        if start + len(text) <= covered:
            continue
        pieces.append(text[max(0, covered - start) :])
        covered = start + len(text)
    return "\n".join(pieces)


def _page_set(
    docstore: DocStore, collection: str, nodes: Sequence[TextNode], folder: Path
) -> PageSet:
    keys, texts = page_texts(nodes)
    chunk_ids: dict[PageKey, list[str]] = defaultdict(list)
    with_tables: set[PageKey] = set()
    for node in nodes:
        key = PageKey(doc_id_of(node), page_of(node))
        chunk_ids[key].append(node.node_id)
        if block_type_of(node) == "table":
            with_tables.add(key)
    statements = frozenset(
        key.id
        for key, text in zip(keys, texts, strict=True)
        if key in with_tables and has_statement_title(text)
    )
    bm25 = _load_or_build(nodes, folder, [k.id for k in keys], lambda ns: page_texts(ns)[1])
    stored = docstore.get_sentence_vectors(collection, [k.id for k in keys])
    vectors = None
    if keys and len(stored) == len(keys):
        vectors = np.stack([stored[k.id][0] for k in keys]).astype(np.float32)
    elif stored:
        log.warning("%s: %d of %d pages have head vectors", collection, len(stored), len(keys))
    return PageSet(keys, dict(chunk_ids), bm25, vectors, statements)


def _load_or_build(
    nodes: Sequence[TextNode], folder: Path, ids: list[str], texts: Any
) -> BM25Index:
    marker = folder / FINGERPRINT_FILE
    if marker.exists():
        try:
            saved = json.loads(marker.read_text()).get("fingerprint")
            if saved == _fingerprint(nodes):
                return BM25Index.load(folder)
        except (OSError, ValueError, KeyError):  # a copy cut short by a crash: rebuild it
            pass
        log.warning("keyword index %s is out of date; rebuilding it", folder.name)
    return _build_and_save(nodes, folder, ids, texts(nodes))


def _build_and_save(
    nodes: Sequence[TextNode], folder: Path, ids: list[str], texts: list[str]
) -> BM25Index:
    index = BM25Index()
    index.build(ids, texts)
    folder.parent.mkdir(parents=True, exist_ok=True)
    index.save(folder, extra={FINGERPRINT_FILE: {"fingerprint": _fingerprint(nodes)}})
    return index


def _fingerprint(nodes: Sequence[TextNode]) -> str:
    digest = hashlib.sha256()
    for node_id in sorted(n.node_id for n in nodes):
        digest.update(node_id.encode())
    return digest.hexdigest()
