"""What a process knows of one collection of the keyword index: its documents' folder versions
and statistics, their totals per kind, the merged segment it searches, and the view a search
of a kind reads (that merge, the documents searched one by one, the merged rows hidden).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from citerag.store.bm25_merged import Merged, Version
from citerag.store.keywords import KINDS

Stats = dict[str, tuple[int, int]]  # kind -> (entries, their total length)


@dataclass(frozen=True)
class Doc:
    version: Version
    stats: Stats


@dataclass(frozen=True)
class View:
    """What one search of a kind reads: the merged segment, documents added or replaced since
    it was merged (searched one by one), merged documents since removed or replaced, and
    whether enough changed that a new merge is due (searched as it is until one is made)."""

    merged: Merged
    loose: list[str]
    gone: list[str]
    due: bool


@dataclass
class KnownCollection:
    """One collection as this process knows it; the index's lock guards every field."""

    merged: Merged
    docs: dict[str, Doc] = field(default_factory=dict)
    entries: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    length: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    views: dict[str, View] = field(default_factory=dict)  # per kind, until the next change
    merging: threading.Thread | None = None  # the index's merge of it, while one runs

    def put(self, doc_id: str, doc: Doc) -> None:
        if self.docs.get(doc_id) == doc:
            return
        self.drop(doc_id)
        self.docs[doc_id] = doc
        for kind, (entries, length) in doc.stats.items():
            self.entries[kind] += entries
            self.length[kind] += length
        self.views.clear()

    def drop(self, doc_id: str) -> None:
        doc = self.docs.pop(doc_id, None)
        if doc is None:
            return
        for kind, (entries, length) in doc.stats.items():
            self.entries[kind] -= entries
            self.length[kind] -= length
        self.views.clear()

    def publish(self, merged: Merged) -> None:
        """Search `merged` from now on (searches under way keep the one they hold)."""
        self.merged = merged
        self.views.clear()

    def view_of(self, merged: Merged, kind: str, max_loose: int) -> View:
        """The kind's view over `merged`; due once the documents added since pass `max_loose`
        or the rows removed since pass a quarter of it."""
        versions = merged.versions
        loose = [
            d
            for d, doc in sorted(self.docs.items())
            if doc.stats[kind][0] and versions.get(d) != doc.version
        ]
        rows = merged.rows[kind]
        gone = [
            d
            for d, version in versions.items()
            if rows[merged.place[d]] and getattr(self.docs.get(d), "version", None) != version
        ]
        gone_rows = sum(int(rows[merged.place[d]]) for d in gone)
        due = len(loose) > max_loose or gone_rows * 4 > max(int(rows.sum()), 1)
        return View(merged, loose, gone, due)

    def due(self, merged: Merged, max_loose: int) -> bool:
        """Whether a search of any kind over `merged` would call for a new merge."""
        return any(self.view_of(merged, kind, max_loose).due for kind in KINDS)
