"""The embedded keyword index: one folder of .npy arrays and JSON per document (never pickle).

Layout: `<root>/<collection>/<doc_id>/` holds `ids.json` and, per kind ("chunk", "page"), the
arrays of a `Segment`. A document's folder is written under a hidden staging name and renamed
into place, so a writer killed half-way leaves nothing a reader sees (its staging copy is
removed by the next writer). Adding or removing a document touches that folder only; the
collection's statistics (entries and their total length per kind) change by that document's
share, and a term's document frequency is summed over the segments at search time.

Searching reads the collection's merged segment (`bm25_merged`: every document's segment
concatenated, rows in document-id order, a folder on disk that every process maps) plus the
documents added or replaced since it was merged, one by one; documents removed or replaced since
are hidden in it and taken out of its statistics. A new merge is due when more than MAX_LOOSE
documents were added or a quarter of its rows went, so a document added or deleted costs its
own segment, and a search one pass over the merged arrays rather than one per document. A due
merge runs in a background thread (one per collection folder across processes, under
`merge_lock`), so no search waits for it: searches go on over the previous merge and the
documents since, which score the same, until the new one is published. A process that finds a
newer merge on disk (written by another) takes it.

Memory of a serving process, bounded and stated: the merged arrays are mapped, not read (their
pages live in the page cache, shared by the processes that map them and dropped by the kernel
under pressure); documents searched one by one are read on demand into a cache of at most
`cache_mib` MiB, least recently used out first; and per document of the collection its folder's
version and its entries and total length per kind (about 1 KB with the merge's own table, not
per entry: 0.4 MiB for 334 documents of 100,000 chunks, benchmarks/keyword_memory.py). A merge
holds one document, up to 16 MiB of postings and one 64th of them at a time (bm25_merge_writer);
a search holds the segments of the documents it reads one by one while it runs, which while a
merge is under way are those added since the previous one.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from citerag.store.atomic_dirs import remove_dead_copies, retire, swap_in
from citerag.store.bm25_cache import SegmentCache
from citerag.store.bm25_collection import Doc, KnownCollection, Stats, View
from citerag.store.bm25_merge_writer import merge_lock, write_merged
from citerag.store.bm25_merged import (
    FORMAT,
    IDS_FILE,
    MERGED,
    Version,
    document_folders,
    empty_merged,
    folder_version,
    open_merged,
    read_document,
    read_stats,
)
from citerag.store.bm25_ranking import best_hits, hidden_freqs
from citerag.store.bm25_segment import Segment, hashes_of, lucene_idf
from citerag.store.keywords import KINDS, KeywordEntry, KeywordQuery
from citerag.text.tokens import tokenize

MAX_LOOSE = 32  # documents searched one by one before the merged segment is made again
DEFAULT_CACHE_MIB = 64.0
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
log = logging.getLogger(__name__)


class _Stopped(Exception):
    """The index closed or the collection was dropped while its merge ran."""


class BM25FilesIndex:
    """`KeywordIndex` over per-document segment folders under `root`; `cache_mib` bounds the
    segments kept in memory between searches."""

    def __init__(self, root: Path, cache_mib: float = DEFAULT_CACHE_MIB) -> None:
        self.root = root
        self._lock = threading.RLock()
        self._collections: dict[str, KnownCollection] = {}
        self._cache = SegmentCache(int(cache_mib * 2**20))

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
        written = folder_version(staging)
        with self._lock:
            swap_in(staging, folder)
            loaded = self._loaded(collection)
            self._take(loaded, collection, doc_id)
            doc = loaded.docs.get(doc_id)
            if doc is not None and doc.version == written:  # not replaced meanwhile
                self._cache.put((collection, doc_id, written), kinds)
            self._merge_if_due(collection, loaded, loaded.due(loaded.merged, MAX_LOOSE))

    def remove_document(self, collection: str, doc_id: str) -> None:
        folder = self._doc_folder(collection, doc_id)
        with self._lock:
            retire(folder)
            loaded = self._collections.get(collection)
            if loaded is not None:
                loaded.drop(doc_id)
                self._merge_if_due(collection, loaded, loaded.due(loaded.merged, MAX_LOOSE))

    def search(self, collection: str, query: KeywordQuery) -> list[tuple[str, float]]:
        kind, top_k, allowed_ids = query.kind, query.top_k, query.allowed_ids
        tokens = tokenize(query.text)
        if top_k < 1 or not tokens:
            return []
        with self._lock:
            loaded = self._loaded(collection)
            view, loose = self._view(collection, loaded, kind)
            entries, length = loaded.entries[kind], loaded.length[kind]
        if not entries:
            return []
        unique, order = np.unique(hashes_of(tokens), return_inverse=True)
        merged = view.merged.segments[kind]
        hidden = [view.merged.span(kind, d) for d in view.gone]
        parts = [(merged, merged.columns(unique))]
        parts += [(segment, segment.columns(unique)) for _, segment in loose]
        df = np.sum([s.doc_freqs(c) for s, c in parts], axis=0) - hidden_freqs(
            merged, parts[0][1], hidden
        )
        idf = lucene_idf(np.asarray(df).reshape(-1), entries)
        average = np.float64(length / entries)
        owners = [(view.merged.doc_order, view.merged.starts(kind)[:-1])]
        owners += [((doc_id,), np.zeros(1, dtype=np.int64)) for doc_id, _ in loose]
        scored = []
        for (segment, cols), (doc_ids, starts) in zip(parts, owners, strict=True):
            if not (cols >= 0).any():
                continue
            scores = segment.scores(cols, order.reshape(-1), idf, average)
            if segment is merged:
                for start, end in hidden:
                    scores[start:end] = 0
            scored.append((segment, scores, doc_ids, starts))
        hits = best_hits(scored, top_k, allowed_ids, exact=False)
        if allowed_ids is not None and any(i not in allowed_ids for i, _ in hits):
            hits = best_hits(scored, top_k, allowed_ids, exact=True)  # a hash let another id by
        return hits

    def doc_ids(self, collection: str) -> set[str]:
        """The documents whose folders are on disk now (those another process wrote too)."""
        with self._lock:
            loaded = self._loaded(collection)
            on_disk = document_folders(self.root / collection)
            for gone in set(loaded.docs) - set(on_disk):
                loaded.drop(gone)
            for doc_id, version in on_disk.items():
                self._take(loaded, collection, doc_id, version)
            return set(loaded.docs)

    def doc_ids_among(self, collection: str, doc_ids: Iterable[str]) -> set[str]:
        """Which of `doc_ids` have folders on disk now, reading theirs only (and taking in a
        version another process wrote)."""
        asked = {d for d in doc_ids if _SAFE_NAME.match(d)}  # no other name has a folder
        with self._lock:
            loaded = self._loaded(collection)
            for doc_id in asked:
                self._take(loaded, collection, doc_id)
            return {d for d in asked if d in loaded.docs}

    def entry_ids(self, collection: str, doc_id: str) -> dict[str, list[str]]:
        """The ids a document's segment holds, per kind (for checks and tests)."""
        with self._lock:
            if doc_id not in self._loaded(collection).docs:
                return {}
            kinds = self._segments(collection, doc_id)
        return {kind: list(segment.ids) for kind, segment in (kinds or {}).items()}

    @property
    def cached_bytes(self) -> int:
        """The bytes of document segments kept between searches (at most `cache_mib` MiB)."""
        return self._cache.bytes

    def drop_collection(self, collection: str) -> None:
        _check_name(collection)
        with self._lock:
            loaded = self._collections.pop(collection, None)
        self._join(loaded)  # its merge stops before the folder goes
        with self._lock:
            retire(self.root / collection)
            self._collections.pop(collection, None)
            self._cache.discard_collection(collection)

    def wait_for_merges(self, timeout: float | None = None) -> bool:
        """Wait until the merges this index runs in the background are published (for tests,
        benchmarks and a stop that wants them on disk); False if one still runs at `timeout`."""
        with self._lock:
            running = [c.merging for c in self._collections.values() if c.merging is not None]
        for thread in running:
            thread.join(timeout)
        return not any(thread.is_alive() for thread in running)

    def close(self) -> None:
        """Forget what is loaded. A merge under way stops at its next document, its staging
        folder removed, or, once past its last, publishes a whole merge first."""
        with self._lock:
            loaded = list(self._collections.values())
            self._collections.clear()
            self._cache = SegmentCache(self._cache.max_bytes)
        for known in loaded:
            self._join(known)

    def _join(self, loaded: KnownCollection | None) -> None:
        with self._lock:
            thread = None if loaded is None else loaded.merging
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _loaded(self, collection: str) -> KnownCollection:
        loaded = self._collections.get(collection)
        if loaded is None:
            _check_name(collection)
            merged = open_merged(self.root / collection / MERGED) or empty_merged()
            loaded = KnownCollection(merged)
            for doc_id, version in document_folders(self.root / collection).items():
                self._take(loaded, collection, doc_id, version)
            self._collections[collection] = loaded
        return loaded

    def _take(
        self, loaded: KnownCollection, collection: str, doc_id: str, seen: Version | None = None
    ) -> None:
        """The document as its folder is now (`seen`: its version as just listed): its
        statistics read when its version is new, from the merge when it was merged."""
        known = loaded.docs.get(doc_id)
        if seen is not None and known is not None and known.version == seen:
            return
        merged = loaded.merged
        if seen is not None and merged.versions.get(doc_id) == seen:
            at = merged.place[doc_id]
            merged_stats: Stats = {
                k: (int(merged.rows[k][at]), int(merged.lengths[k][at])) for k in KINDS
            }
            loaded.put(doc_id, Doc(seen, merged_stats))
            return
        try:
            version, stats = read_stats(self.root / collection / doc_id)
        except (OSError, ValueError, KeyError):  # not there (removed by another process)
            loaded.drop(doc_id)
            return
        loaded.put(doc_id, Doc(version, stats))

    def _view(
        self, collection: str, loaded: KnownCollection, kind: str
    ) -> tuple[View, list[tuple[str, Segment]]]:
        """The kind's view (over a newer merge on disk when there is one; a merge started when
        due), and the segments of its loose documents, read on demand."""
        while True:
            view = loaded.views.get(kind) or self._fresh_view(collection, loaded, kind)
            loaded.views[kind] = view
            loose = []
            for doc_id in view.loose:
                kinds = self._segments(collection, doc_id)
                if kinds is None:  # replaced or removed by another process: take that in
                    break
                loose.append((doc_id, kinds[kind]))
            else:
                return view, loose

    def _fresh_view(self, collection: str, loaded: KnownCollection, kind: str) -> View:
        """The kind's view over the newest usable merge; when it is due, a merge starts in the
        background and this search (and the next ones) read the view as it is meanwhile."""
        self._take_newer_merge(collection, loaded)
        view = loaded.view_of(loaded.merged, kind, MAX_LOOSE)
        self._merge_if_due(collection, loaded, view.due)
        return view

    def _merge_if_due(self, collection: str, loaded: KnownCollection, due: bool) -> None:
        """A merge started in the background when one is due and none runs: by a writer as it
        adds or removes (so a serving process rarely opens a collection with many documents
        unmerged), or by a search."""
        if due and loaded.merging is None:
            # A daemon: an exit mid-merge leaves a staging folder (removed by the next writer),
            # never a part of one where `.merged` is.
            merging = threading.Thread(target=self._merge, args=(collection, loaded), daemon=True)
            loaded.merging = merging
            merging.start()

    def _take_newer_merge(self, collection: str, loaded: KnownCollection) -> None:
        """The merge on disk, when another process (or index) wrote one this process can use
        without calling for another at once."""
        folder = self.root / collection / MERGED
        try:
            on_disk = folder_version(folder)
        except OSError:
            return
        if on_disk != loaded.merged.key:
            newer = open_merged(folder)
            if newer is not None and not loaded.due(newer, MAX_LOOSE):
                loaded.publish(newer)

    def _merge(self, collection: str, loaded: KnownCollection) -> None:
        """Merge every document's segments while a merge is due (on disk for every process,
        then searched here), one merger per collection folder; runs in its own thread."""
        try:
            with merge_lock(
                self.root / collection, lambda: self._current(collection, loaded)
            ) as held:
                while held:
                    with self._lock:
                        if not self._current(collection, loaded):
                            break
                        self._take_newer_merge(collection, loaded)
                        if not loaded.due(loaded.merged, MAX_LOOSE):
                            loaded.merging = None  # in the lock: a search after this starts one
                            return
                        doc_ids = sorted(loaded.docs)
                    merged = write_merged(
                        self.root / collection, self._parts(collection, loaded, doc_ids)
                    )
                    with self._lock:
                        if self._current(collection, loaded):
                            loaded.publish(merged)
        except _Stopped:
            pass
        except Exception:  # a search goes on over the previous merge; the next change retries
            log.exception("merging keyword collection %r failed", collection)
        with self._lock:
            loaded.merging = None

    def _current(self, collection: str, loaded: KnownCollection) -> bool:
        """Whether `loaded` is still this index's (not closed, the collection not dropped)."""
        return self._collections.get(collection) is loaded  # one dict read: no lock needed

    def _parts(
        self, collection: str, loaded: KnownCollection, doc_ids: list[str]
    ) -> Iterator[tuple[str, Version, dict[str, Segment]]]:
        """Each document's segments in doc-id order, read one at a time from its folder, in the
        version it has when read: a search compares versions, so one replaced or removed
        meanwhile (by this process or another) is searched one by one, its merged rows hidden.
        The lock is taken only to take in such a change, so that a search reading many
        documents (holding the lock) does not hold the merge up."""
        for doc_id in doc_ids:
            if not self._current(collection, loaded):
                raise _Stopped
            known = loaded.docs.get(doc_id)
            try:
                version, kinds = read_document(self.root / collection / doc_id)
            except (OSError, ValueError, KeyError):  # removed meanwhile: merged without it
                version, kinds = None, None
            if known is None or version != known.version:
                with self._lock:  # as on disk now, or the next merge would find it due again
                    self._take(loaded, collection, doc_id)
            if kinds is not None and version is not None:
                yield doc_id, version, kinds

    def _segments(
        self, collection: str, doc_id: str, keep: bool = True
    ) -> dict[str, Segment] | None:
        """The document's segments at the version this process knows, from the cache or its
        folder (kept in the cache when `keep`); None, and the collection told, when its folder
        changed or went meanwhile."""
        loaded = self._collections[collection]
        version = loaded.docs[doc_id].version
        kinds = self._cache.get((collection, doc_id, version))
        if kinds is not None:
            return kinds
        try:
            found, kinds = read_document(self.root / collection / doc_id)
        except (OSError, ValueError, KeyError):
            loaded.drop(doc_id)
            return None
        if found != version:
            self._take(loaded, collection, doc_id)
            return None
        if keep:
            self._cache.put((collection, doc_id, version), kinds)
        return kinds

    def _doc_folder(self, collection: str, doc_id: str) -> Path:
        _check_name(collection)
        _check_name(doc_id)
        return self.root / collection / doc_id


def _check_name(name: str) -> None:
    if not _SAFE_NAME.match(name):
        raise ValueError(f"{name!r} cannot name a keyword-index folder; use letters and digits.")
