"""The documents' keyword segments a process keeps between searches, bounded in bytes."""

from __future__ import annotations

from collections import OrderedDict

from citerag.store.bm25_merged import Version
from citerag.store.bm25_segment import Segment

Key = tuple[str, str, Version]  # collection, document, its folder's version


class SegmentCache:
    """Documents' segments read on demand, at most `max_bytes` of them, least recently used
    out first (a document larger than the bound is read for each search, never kept)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._items: OrderedDict[Key, tuple[dict[str, Segment], int]]
        self._items = OrderedDict()

    def get(self, key: Key) -> dict[str, Segment] | None:
        item = self._items.get(key)
        if item is None:
            return None
        self._items.move_to_end(key)
        return item[0]

    def put(self, key: Key, kinds: dict[str, Segment]) -> None:
        size = sum(segment_bytes(segment) for segment in kinds.values())
        self.discard(key)
        if size > self.max_bytes:
            return
        self._items[key] = (kinds, size)
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, (_, dropped) = self._items.popitem(last=False)
            self.bytes -= dropped

    def discard(self, key: Key) -> None:
        item = self._items.pop(key, None)
        if item is not None:
            self.bytes -= item[1]

    def discard_collection(self, collection: str) -> None:
        for key in [k for k in self._items if k[0] == collection]:
            self.discard(key)


def segment_bytes(segment: Segment) -> int:
    arrays = (segment.terms, segment.indptr, segment.rows, segment.tf, segment.lengths)
    return sum(a.nbytes for a in arrays) + sum(56 + len(i) for i in segment.ids)
