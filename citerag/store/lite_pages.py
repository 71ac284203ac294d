"""Page head vectors searched in process on Milvus Lite, exactly as its FLAT index would.

Milvus Lite answers a search by scanning every row in Python: a search of 10,000 page rows took
about 200 ms on the 2-core machine (benchmarks/results/page_vectors.md), where one matrix
product over the same vectors takes about 2 ms, and a question asks for pages on every search.
Lite also runs inside the serving process and locks its folder to it, so no other process
writes its page rows: a copy kept here and changed by this process's own writes can never fall
behind. So on Lite the page rows stay in the page collection (the same writes, repair and
deletes as on a server) and are searched in this copy; it costs 1.5 KB per page (384 float32),
the memory a server deployment does not pay.

Reading the copy back through Lite took 28 s for 90,721 rows, so it is also kept in Lite's
folder (`lite_page_files`) and a new process loads that in a fraction of a second. The stored
copy exists only while it equals Lite's rows (`ExactPageCache`): removed before every write,
stored again from memory after a full read and when the index closes; without one, or with one
that is damaged or holds another row count than Lite, the rows are read from Lite.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

from citerag.store.base import PageIndex, PageRow
from citerag.store.lite_page_files import PageFiles

log = logging.getLogger(__name__)

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
    """`PageIndex` over Lite's page collection (`pages`), searched in an in-process copy that is
    kept on disk in `files` (`lite_page_files`) between processes.

    A stored copy is only ever a copy of Lite's current rows: every write removes it before
    Lite changes, and it is stored again from the copy in memory (after a full read from Lite,
    and at `save` when the copy changed), so a process killed after a write leaves none and the
    next one reads Lite. Writes hold the lock from that removal to the copy's update, so a first
    search never stores rows read in between."""

    def __init__(
        self,
        pages: PageIndex,
        read_rows: RowReader,
        files: PageFiles | None = None,
        name: Callable[[str], str] = str,
    ) -> None:
        self._pages = pages
        self._read_rows = read_rows  # every stored row of a collection: (id, doc id, vector)
        self._files = files
        self._name = name  # a collection's file name (its Milvus page collection's)
        self._copies: dict[str, _Pages] = {}
        self._unsaved: set[str] = set()  # changed since stored
        self._lock = threading.Lock()

    def insert(self, collection: str, rows: Sequence[PageRow]) -> None:
        if rows:
            self._write(
                collection,
                lambda: self._pages.insert(collection, rows),
                lambda held: held.upserted(rows),
            )

    def search(
        self, collection: str, vector: np.ndarray, top_k: int, among: Collection[str] | None
    ) -> list[tuple[str, float]]:
        held = self._copies.get(collection) or self._held(collection, read=True)
        return held.nearest(vector, top_k, among) if held is not None else []

    def doc_ids(self, collection: str) -> set[str]:
        held = self._held(collection, read=False)
        return set(held.doc_ids) if held is not None else self._pages.doc_ids(collection)

    def count(self, collection: str, doc_id: str | None = None) -> int:
        """From the copy when held or stored: Lite opens the collection to count it, about 1.7 s
        at 90,721 page rows, which every process's first repair check would pay."""
        held = self._held(collection, read=False)
        if held is None:
            return self._pages.count(collection, doc_id)
        return len(held.ids) if doc_id is None else held.doc_ids.count(doc_id)

    def delete_document(self, collection: str, doc_id: str) -> None:
        self._write(
            collection,
            lambda: self._pages.delete_document(collection, doc_id),
            lambda held: held.without(doc_id),
        )

    def drop(self, collection: str) -> None:
        with self._lock:
            self._forget(collection)
            self._pages.drop(collection)

    def save(self) -> None:
        """Store every copy changed since it was stored (when the index closes)."""
        with self._lock:
            for collection in sorted(self._unsaved):
                held = self._copies.get(collection)
                if held is not None:
                    self._store(collection, held)
            self._unsaved.clear()

    def _held(self, collection: str, read: bool) -> _Pages | None:
        """The copy: held, else the stored one, else (when `read`) every row read from Lite."""
        with self._lock:
            held = self._copies.get(collection) or self._stored(collection)
            if held is None and read:
                held = _Pages.of(*self._read_rows(collection))
                self._store(collection, held)
            if held is not None:
                self._copies[collection] = held
            return held

    def _write(
        self, collection: str, write: Callable[[], None], change: Callable[[_Pages], _Pages]
    ) -> None:
        """Remove the stored copy, write Lite, then change the copy in memory. A copy not held
        yet is loaded from its stored set first (never read from Lite, slow on a big one): a
        process that only writes, as an ingest, then stores it again when it closes."""
        with self._lock:
            held = self._copies.get(collection) or self._stored(collection)
            if held is None and self._files is not None and not self._pages.count(collection):
                held = _Pages.of([], [], [])  # a new collection: its copy starts here
            self._forget(collection)  # a failed write leaves no copy to fall behind Lite
            write()
            if held is not None:
                self._copies[collection] = change(held)
                self._unsaved.add(collection)

    def _stored(self, collection: str) -> _Pages | None:
        """The stored copy, when Lite's rows have not changed since it was stored: Lite written
        without it (by a version of this code that kept none) is read again.

        Lite's files of the collection are compared (microseconds). Where Lite keeps no such
        files, its row count is: that costs 1.4-2.9 s at 90,721 page rows on the 2-core machine
        (Lite opens the collection to count it, about 0.1 s once open), and misses a writer
        that keeps the count (pages embedded again)."""
        if self._files is None:
            return None
        name = self._name(collection)
        stored = self._files.load(name)
        if stored is None:
            return None
        now = self._files.lite_files(name)
        if now is not None and stored.lite_files is not None:
            same, found = now == stored.lite_files, "its files differ"
        else:
            lite = self._pages.count(collection)
            same, found = lite == len(stored.ids), f"{lite} rows, stored {len(stored.ids)}"
        if not same:
            log.warning(
                "Milvus Lite's page rows of collection %r changed since they were stored (%s: "
                "written by code that keeps no stored copy); reading them from Lite instead",
                collection,
                found,
            )
            self._files.remove(name)
            return None
        return _Pages(tuple(stored.ids), tuple(stored.doc_ids), stored.matrix)

    def _store(self, collection: str, held: _Pages) -> None:
        if self._files is None:
            return
        try:
            self._files.save(self._name(collection), held.ids, held.doc_ids, held.matrix)
        except OSError as error:  # a full or read-only disk: the next process reads Lite
            log.warning("Lite's page rows of %r could not be stored (%s)", collection, error)
            self._files.remove(self._name(collection))

    def _forget(self, collection: str) -> None:
        if self._files is not None:
            self._files.remove(self._name(collection))
        self._copies.pop(collection, None)
        self._unsaved.discard(collection)


def _normalized(vector: np.ndarray) -> np.ndarray:
    flat = np.asarray(vector, np.float32).reshape(-1)
    norm = float(np.linalg.norm(flat))
    return flat / norm if norm > 0 else flat
