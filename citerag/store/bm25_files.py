"""The embedded keyword index: one folder of .npy arrays and JSON per document (never pickle).

Layout: `<root>/<collection>/<doc_id>/` holds `ids.json` and, per kind ("chunk", "page"), the
arrays of a `Segment`. A document's folder is written under a hidden staging name and renamed
into place, so a writer killed half-way leaves nothing a reader sees (its staging copy is
removed by the next writer). Adding or removing a document touches that folder only; the
collection's statistics (entries and their total length per kind) change by that document's
share, and a term's document frequency is summed over the segments at search time.

Memory: every segment of an opened collection is held (about 8-12 bytes per distinct term of an
entry, plus the entry ids); nothing else is kept per entry.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from citerag.store.atomic_dirs import remove_dead_copies, retire, swap_in
from citerag.store.bm25_index import tokenize
from citerag.store.bm25_segment import Segment, hashes_of, lucene_idf
from citerag.store.keywords import KINDS, KeywordEntry, KeywordKind

IDS_FILE = "ids.json"
FORMAT = 1
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


@dataclass
class _Collection:
    """The loaded segments of one collection, by document, and their totals per kind."""

    segments: dict[str, dict[str, Segment]] = field(default_factory=dict)
    entries: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    length: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    ordered: list[tuple[str, dict[str, Segment]]] | None = None  # by doc id, rebuilt on change

    def put(self, doc_id: str, kinds: dict[str, Segment]) -> None:
        self.drop(doc_id)
        self.segments[doc_id] = kinds
        for kind, segment in kinds.items():
            self.entries[kind] += len(segment)
            self.length[kind] += segment.total_length
        self.ordered = None

    def drop(self, doc_id: str) -> None:
        kinds = self.segments.pop(doc_id, None)
        for kind, segment in (kinds or {}).items():
            self.entries[kind] -= len(segment)
            self.length[kind] -= segment.total_length
        self.ordered = None

    def in_order(self) -> list[tuple[str, dict[str, Segment]]]:
        if self.ordered is None:
            self.ordered = sorted(self.segments.items())
        return self.ordered


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

    def search(
        self,
        collection: str,
        kind: KeywordKind,
        query: str,
        top_k: int,
        allowed_ids: Collection[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Ties are broken by document id, then by the entry's place in its document."""
        tokens = tokenize(query)
        if top_k < 1 or not tokens:
            return []
        with self._lock:
            loaded = self._loaded(collection)
            segments = [kinds[kind] for _, kinds in loaded.in_order() if len(kinds[kind])]
            entries, length = loaded.entries[kind], loaded.length[kind]
        if not entries:
            return []
        unique, order = np.unique(hashes_of(tokens), return_inverse=True)
        columns = [segment.columns(unique) for segment in segments]
        df = np.sum([s.doc_freqs(c) for s, c in zip(segments, columns, strict=True)], axis=0)
        idf = lucene_idf(np.asarray(df).reshape(-1), entries)
        average = np.float64(length / entries)
        found: list[tuple[Segment, np.ndarray, np.ndarray]] = []
        for segment, cols in zip(segments, columns, strict=True):
            if not (cols >= 0).any():
                continue
            scores = segment.scores(cols, order.reshape(-1), idf, average)
            rows = np.flatnonzero(scores > 0)
            if allowed_ids is not None:
                rows = np.array([r for r in rows if segment.ids[r] in allowed_ids], dtype=int)
            found.append((segment, rows, scores[rows]))
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


def _best(
    found: list[tuple[Segment, np.ndarray, np.ndarray]], top_k: int
) -> list[tuple[str, float]]:
    """The `top_k` best (segment, row) pairs; a stable sort keeps segment then row order."""
    if not found:
        return []
    scores = np.concatenate([s for _, _, s in found])
    owner = np.concatenate([np.full(len(rows), i) for i, (_, rows, _) in enumerate(found)])
    rows = np.concatenate([rows for _, rows, _ in found])
    best = np.argsort(-scores, kind="stable")[:top_k]
    return [(found[owner[i]][0].ids[rows[i]], float(scores[i])) for i in best]


def _check_name(name: str) -> None:
    if not _SAFE_NAME.match(name):
        raise ValueError(f"{name!r} cannot name a keyword-index folder; use letters and digits.")
