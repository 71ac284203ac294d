"""One document's share of a BM25 index: term counts per entry, saved as plain .npy arrays.

A segment holds no collection statistics: the IDF and the average length come from all the
segments of a collection at search time, so adding or removing a document rewrites nothing
else. Scores are computed exactly as bm25s computes them (Lucene IDF, its default k1 and b,
float32 per term and entry, summed in query order), so rankings match a bm25s index over the
same entries.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

K1 = 1.5  # bm25s's defaults
B = 0.75
ARRAYS = ("terms", "indptr", "rows", "tf", "lengths")


def term_hash(term: str) -> int:
    """A stable 64-bit key for a term (Python's own hash changes per process); two of a
    million terms collide with a probability near 3e-8."""
    return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=8).digest(), "little")


def hashes_of(tokens: Sequence[str]) -> np.ndarray:
    return np.fromiter((term_hash(t) for t in tokens), dtype=np.uint64, count=len(tokens))


def lucene_idf(df: np.ndarray, n_entries: int) -> np.ndarray:
    """log(1 + (N - df + 0.5) / (df + 0.5)) per term, float32 as bm25s keeps it."""
    return np.array(
        [math.log(1 + (n_entries - d + 0.5) / (d + 0.5)) if d else 0.0 for d in df.tolist()],
        dtype=np.float32,
    )


@dataclass(frozen=True)
class Segment:
    """Entries of one kind from one document: a term-major (CSC) matrix of term counts."""

    ids: Sequence[str]  # a tuple, or a merged segment's mapped ids
    terms: np.ndarray  # uint64 term hashes, sorted
    indptr: np.ndarray  # postings of terms[j]: rows[indptr[j]:indptr[j + 1]]
    rows: np.ndarray  # entry positions
    tf: np.ndarray  # how often the term occurs in that entry
    lengths: np.ndarray  # tokens per entry

    @classmethod
    def build(cls, ids: Sequence[str], token_lists: Sequence[Sequence[str]]) -> Segment:
        postings: dict[str, list[tuple[int, int]]] = {}
        for row, tokens in enumerate(token_lists):
            for term, count in Counter(tokens).items():
                postings.setdefault(term, []).append((row, count))
        terms = list(postings)
        hashes = hashes_of(terms)
        order = np.argsort(hashes, kind="stable")
        flat = [postings[terms[i]] for i in order]
        sizes = np.fromiter((len(p) for p in flat), dtype=np.int64, count=len(flat))
        indptr = np.zeros(len(flat) + 1, dtype=np.int64)
        np.cumsum(sizes, out=indptr[1:])
        pairs = np.array([pair for p in flat for pair in p], dtype=np.int64).reshape(-1, 2)
        return cls(
            ids=tuple(ids),
            terms=hashes[order],
            indptr=indptr,
            rows=pairs[:, 0].astype(np.min_scalar_type(max(len(ids) - 1, 0))),
            tf=pairs[:, 1].astype(np.min_scalar_type(int(pairs[:, 1].max(initial=0)))),
            lengths=np.array([len(t) for t in token_lists], dtype=np.int64),
        )

    @classmethod
    def concat(cls, segments: Sequence[Segment]) -> Segment:
        """The segments as one (their rows one after another, in the order given): what many
        documents' keyword search reads in one pass instead of one pass per document."""
        if not segments:
            return cls.build([], [])
        offsets = np.cumsum([0] + [len(s) for s in segments[:-1]])
        term_of = np.concatenate([np.repeat(s.terms, np.diff(s.indptr)) for s in segments])
        rows = np.concatenate(
            [s.rows.astype(np.int64) + o for s, o in zip(segments, offsets, strict=True)]
        )
        tf = np.concatenate([s.tf.astype(np.int64) for s in segments])
        by_term = np.argsort(term_of, kind="stable")  # a term's postings stay in row order
        terms, counts = np.unique(term_of[by_term], return_counts=True)
        indptr = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return cls(
            ids=tuple(i for s in segments for i in s.ids),
            terms=terms,
            indptr=indptr,
            rows=rows[by_term],
            tf=tf[by_term].astype(np.min_scalar_type(int(tf.max(initial=0)))),
            lengths=np.concatenate([s.lengths for s in segments]),
        )

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def total_length(self) -> int:
        return int(self.lengths.sum())

    def columns(self, hashes: np.ndarray) -> np.ndarray:
        """The column of each term hash, -1 where the segment lacks the term."""
        if not len(self.terms):
            return np.full(len(hashes), -1, dtype=np.int64)
        at = np.searchsorted(self.terms, hashes).clip(max=len(self.terms) - 1)
        return np.where(self.terms[at] == hashes, at, -1)

    def doc_freqs(self, columns: np.ndarray) -> np.ndarray:
        found = columns >= 0
        freqs = np.zeros(len(columns), dtype=np.int64)
        cols = columns[found]
        freqs[found] = self.indptr[cols + 1] - self.indptr[cols]
        return freqs

    def scores(
        self, columns: np.ndarray, order: np.ndarray, idf: np.ndarray, avg_length: np.float64
    ) -> np.ndarray:
        """BM25 per entry for the query terms in `order` (indexes into `columns`, repeats
        counted), with the collection's `idf` per term and average entry length."""
        scores = np.zeros(len(self.ids), dtype=np.float32)
        parts: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for term in order.tolist():
            column = int(columns[term])
            if column < 0:
                continue
            if term not in parts:
                parts[term] = self._term_scores(column, idf[term], avg_length)
            rows, part = parts[term]
            scores[rows] += part
        return scores

    def _term_scores(
        self, column: int, idf: np.float32, avg_length: np.float64
    ) -> tuple[np.ndarray, np.ndarray]:
        start, end = self.indptr[column], self.indptr[column + 1]
        rows = self.rows[start:end].astype(np.int64)
        tf = self.tf[start:end].astype(np.float64)
        # The same operations in the same order as bm25s's Lucene scorer, then float32.
        tfc = tf / (K1 * ((1 - B) + B * self.lengths[rows] / avg_length) + tf)
        return rows, (idf * tfc).astype(np.float32)

    def save(self, folder: Path, kind: str) -> None:
        for name in ARRAYS:
            np.save(folder / f"{kind}.{name}.npy", getattr(self, name), allow_pickle=False)
