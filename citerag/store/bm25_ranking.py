"""Ranking a keyword search's hits over a merged segment and the documents searched one by one:
the rows a merge hides, the rows among allowed ids, and the best hits with the index's tie order.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from citerag.store.bm25_merged import MappedIds
from citerag.store.bm25_segment import Segment


def hidden_freqs(merged: Segment, columns: np.ndarray, hidden: list[tuple[int, int]]) -> np.ndarray:
    """Per query term, how many of the merged segment's hidden rows hold it (a term's postings
    are in row order)."""
    freqs = np.zeros(len(columns), dtype=np.int64)
    if not hidden:
        return freqs
    starts, ends = (np.array(edge, dtype=np.int64) for edge in zip(*hidden, strict=True))
    for term, column in enumerate(columns.tolist()):
        if column >= 0:
            postings = merged.rows[merged.indptr[column] : merged.indptr[column + 1]]
            inside = np.searchsorted(postings, ends) - np.searchsorted(postings, starts)
            freqs[term] = int(inside.sum())
    return freqs


def rows_among(
    segment: Segment, rows: np.ndarray, allowed: Collection[str], exact: bool
) -> np.ndarray:
    """The `rows` whose id is in `allowed`; in a merged segment unless `exact`, those whose id
    hash is (without reading an id: what a large merge needs; a collision is rare)."""
    ids = segment.ids
    if isinstance(ids, MappedIds):
        if not exact:
            return ids.rows_among(rows, allowed)
        return rows[np.fromiter((i in allowed for i in ids.of(rows)), bool, len(rows))]
    return np.array([r for r in rows if ids[r] in allowed], dtype=int)


@dataclass(frozen=True)
class Found:
    """A segment's hits: rows, scores, and each row's document and place in it (for ties)."""

    segment: Segment
    rows: np.ndarray
    scores: np.ndarray
    doc_ids: tuple[str, ...]
    owner: np.ndarray  # index into doc_ids per row
    place: np.ndarray  # the row's position within its document


def best(found: list[Found], top_k: int) -> list[tuple[str, float]]:
    """The `top_k` best hits; ties go to the smaller document id, then the earlier entry."""
    if not found:
        return []
    scores = np.concatenate([f.scores for f in found])
    if not len(scores):
        return []
    owner = np.concatenate([f.owner for f in found])
    place = np.concatenate([f.place for f in found])
    which = np.concatenate([np.full(len(f.rows), i) for i, f in enumerate(found)])
    rows = np.concatenate([f.rows for f in found])
    if len(scores) > top_k:  # only hits scoring at least the k-th best can be among the best
        kth = np.partition(scores, len(scores) - top_k)[len(scores) - top_k]
        keep = np.flatnonzero(scores >= kth)
        scores, owner, place, which, rows = (a[keep] for a in (scores, owner, place, which, rows))
    names = [found[w].doc_ids[o] for w, o in zip(which.tolist(), owner.tolist(), strict=True)]
    rank = {d: i for i, d in enumerate(sorted(set(names)))}
    doc_rank = np.fromiter((rank[d] for d in names), dtype=np.int64, count=len(names))
    best = np.lexsort((place, doc_rank, -scores))[:top_k]
    return [(found[which[i]].segment.ids[rows[i]], float(scores[i])) for i in best]


def best_hits(
    scored: list[tuple[Segment, np.ndarray, tuple[str, ...], np.ndarray]],
    top_k: int,
    allowed: Collection[str] | None,
    exact: bool,
) -> list[tuple[str, float]]:
    """The best `top_k` of the scored segments' rows, among `allowed` (matched by id hash
    unless `exact`)."""
    found = []
    for segment, scores, doc_ids, starts in scored:
        rows = np.flatnonzero(scores > 0)
        if allowed is not None:
            rows = rows_among(segment, rows, allowed, exact)
        owner = np.searchsorted(starts, rows, side="right") - 1
        found.append(Found(segment, rows, scores[rows], doc_ids, owner, rows - starts[owner]))
    return best(found, top_k)
