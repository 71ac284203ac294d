"""Page head vectors searched in process on Milvus Lite, exactly as its FLAT index would.

Milvus Lite answers a search by scanning every row in Python: a search of 10,000 page rows took
about 200 ms on the 2-core machine (benchmarks/results/page_vectors.md), where one matrix
product over the same vectors takes about 2 ms, and a question asks for pages on every search.
Lite also runs inside the serving process and locks its folder to it, so no other process
writes its page rows: a copy kept here, loaded on the first search and changed by this
process's own writes, can never fall behind. So on Lite the page rows stay in the page
collection (the same writes, repair and deletes as on a server) and are searched in this copy;
it costs 1.5 KB per page (384 float32), the memory a server deployment does not pay.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

from citerag.store.base import PageIndex, PageRow

# Every stored page row of a collection: (page ids, their document ids, their vectors).
RowReader = Callable[[str], tuple[list[str], list[str], list[np.ndarray]]]


@dataclass(frozen=True)
class _Pages:
    """One collection's page rows: replaced whole on a change, so a search reads it unlocked."""

    ids: tuple[str, ...]
    doc_ids: tuple[str, ...]
    matrix: np.ndarray  # one normalized float32 row per id

    @classmethod
    def of(
        cls, ids: Sequence[str], doc_ids: Sequence[str], vectors: Sequence[np.ndarray]
    ) -> _Pages:
        dim = len(vectors[0]) if vectors else 0
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(ids), dim)
        return cls(tuple(ids), tuple(doc_ids), matrix)

    def upserted(self, rows: Sequence[PageRow]) -> _Pages:
        new = {row.page_id for row in rows}
        kept = [i for i, page_id in enumerate(self.ids) if page_id not in new]
        added = np.asarray([_normalized(row.vector) for row in rows], np.float32)
        matrix = np.concatenate([self.matrix[kept], added]) if self.ids else added
        ids = (*(self.ids[i] for i in kept), *(row.page_id for row in rows))
        doc_ids = (*(self.doc_ids[i] for i in kept), *(row.doc_id for row in rows))
        return _Pages(ids, doc_ids, matrix)

    def without(self, doc_id: str) -> _Pages:
        kept = [i for i, owner in enumerate(self.doc_ids) if owner != doc_id]
        if len(kept) == len(self.ids):
            return self
        ids = tuple(self.ids[i] for i in kept)
        return _Pages(ids, tuple(self.doc_ids[i] for i in kept), self.matrix[kept])

    def nearest(
        self, vector: np.ndarray, top_k: int, among: Collection[str] | None
    ) -> list[tuple[str, float]]:
        """The `top_k` rows nearest `vector` among `among`. A question's `among` is usually
        nearly every page (those its snapshot shows), so the best rows are found first and
        checked for membership; only when too few of them are allowed is every row checked."""
        if top_k < 1 or not self.ids or (among is not None and not among):
            return []
        scores = self.matrix @ _normalized(vector)  # cosine, as Lite's COSINE metric
        if among is None:
            return _best(self.ids, scores, top_k)[:top_k]
        window = min(len(scores), max(top_k * 10, 200))
        found = [hit for hit in _best(self.ids, scores, window) if hit[0] in among]
        if len(found) >= top_k or window == len(scores):
            return found[:top_k]
        allowed = np.fromiter((i for i, p in enumerate(self.ids) if p in among), dtype=np.int64)
        kept = [self.ids[int(i)] for i in allowed]
        return _best(kept, scores[allowed], top_k)[:top_k]


def _best(ids: Sequence[str], scores: np.ndarray, count: int) -> list[tuple[str, float]]:
    """The `count` best (id, score) pairs, best first, equal scores by id: every row tied with
    the count-th is sorted, so the cut never depends on the order rows were stored in."""
    best = np.arange(len(scores))
    if len(scores) > count:
        kth = np.partition(scores, len(scores) - count)[len(scores) - count]
        best = np.flatnonzero(scores >= kth)
    hits = [(ids[int(i)], float(scores[i])) for i in best]
    return sorted(hits, key=lambda hit: (-hit[1], hit[0]))


class ExactPageCache:
    """`PageIndex` over Lite's page collection (`pages`), searched in an in-process copy."""

    def __init__(self, pages: PageIndex, read_rows: RowReader) -> None:
        self._pages = pages
        self._read_rows = read_rows  # every stored row of a collection: (id, doc id, vector)
        self._copies: dict[str, _Pages] = {}
        self._lock = threading.Lock()

    def insert(self, collection: str, rows: Sequence[PageRow]) -> None:
        self._pages.insert(collection, rows)
        with self._lock:
            held = self._copies.get(collection)
            if held is not None and rows:
                self._copies[collection] = held.upserted(rows)

    def search(
        self, collection: str, vector: np.ndarray, top_k: int, among: Collection[str] | None
    ) -> list[tuple[str, float]]:
        held = self._copies.get(collection)
        if held is None:
            with self._lock:
                held = self._copies.get(collection)
                if held is None:
                    held = self._copies[collection] = _Pages.of(*self._read_rows(collection))
        return held.nearest(vector, top_k, among)

    def doc_ids(self, collection: str) -> set[str]:
        return self._pages.doc_ids(collection)

    def count(self, collection: str, doc_id: str | None = None) -> int:
        return self._pages.count(collection, doc_id)

    def delete_document(self, collection: str, doc_id: str) -> None:
        self._pages.delete_document(collection, doc_id)
        with self._lock:
            held = self._copies.get(collection)
            if held is not None:
                self._copies[collection] = held.without(doc_id)

    def drop(self, collection: str) -> None:
        self._pages.drop(collection)
        with self._lock:
            self._copies.pop(collection, None)


def _normalized(vector: np.ndarray) -> np.ndarray:
    flat = np.asarray(vector, np.float32).reshape(-1)
    norm = float(np.linalg.norm(flat))
    return flat / norm if norm > 0 else flat
