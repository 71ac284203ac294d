"""What retrieval needs in memory for one collection: the ready chunks' pages and a BM25 index.

The BM25 index is derived from the docstore: it is saved with a fingerprint of the ready
documents and rebuilt whenever the fingerprint no longer matches (a crash between writes,
a document deleted elsewhere), so the keyword index never disagrees with the docstore.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from citerag.store.base import DocStore, PageRange
from citerag.store.bm25_index import BM25Index
from citerag.types import Chunk

log = logging.getLogger(__name__)
FINGERPRINT_FILE = "fingerprint.json"


@dataclass(frozen=True)
class ChunkPlace:
    doc_id: str
    page: int


class CollectionState:
    def __init__(self, name: str, places: dict[str, ChunkPlace], bm25: BM25Index) -> None:
        self.name = name
        self.places = places
        self.bm25 = bm25

    def is_visible(self, chunk_id: str, page_range: PageRange | None) -> bool:
        place = self.places.get(chunk_id)
        if place is None:
            return False
        return page_range is None or page_range.first <= place.page <= page_range.last

    @property
    def is_empty(self) -> bool:
        return not self.places


def load_collection_state(docstore: DocStore, collection: str, bm25_dir: Path) -> CollectionState:
    chunks = docstore.ready_chunks(collection)
    places = {c.id: ChunkPlace(c.doc_id, c.page) for c in chunks}
    return CollectionState(collection, places, _load_or_build_bm25(chunks, bm25_dir))


def rebuild_bm25(chunks: list[Chunk], bm25_dir: Path) -> BM25Index:
    """Build and save the keyword index of exactly these chunks."""
    index = BM25Index()
    index.build([c.id for c in chunks], [_keyword_text(c) for c in chunks])
    bm25_dir.parent.mkdir(parents=True, exist_ok=True)
    index.save(bm25_dir)
    (bm25_dir / FINGERPRINT_FILE).write_text(json.dumps({"fingerprint": _fingerprint(chunks)}))
    return index


def _load_or_build_bm25(chunks: list[Chunk], bm25_dir: Path) -> BM25Index:
    marker = bm25_dir / FINGERPRINT_FILE
    if marker.exists():
        saved = json.loads(marker.read_text()).get("fingerprint")
        if saved == _fingerprint(chunks):
            return BM25Index.load(bm25_dir)
        log.warning("keyword index of %s is out of date; rebuilding it", bm25_dir.name)
    return rebuild_bm25(chunks, bm25_dir)


def _keyword_text(chunk: Chunk) -> str:
    """Section titles and labels help keyword search ("Figure 3", "Risk Factors")."""
    return "\n".join(part for part in (chunk.section, chunk.text) if part)


def _fingerprint(chunks: list[Chunk]) -> str:
    digest = hashlib.sha256()
    for chunk_id in sorted(c.id for c in chunks):
        digest.update(chunk_id.encode())
    return digest.hexdigest()
