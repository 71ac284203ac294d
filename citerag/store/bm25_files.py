"""The embedded keyword index: one folder of .npy arrays and JSON per document (never pickle).

Layout: `<root>/<collection>/<doc_id>/` holds `ids.json` and, per kind ("chunk", "page"), the
arrays of a `Segment`. A document's folder is written under a hidden staging name and renamed
into place, so a writer killed half-way leaves nothing a reader sees (its staging copy is
removed by the next writer). Adding or removing a document touches that folder only; the
collection's statistics (entries and their total length per kind) change by that document's
share, and a term's document frequency is summed over the segments at search time.

Searching reads one merged segment per kind (every document's segment concatenated, rows in
document-id order) plus the documents added since it was merged, one by one; documents removed
or replaced since are hidden in it and taken out of its statistics. It is merged again only when
more than MAX_LOOSE documents were added or a quarter of its rows went, so a document added or
deleted costs its own segment, and a search one pass over the merged arrays rather than one per
document (a shelf of thousands of documents).

Memory: every segment of an opened collection is held (about 8-12 bytes per distinct term of an
entry, plus the entry ids), and the merged copy as much again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from citerag.store.atomic_dirs import remove_dead_copies, retire, swap_in
from citerag.store.bm25_segment import Segment, hashes_of, lucene_idf
from citerag.store.keywords import KINDS, KeywordEntry, KeywordQuery
from citerag.text.tokens import tokenize

IDS_FILE = "ids.json"
MAX_LOOSE = 32  # documents searched one by one before the merged segment is made again
FORMAT = 1
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


@dataclass(frozen=True)
class _Merged:
    """Many documents' segments of one kind concatenated, rows in document-id order."""

    segment: Segment
    parts: dict[str, Segment]  # doc id -> the segment merged in (identity tells a replacement)
    starts: dict[str, int]  # doc id -> its first row, in row order

    @classmethod
    def of(cls, parts: list[tuple[str, Segment]]) -> _Merged:
        firsts = np.cumsum([0] + [len(segment) for _, segment in parts[:-1]])
        starts = {doc_id: int(first) for (doc_id, _), first in zip(parts, firsts, strict=False)}
        return cls(Segment.concat([s for _, s in parts]), dict(parts), starts)

    @cached_property
    def doc_order(self) -> tuple[str, ...]:
        return tuple(self.starts)

    @cached_property
    def start_rows(self) -> np.ndarray:
        return np.fromiter(self.starts.values(), dtype=np.int64, count=len(self.starts))


@dataclass
class _View:
    """What one search of a kind reads: the merged segment, documents added since it was
    merged (searched one by one), and merged documents since removed or replaced."""

    merged: _Merged
    loose: list[tuple[str, Segment]]
    gone: list[str]


@dataclass
class _Collection:
    """The loaded segments of one collection, by document, and their totals per kind."""

    segments: dict[str, dict[str, Segment]] = field(default_factory=dict)
    entries: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    length: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    ordered: list[tuple[str, dict[str, Segment]]] | None = None  # by doc id, rebuilt on change
    merged: dict[str, _Merged] = field(default_factory=dict)
    views: dict[str, _View] = field(default_factory=dict)  # per kind, until the next change

    def put(self, doc_id: str, kinds: dict[str, Segment]) -> None:
        self.drop(doc_id)
        self.segments[doc_id] = kinds
        for kind, segment in kinds.items():
            self.entries[kind] += len(segment)
            self.length[kind] += segment.total_length
        self._changed()

    def drop(self, doc_id: str) -> None:
        kinds = self.segments.pop(doc_id, None)
        for kind, segment in (kinds or {}).items():
            self.entries[kind] -= len(segment)
            self.length[kind] -= segment.total_length
        self._changed()

    def _changed(self) -> None:
        self.ordered = None
        self.views.clear()

    def in_order(self) -> list[tuple[str, dict[str, Segment]]]:
        if self.ordered is None:
            self.ordered = sorted(self.segments.items())
        return self.ordered

    def view(self, kind: str) -> _View:
        """The kind's merged segment and what changed since, merged again once the documents
        added since pass MAX_LOOSE or the rows removed since pass a quarter of it: a document
        added or deleted costs its own segment, not a pass over the collection."""
        if kind not in self.views:
            view = self._view_of(self.merged.get(kind), kind)
            if view is None:
                live = [(d, kinds[kind]) for d, kinds in self.in_order() if len(kinds[kind])]
                self.merged[kind] = _Merged.of(live)
                view = _View(self.merged[kind], [], [])
            self.views[kind] = view
        return self.views[kind]

    def _view_of(self, merged: _Merged | None, kind: str) -> _View | None:
        if merged is None:
            return None
        loose = [
            (d, kinds[kind])
            for d, kinds in self.in_order()
            if len(kinds[kind]) and merged.parts.get(d) is not kinds[kind]
        ]
        gone = [
            d for d in merged.doc_order if self.segments.get(d, {}).get(kind) is not merged.parts[d]
        ]
        gone_rows = sum(len(merged.parts[d]) for d in gone)
        if len(loose) > MAX_LOOSE or gone_rows * 4 > max(len(merged.segment), 1):
            return None
        return _View(merged, loose, gone)


class BM25FilesIndex:
    """`KeywordIndex` over per-document segment folders under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.RLock()
        self._collections: dict[str, _Collection] = {}

    def add_document(self, collection: str, doc_id: str, entries: Sequence[KeywordEntry]) -> None:
        folder = self._doc_folder(collection, doc_id)
        kinds: dict[str, Segment] = {
            kind: Segment.build(
                [e.id for e in entries if e.kind == kind],
                [tokenize(e.text) for e in entries if e.kind == kind],
            )
            for kind in KINDS
        }
        folder.parent.mkdir(parents=True, exist_ok=True)
        remove_dead_copies(folder.parent)
        staging = folder.with_name(f".{doc_id}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        ids: dict[str, object] = {"format": FORMAT}
        ids.update((kind, list(segment.ids)) for kind, segment in kinds.items())
        (staging / IDS_FILE).write_text(json.dumps(ids), encoding="utf-8")
        for kind, segment in kinds.items():
            segment.save(staging, kind)
        with self._lock:
            swap_in(staging, folder)
            self._loaded(collection).put(doc_id, kinds)

    def remove_document(self, collection: str, doc_id: str) -> None:
        folder = self._doc_folder(collection, doc_id)
        with self._lock:
            retire(folder)
            if collection in self._collections:
                self._collections[collection].drop(doc_id)

    def search(self, collection: str, query: KeywordQuery) -> list[tuple[str, float]]:
        kind, top_k, allowed_ids = query.kind, query.top_k, query.allowed_ids
        tokens = tokenize(query.text)
        if top_k < 1 or not tokens:
            return []
        with self._lock:
            loaded = self._loaded(collection)
            view = loaded.view(kind)
            entries, length = loaded.entries[kind], loaded.length[kind]
        if not entries:
            return []
        unique, order = np.unique(hashes_of(tokens), return_inverse=True)
        merged = view.merged
        parts = [(merged.segment, merged.segment.columns(unique))]
        parts += [(segment, segment.columns(unique)) for _, segment in view.loose]
        df = np.sum([s.doc_freqs(c) for s, c in parts], axis=0)
        for doc_id in view.gone:  # merged, since removed or replaced: not in the statistics
            part = merged.parts[doc_id]
            df = df - part.doc_freqs(part.columns(unique))
        idf = lucene_idf(np.asarray(df).reshape(-1), entries)
        average = np.float64(length / entries)
        hidden = [(merged.starts[d], merged.starts[d] + len(merged.parts[d])) for d in view.gone]
        owners = [(merged.doc_order, merged.start_rows)]
        owners += [((doc_id,), np.zeros(1, dtype=np.int64)) for doc_id, _ in view.loose]
        found: list[_Found] = []
        for (segment, cols), (doc_ids, starts) in zip(parts, owners, strict=True):
            if not (cols >= 0).any():
                continue
            scores = segment.scores(cols, order.reshape(-1), idf, average)
            if segment is merged.segment:
                for start, end in hidden:
                    scores[start:end] = 0
            rows = np.flatnonzero(scores > 0)
            if allowed_ids is not None:
                rows = np.array([r for r in rows if segment.ids[r] in allowed_ids], dtype=int)
            owner = np.searchsorted(starts, rows, side="right") - 1
            found.append(_Found(segment, rows, scores[rows], doc_ids, owner, rows - starts[owner]))
        return _best(found, top_k)

    def doc_ids(self, collection: str) -> set[str]:
        """The documents whose folders are on disk now (those another process wrote too)."""
        with self._lock:
            loaded = self._loaded(collection)
            on_disk = set(self._folders(collection))
            for gone in set(loaded.segments) - on_disk:
                loaded.drop(gone)
            for doc_id in on_disk - set(loaded.segments):
                self._load_into(loaded, collection, doc_id)
            return set(loaded.segments)

    def entry_ids(self, collection: str, doc_id: str) -> dict[str, list[str]]:
        """The ids a document's segment holds, per kind (for checks and tests)."""
        with self._lock:
            kinds = self._loaded(collection).segments.get(doc_id, {})
            return {kind: list(segment.ids) for kind, segment in kinds.items()}

    def drop_collection(self, collection: str) -> None:
        _check_name(collection)
        with self._lock:
            retire(self.root / collection)
            self._collections.pop(collection, None)

    def close(self) -> None:
        with self._lock:
            self._collections.clear()

    def _loaded(self, collection: str) -> _Collection:
        loaded = self._collections.get(collection)
        if loaded is None:
            _check_name(collection)
            loaded = _Collection()
            for doc_id in self._folders(collection):
                self._load_into(loaded, collection, doc_id)
            self._collections[collection] = loaded
        return loaded

    def _load_into(self, loaded: _Collection, collection: str, doc_id: str) -> None:
        folder = self.root / collection / doc_id
        try:
            ids = json.loads((folder / IDS_FILE).read_text(encoding="utf-8"))
            kinds: dict[str, Segment] = {k: Segment.load(folder, k, ids[k]) for k in KINDS}
        except (OSError, ValueError, KeyError):  # removed meanwhile by another process
            return
        loaded.put(doc_id, kinds)

    def _folders(self, collection: str) -> list[str]:
        folder = self.root / collection
        if not folder.is_dir():
            return []
        return [p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]

    def _doc_folder(self, collection: str, doc_id: str) -> Path:
        _check_name(collection)
        _check_name(doc_id)
        return self.root / collection / doc_id


@dataclass(frozen=True)
class _Found:
    """A segment's hits: rows, scores, and each row's document and place in it (for ties)."""

    segment: Segment
    rows: np.ndarray
    scores: np.ndarray
    doc_ids: tuple[str, ...]
    owner: np.ndarray  # index into doc_ids per row
    place: np.ndarray  # the row's position within its document


def _best(found: list[_Found], top_k: int) -> list[tuple[str, float]]:
    """The `top_k` best hits; ties go to the smaller document id, then the earlier entry."""
    if not found:
        return []
    scores = np.concatenate([f.scores for f in found])
    if not len(scores):
        return []
    rank = {d: i for i, d in enumerate(sorted({d for f in found for d in f.doc_ids}))}
    doc_rank = np.concatenate(
        [np.array([rank[d] for d in f.doc_ids], dtype=np.int64)[f.owner] for f in found]
    )
    place = np.concatenate([f.place for f in found])
    which = np.concatenate([np.full(len(f.rows), i) for i, f in enumerate(found)])
    rows = np.concatenate([f.rows for f in found])
    if len(scores) > top_k:  # only hits scoring at least the k-th best can be among the best
        kth = np.partition(scores, len(scores) - top_k)[len(scores) - top_k]
        keep = np.flatnonzero(scores >= kth)
        scores, doc_rank, place, which, rows = (
            a[keep] for a in (scores, doc_rank, place, which, rows)
        )
    best = np.lexsort((place, doc_rank, -scores))[:top_k]
    return [(found[which[i]].segment.ids[rows[i]], float(scores[i])) for i in best]


def _check_name(name: str) -> None:
    if not _SAFE_NAME.match(name):
        raise ValueError(f"{name!r} cannot name a keyword-index folder; use letters and digits.")
