"""The page head vectors of a snapshot, searched as a few blocks instead of one matrix made again
on each change.

A change appends one block (the added documents' pages) and leaves the others as they are: the
rows of a document that went, or was ingested again, stay in their block and are skipped at
search time (a block row is live while the snapshot holds the very document state that wrote
it). Blocks are merged log-structured: the newest two when the newer is at least half the
older's size, so there are O(log pages) blocks and each row is copied O(log pages) times over
its life; and all of them, without their dead rows, once dead rows outnumber live ones (a cost
the deletes since the last merge have paid for). A search scores every block (one product per
block) and walks the rows best first, as one matrix would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from citerag.retrieve.doc_state import DocState
from citerag.retrieve.page_evidence import PageKey


@dataclass(frozen=True)
class _Block:
    keys: tuple[PageKey, ...]
    matrix: np.ndarray  # one normalized head vector per key
    spans: Mapping[str, tuple[DocState, int, int]]  # doc id -> (its state, first row, end row)

    @classmethod
    def of(cls, parts: Sequence[tuple[DocState, np.ndarray, tuple[PageKey, ...]]]) -> _Block:
        spans: dict[str, tuple[DocState, int, int]] = {}
        keys: list[PageKey] = []
        start = 0
        for doc, _, doc_keys in parts:
            spans[doc.doc_id] = (doc, start, start + len(doc_keys))
            keys += doc_keys
            start += len(doc_keys)
        return cls(tuple(keys), np.concatenate([m for _, m, _ in parts]), spans)

    def live_parts(
        self, docs: Mapping[str, DocState]
    ) -> list[tuple[DocState, np.ndarray, tuple[PageKey, ...]]]:
        return [
            (doc, self.matrix[start:end], self.keys[start:end])
            for doc_id, (doc, start, end) in self.spans.items()
            if docs.get(doc_id) is doc
        ]


class PageVectors:
    """Every live page's head vector; none at all while some document has none (pages are then
    not ranked by vector, as with one matrix)."""

    __slots__ = ("_blocks", "_live", "_missing")

    def __init__(self, blocks: tuple[_Block, ...] = (), live: int = 0, missing: int = 0) -> None:
        self._blocks = blocks
        self._live = live  # rows of the snapshot's documents
        self._missing = missing  # documents without head vectors

    @classmethod
    def built(cls, docs: Mapping[str, DocState]) -> PageVectors:
        return cls().moved(docs, (), list(docs.values()))

    def moved(
        self, docs: Mapping[str, DocState], gone: Iterable[DocState], came: Iterable[DocState]
    ) -> PageVectors:
        """The vectors of `docs`: these less `gone`'s, with `came`'s in a block of their own."""
        live, missing = self._live, self._missing
        for doc in gone:
            if doc.vectors is None:
                missing -= 1
            else:
                live -= len(doc.pages)
        parts = []
        for doc in came:
            if doc.vectors is None:
                missing += 1
            elif doc.pages:
                parts.append((doc, doc.vectors, doc.pages))
                live += len(doc.pages)
        blocks = [*self._blocks, _Block.of(parts)] if parts else list(self._blocks)
        if sum(len(b.keys) for b in blocks) > 2 * live:
            blocks = _merged(blocks, docs)
        while len(blocks) >= 2 and 2 * len(blocks[-1].keys) >= len(blocks[-2].keys):
            blocks[-2:] = _merged(blocks[-2:], docs)
        return PageVectors(tuple(blocks), live, missing)

    @property
    def blocks(self) -> int:
        return len(self._blocks)

    def nearest(
        self,
        vector: np.ndarray,
        top_k: int,
        docs: Mapping[str, DocState],
        allowed: Iterable[str] | None = None,
    ) -> list[str]:
        """The ids of the `top_k` pages (among `allowed`) whose head vectors are nearest."""
        if self._missing or not self._live:
            return []
        wanted = None if allowed is None else set(allowed)
        scores = np.concatenate([block.matrix @ vector for block in self._blocks])
        ends = np.cumsum([len(block.keys) for block in self._blocks])
        found: list[str] = []
        for at in np.argsort(-scores, kind="stable"):
            b = int(np.searchsorted(ends, at, side="right"))
            block = self._blocks[b]
            key = block.keys[int(at) - (int(ends[b - 1]) if b else 0)]
            if docs.get(key.doc_id) is not block.spans[key.doc_id][0]:
                continue  # a row of a document gone or ingested again
            if wanted is None or key.id in wanted:
                found.append(key.id)
                if len(found) == top_k:
                    break
        return found


def _merged(blocks: Sequence[_Block], docs: Mapping[str, DocState]) -> list[_Block]:
    parts = [part for block in blocks for part in block.live_parts(docs)]
    return [_Block.of(parts)] if parts else []
