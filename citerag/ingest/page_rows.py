"""A document's page rows in the vector index's page collection (`VectorIndex.pages`): each page
that holds chunks, with its head vector.

Ingest writes them from the vectors it just made; repair, and a collection made before the
page collection existed, from the head vectors the docstore keeps (its source of truth).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping

import numpy as np

from citerag.nodes import PAGE, page_vector_key
from citerag.store.base import PageRow, Stores

log = logging.getLogger(__name__)
RESTORE_BATCH = 2000  # page rows per insert when restoring many documents


def write_page_rows(
    stores: Stores,
    collection: str,
    doc_id: str,
    pages: Iterable[int],
    heads: Mapping[str, np.ndarray] | None = None,
) -> int:
    """Writes the page rows of `doc_id`'s `pages` from `heads` (by page key), or from the
    docstore's head vectors when None; returns how many pages had a head vector."""
    pages = sorted(set(pages))
    if heads is None:
        keys = [page_vector_key(doc_id, page) for page in pages]
        heads = stores.docstore.get_sentence_vectors(collection, keys)
    rows = page_rows(doc_id, pages, heads)
    stores.vectors.pages.insert(collection, rows)
    return len(rows)


def page_rows(doc_id: str, pages: Iterable[int], heads: Mapping[str, np.ndarray]) -> list[PageRow]:
    """The rows of `doc_id`'s `pages` that have a head vector in `heads` (by page key)."""
    keys = {page: page_vector_key(doc_id, page) for page in sorted(set(pages))}
    return [
        PageRow(key, doc_id, page, np.asarray(heads[key]).reshape(-1))
        for page, key in keys.items()
        if key in heads
    ]


def restore_page_rows(stores: Stores, collection: str) -> int:
    """Writes, from the docstore, the page rows of every ready document when the vector index
    has none at all (a collection made before the page collection, or one whose page
    collection was lost); returns how many documents got rows. A document that lost only its
    own rows is found by split-brain repair with its chunk rows (ingest writes both before the
    document turns ready), so the check every process makes is one count, not a listing (which
    took a second per 10,000 pages). Rows go in batches of many documents (Milvus Lite flushes
    after each insert): about 10 s per 10,000 pages on 2 shared cores, once."""
    if stores.vectors.pages.count(collection):
        return 0
    lacking = [r.doc_id for r in stores.docstore.list_documents(collection)]
    started, restored, pages = time.perf_counter(), 0, 0
    batch: list[PageRow] = []
    for doc_id in lacking:
        keys = {
            page_vector_key(doc_id, int(c.metadata.get(PAGE, 0))): int(c.metadata.get(PAGE, 0))
            for c in stores.docstore.chunk_metadata(collection, doc_id, (PAGE,))
        }
        heads = stores.docstore.get_sentence_vectors(collection, list(keys))
        rows = page_rows(doc_id, keys.values(), heads)
        restored += bool(rows)
        pages += len(rows)
        batch += rows
        if len(batch) >= RESTORE_BATCH:
            stores.vectors.pages.insert(collection, batch)
            batch = []
    stores.vectors.pages.insert(collection, batch)
    if restored:
        log.warning(
            "collection %r: wrote the page head vectors of %d documents (%d pages) from the "
            "docstore into the vector index's page collection (%.1f s)",
            collection,
            restored,
            pages,
            time.perf_counter() - started,
        )
    return restored
