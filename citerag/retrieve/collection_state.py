"""What retrieval needs in memory for one collection, kept in step with the docstore by delta.

The state is an immutable snapshot of per-document parts (`DocState`): chunk places, pages and
their chunk ids, statement pages, page head vectors; its lookups (chunk places, the value
indexes of `INDEXED_FIELDS`, the document router) are built when it is made and carried to the
next snapshot by the same delta. Each question first asks the docstore which
documents are ready (ids and `created_at`, one small query); only documents that appeared or
changed are loaded (without their text) and only those that went are dropped, so a document
added through another process is found by the next question here, and nothing reloads the whole
collection. Keyword search is the keyword index (`citerag.store.keywords`), kept in line with
the docstore one document at a time (`keyword_sync`).

Memory per collection (measured: benchmarks/state_memory.py, 10,200 chunks of 10-K text): about
1.4 KB per chunk, its page's share included (the place and its lookup entry, the value indexes;
per page its key, chunk ids and a 384-dimension float32 head vector), plus the keyword index's
own (bm25s files: its segments are held in memory).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
from llama_index.core.vector_stores.types import MetadataFilters

from citerag.domain import GENERIC, DomainVocabulary
from citerag.enrich.fields import ENTITIES, TOPICS, YEARS
from citerag.retrieve.doc_state import PLACE_KEYS, DocState, Place, load_doc_state
from citerag.retrieve.filters import indexed_matches, matches
from citerag.retrieve.keyword_sync import sync_keywords
from citerag.retrieve.page_evidence import PageKey, page_texts
from citerag.retrieve.routing import DocumentRouter
from citerag.store.base import DocStore
from citerag.store.keywords import KeywordIndex, KeywordKind, KeywordQuery
from citerag.types import DocumentCard

__all__ = ["PLACE_KEYS", "CollectionState", "PageKey", "PageSet", "page_texts", "refresh_state"]

# The list fields whose inverted index (value -> chunk ids) a snapshot holds: what the
# evidence signals and a sub-question's filters read on every question. Another field's is
# built when asked and not kept.
INDEXED_FIELDS = (YEARS, ENTITIES, TOPICS)
# The list fields whose distinct values a snapshot holds (the names a question may mention).
COUNTED_FIELDS = (ENTITIES, TOPICS)
ValueIndex = dict[str, set[str]]  # case-folded value -> ids of the chunks that carry it
ValueCounts = dict[str, int]  # value as written -> chunks that carry it


class Places(Mapping[str, Place]):
    """Chunk id -> place over every document, iterated in document-id order."""

    def __init__(self, docs: list[DocState], index: dict[str, Place] | None = None) -> None:
        self._docs = docs
        if index is None:
            index = {cid: place for doc in docs for cid, place in doc.places.items()}
        self._index = index

    def __getitem__(self, chunk_id: str) -> Place:
        return self._index[chunk_id]

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._index

    def __iter__(self) -> Iterator[str]:
        for doc in self._docs:
            yield from doc.places

    def __len__(self) -> int:
        return len(self._index)

    def moved(self, docs: list[DocState], gone: list[DocState], came: list[DocState]) -> Places:
        """The places of `docs`: these less `gone`'s chunks, with `came`'s (a copy of the
        lookup, not a pass over every document)."""
        index = dict(self._index)
        for doc in gone:
            for chunk_id in doc.places:
                index.pop(chunk_id, None)
        for doc in came:
            index.update(doc.places)
        return Places(docs, index)


@dataclass(frozen=True)
class PageSet:
    keys: list[PageKey]
    chunk_ids: dict[PageKey, list[str]]
    vectors: np.ndarray | None  # one normalized head vector per key, or None when absent
    statement_ids: frozenset[str] = frozenset()  # the domain's key pages (a filing's statements)
    statement_kinds: Mapping[str, str] = field(default_factory=dict)  # key page id -> kind

    def position(self) -> dict[str, int]:
        return {key.id: i for i, key in enumerate(self.keys)}


@dataclass(frozen=True)
class _Indexes:
    """What a snapshot derives from its documents, carried to the next one by delta."""

    places: Places
    values: dict[str, ValueIndex]  # INDEXED_FIELDS
    counts: dict[str, ValueCounts]  # COUNTED_FIELDS

    @classmethod
    def built(cls, docs: list[DocState]) -> _Indexes:
        values = {key: _value_index(docs, key) for key in INDEXED_FIELDS}
        counts = {key: _value_counts(docs, key) for key in COUNTED_FIELDS}
        return cls(Places(docs), values, counts)

    def moved(self, docs: list[DocState], gone: list[DocState], came: list[DocState]) -> _Indexes:
        """These indexes for `docs`, by the delta: a pass over every chunk took over a second
        at 100k chunks on the first question after a change."""
        values = {k: _moved_values(v, k, gone, came) for k, v in self.values.items()}
        counts = {k: _moved_counts(c, k, gone, came) for k, c in self.counts.items()}
        return _Indexes(self.places.moved(docs, gone, came), values, counts)


class CollectionState:
    """One collection's snapshot: every index is built when it is made, and nothing changes
    after, so questions on several threads read it without locks."""

    def __init__(
        self,
        name: str,
        docs: dict[str, DocState],
        keywords: KeywordIndex,
        indexes: _Indexes | None = None,
    ) -> None:
        self.name = name
        self.docs = dict(sorted(docs.items()))
        self.keywords = keywords
        ordered = list(self.docs.values())
        self._indexes = indexes or _Indexes.built(ordered)
        self.places: Places = self._indexes.places
        self.pages = _page_set(ordered)
        self._page_of_key = {key.id: key for key in self.pages.keys}
        # Each page's head vector where its document has them (held since the snapshot loaded).
        self._heads = {
            key.id: (doc.vectors, row)
            for doc in ordered
            if doc.vectors is not None
            for row, key in enumerate(doc.pages)
        }
        self._known = {key: tuple(sorted(c)) for key, c in self._indexes.counts.items()}
        self.router = _router(self.docs)  # routes questions to documents by their cards

    @property
    def is_empty(self) -> bool:
        return not self.places

    @property
    def known_entities(self) -> tuple[str, ...]:
        """The `distinct()` of stored entity values."""
        return self.known_values(ENTITIES)

    def known_values(self, key: str) -> tuple[str, ...]:
        """The `distinct()` of a list field's stored values as written."""
        known = self._known.get(key)
        if known is None:
            return tuple(sorted(_value_counts(self.docs.values(), key)))
        return known

    def matching(self, filters: MetadataFilters, pool: Collection[str] | None = None) -> set[str]:
        """Chunk ids (among `pool`, default all) whose place matches `filters`. Filters on the
        enrichment lists (years, entities) are read from per-field inverted indexes, so a
        question with a year costs no pass over every chunk."""
        found = indexed_matches(filters, self.value_index)
        if found is not None:
            return found if pool is None else found.intersection(pool)
        source = self.places.keys() if pool is None else pool
        return {cid for cid in source if matches(self.places[cid], filters)}

    def value_index(self, key: str) -> Mapping[str, set[str]]:
        """A list field's case-folded values -> the ids of the chunks that carry each."""
        index = self._indexes.values.get(key)
        return _value_index(self.docs.values(), key) if index is None else index

    def chunks_of_documents(self, doc_ids: Iterable[str]) -> set[str]:
        return {c for d in doc_ids if d in self.docs for c in self.docs[d].places}

    @property
    def versions(self) -> dict[str, float]:
        return {doc_id: doc.version for doc_id, doc in self.docs.items()}

    def page_key(self, page_id: str) -> PageKey:
        return self._page_of_key[page_id]

    def head_vector(self, page: PageKey) -> np.ndarray | None:
        """The page's head vector, or None when its document has none."""
        found = self._heads.get(page.id)
        return None if found is None else found[0][found[1]]

    def keyword_hits(
        self, kind: KeywordKind, query: str, top_k: int, allowed: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """Keyword hits among this snapshot's chunks or pages (the index may already hold a
        document this snapshot does not show yet)."""
        visible: Collection[str] = self.places if kind == "chunk" else self._page_of_key
        hits = self.keywords.search(self.name, KeywordQuery(kind, query, top_k, allowed))
        return [hit for hit in hits if hit[0] in visible]

    def changed(self, wanted: dict[str, float]) -> tuple[list[str], list[str]]:
        """Documents to load (new or ingested again) and to drop, to match `wanted`."""
        have = self.versions
        load = [d for d, version in wanted.items() if have.get(d) != version]
        drop = [d for d, version in have.items() if wanted.get(d) != version]
        return load, drop

    def with_changes(self, loaded: list[DocState], dropped: list[str]) -> CollectionState:
        docs = {d: s for d, s in self.docs.items() if d not in dropped}
        for doc in loaded:
            docs[doc.doc_id] = doc
        ordered = [docs[d] for d in sorted(docs)]
        gone = [self.docs[d] for d in dropped if d in self.docs]
        indexes = self._indexes.moved(ordered, gone, loaded)
        return CollectionState(self.name, docs, self.keywords, indexes)


def _router(docs: Mapping[str, DocState]) -> DocumentRouter:
    names = {}
    for doc_id, doc in docs.items():
        first = next(iter(doc.places.values()), None)
        names[doc_id] = first.doc_name if first is not None else doc_id
    return DocumentRouter({d: doc.card for d, doc in docs.items()}, names)


def refresh_state(
    state: CollectionState | None,
    docstore: DocStore,
    keywords: KeywordIndex,
    collection: str,
    vocabulary: DomainVocabulary = GENERIC,
) -> CollectionState:
    """`state` brought in line with the docstore's ready documents (itself when nothing
    changed); a None state is loaded whole (a cold open). `vocabulary` finds key pages."""
    wanted = {r.doc_id: r.created_at for r in docstore.list_documents(collection)}
    cold = state is None
    current = state or CollectionState(collection, {}, keywords)
    load, drop = current.changed(wanted)
    if not load and not drop and not cold:
        return current
    sync_keywords(docstore, keywords, collection, load, None if cold else drop)
    cards = _stored_cards(docstore, collection) if load else {}
    loaded = [
        load_doc_state(docstore, collection, d, wanted[d], vocabulary, cards.get(d)) for d in load
    ]
    return current.with_changes(loaded, drop)


def _stored_cards(docstore: DocStore, collection: str) -> dict[str, DocumentCard]:
    return {d: DocumentCard.from_dict(c) for d, c in docstore.get_cards(collection).items()}


def _carried(docs: Iterable[DocState], key: str) -> Iterator[tuple[str, str]]:
    """(chunk id, value as written) for every value of list field `key` in `docs`' chunks."""
    for doc in docs:
        for chunk_id, place in doc.places.items():
            for value in place[key]:
                yield chunk_id, str(value)


def _value_index(docs: Iterable[DocState], key: str) -> ValueIndex:
    index: dict[str, set[str]] = defaultdict(set)
    for chunk_id, value in _carried(docs, key):
        index[value.casefold()].add(chunk_id)
    return dict(index)


def _value_counts(docs: Iterable[DocState], key: str) -> ValueCounts:
    counts: dict[str, int] = defaultdict(int)
    for _, value in _carried(docs, key):
        counts[value] += 1
    return dict(counts)


def _moved_values(
    values: dict[str, set[str]], key: str, gone: list[DocState], came: list[DocState]
) -> dict[str, set[str]]:
    """`values` (case-folded value -> chunk ids) without `gone`'s chunks and with `came`'s. The
    sets it changes are copied first: the older snapshot may still be answering a question."""
    moved = dict(values)
    copied: set[str] = set()

    def own(value: str) -> set[str]:
        if value not in copied:
            moved[value] = set(moved.get(value, ()))
            copied.add(value)
        return moved[value]

    for chunk_id, value in _carried(gone, key):
        own(value.casefold()).discard(chunk_id)
    for chunk_id, value in _carried(came, key):
        own(value.casefold()).add(chunk_id)
    for value in copied:
        if not moved[value]:
            del moved[value]
    return moved


def _moved_counts(
    counts: dict[str, int], key: str, gone: list[DocState], came: list[DocState]
) -> dict[str, int]:
    """`counts` (value as written -> chunks carrying it) without `gone` and with `came`."""
    moved = dict(counts)
    for _, value in _carried(gone, key):
        moved[value] -= 1
        if not moved[value]:
            del moved[value]
    for _, value in _carried(came, key):
        moved[value] = moved.get(value, 0) + 1
    return moved


def _page_set(docs: list[DocState]) -> PageSet:
    keys = [key for doc in docs for key in doc.pages]
    chunk_ids = {key: ids for doc in docs for key, ids in doc.chunk_ids.items()}
    statements = frozenset(s for doc in docs for s in doc.statement_ids)
    kinds = {page: kind for doc in docs for page, kind in doc.statement_kinds.items()}
    parts = [doc.vectors for doc in docs]
    vectors = None
    if parts and all(p is not None for p in parts):
        vectors = np.concatenate([p for p in parts if p is not None])
    return PageSet(keys, chunk_ids, vectors, statements, kinds)
