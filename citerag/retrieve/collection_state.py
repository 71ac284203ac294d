"""What retrieval needs in memory for one collection, kept in step with the docstore by delta.

The state is an immutable snapshot of per-document parts (`DocState`): chunk places, pages and
their chunk ids, statement pages; its lookups (chunks and pages found through their document:
`doc_index`, the distinct topics, the document router) are built when it is made and carried to
the next snapshot by the same delta. Each question first asks the docstore's change record what
changed since the snapshot's generation (`citerag.store.journal`: one small query, nothing
listed); only documents that appeared or changed are loaded and only those that went are
dropped, so a document added through another process is found by the next question here, and
nothing reloads the whole collection. A document is loaded from the state the docstore keeps of
it, written by the first process that read its chunks (`doc_state_record`): a cold open reads
no chunk. A snapshot whose generation the journal no longer reaches lists the collection once.
Keyword search is the keyword index (`citerag.store.keywords`), kept in line with the docstore
one document at a time (`keyword_sync`).

Neither the enrichment lists (years, entities, labels...) nor the page head vectors are held: a
filter or an evidence signal on a list asks the docstore's value table which chunks carry the
values it names (`DocStore.chunks_carrying`, `values_carried`) and keeps those this snapshot
shows; the vector index's page collection is searched for the nearest pages
(`VectorIndex.pages`), and the docstore gives a page's head vector when a ranker asks for it.
So what a process holds per chunk does not grow with what enrichment found.

Memory per collection: benchmarks/state_memory.py measures it (the places as columns: about
0.12 KB per chunk, `doc_places`), plus the keyword index's own (bm25s files: memory-mapped,
`citerag.store.bm25_files`).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from llama_index.core.vector_stores.types import MetadataFilters

from citerag.domain import GENERIC, DomainVocabulary
from citerag.retrieve.doc_index import DocIndex, KeyPages, PageIds, Places
from citerag.retrieve.doc_state import COUNTED_FIELDS, DocState
from citerag.retrieve.doc_state_record import load_doc_states
from citerag.retrieve.filters import chunk_matches
from citerag.retrieve.keyword_sync import sync_keywords
from citerag.retrieve.known_values import ValueCounts, moved_counts, value_counts
from citerag.retrieve.page_evidence import PageKey, page_texts
from citerag.retrieve.place import PLACE_KEYS
from citerag.retrieve.routing import DocumentRouter
from citerag.store.base import DocStore, PageIndex
from citerag.store.journal import ChangeSet
from citerag.store.keywords import KeywordIndex, KeywordKind, KeywordQuery
from citerag.text.mentions import TopicMatcher, mentions_in
from citerag.types import DocumentCard, DocumentRecord

__all__ = ["PLACE_KEYS", "CollectionState", "PageKey", "Places", "page_texts", "refresh_state"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Indexes:
    """What a snapshot derives from its documents, carried to the next one by delta: nothing
    here is rebuilt from every chunk or page on a change."""

    lookup: DocIndex
    counts: dict[str, ValueCounts]  # COUNTED_FIELDS

    @classmethod
    def built(cls, docs: Mapping[str, DocState]) -> _Indexes:
        ordered = list(docs.values())
        counts = {key: value_counts(ordered, key) for key in COUNTED_FIELDS}
        return cls(DocIndex.built(docs), counts)

    def moved(
        self, docs: Mapping[str, DocState], gone: list[DocState], came: list[DocState]
    ) -> _Indexes:
        """These indexes for `docs`, by the delta: a pass over every chunk took over a second
        at 100k chunks on the first question after a change. The tables of distinct values
        are copied."""
        counts = {k: moved_counts(c, k, gone, came) for k, c in self.counts.items()}
        lookup = self.lookup.moved(docs, gone, came)
        return _Indexes(lookup, counts)


class CollectionState:
    """One collection's snapshot at one generation of the docstore's change record: every index
    is built when it is made, and nothing changes after, so questions on several threads read
    it without locks. Its enrichment lists are read from `docstore` (`carriers`)."""

    def __init__(
        self,
        name: str,
        docs: dict[str, DocState],
        keywords: KeywordIndex,
        docstore: DocStore,
        indexes: _Indexes | None = None,
        generation: int = 0,
        pages: PageIndex | None = None,
    ) -> None:
        self.name = name
        self.docs = dict(sorted(docs.items()))
        self.keywords = keywords
        self.docstore = docstore
        self.pages = pages  # the page head vectors' index (None: pages not ranked by vector)
        self.generation = generation
        self._indexes = indexes or _Indexes.built(self.docs)
        lookup = self._indexes.lookup
        self.places = Places(lookup)
        self.page_ids = PageIds(lookup)
        self.key_pages: Mapping[str, str] = KeyPages(lookup)  # page id -> its kind
        self._known: dict[str, tuple[str, ...]] = {}  # sorted when first asked
        self._matchers: dict[str, TopicMatcher] = {}
        self.router = _router(self.docs)  # routes questions to documents by their cards

    @property
    def is_empty(self) -> bool:
        return not self.places

    def mentions(self, key: str, text: str) -> list[str]:
        """The stored values of list field `key` that `text` names (`RankSource.mentions`):
        looked up in the docstore's value table, as the text writes them; a topic
        (`kind=value`) is named by its value, and every topic of that value is given."""
        if key not in COUNTED_FIELDS:
            return mentions_in(text, _CarriedValues(self.docstore, self.name, key))
        matcher = self._matchers.get(key)
        if matcher is None:  # built on the first question that asks (two threads: the same)
            matcher = self._matchers[key] = TopicMatcher(self.known_values(key))
        return matcher.mentions(text)

    def known_values(self, key: str) -> tuple[str, ...]:
        """The `distinct()` of a counted list field's stored values as written (sorted on the
        first question that asks; two threads asking at once sort it twice, to the same)."""
        known = self._known.get(key)
        if known is None:
            counts = self._indexes.counts.get(key)
            if counts is None:
                raise ValueError(
                    f"The snapshot keeps the distinct values of {', '.join(COUNTED_FIELDS)} "
                    f"only, not of {key!r}."
                )
            known = self._known[key] = tuple(sorted(counts))
        return known

    def matching(self, filters: MetadataFilters, pool: Collection[str] | None = None) -> set[str]:
        """Chunk ids (among `pool`, default all) whose place matches `filters`. Conditions on
        the enrichment lists (years, entities) are answered by the docstore's value table, so a
        question with a year costs no pass over every chunk."""
        return chunk_matches(filters, self.places, self.carriers, pool)

    def carriers(
        self, key: str, values: Sequence[str], partial: bool = False
    ) -> dict[str, set[str]]:
        """Each of `values` (case-folded) that this snapshot's chunks carry in list field
        `key` -> those chunks; with `partial`, the chunks carrying a value that contains it
        (`DocStore.chunks_carrying`, less the chunks of documents this snapshot does not show)."""
        found = self.docstore.chunks_carrying(self.name, key, values, partial)
        shown = {value: self._indexes.lookup.shown(ids) for value, ids in found.items()}
        return {value: ids for value, ids in shown.items() if ids}

    def chunks_of_documents(self, doc_ids: Iterable[str]) -> set[str]:
        return {c for d in doc_ids if d in self.docs for c in self.docs[d].places}

    @property
    def versions(self) -> dict[str, float]:
        return {doc_id: doc.version for doc_id, doc in self.docs.items()}

    @property
    def longest_document(self) -> int:
        """The most pages any ready document has (its record's count)."""
        return max((doc.page_count for doc in self.docs.values()), default=0)

    def page_keys(self) -> Iterator[PageKey]:
        """Every page's key, document by document."""
        for doc in self.docs.values():
            yield from doc.pages

    def page_key(self, page_id: str) -> PageKey:
        doc = self._indexes.lookup.doc_of_page(page_id)
        if doc is None:
            raise KeyError(page_id)
        row = doc.page_row(page_id)
        if row is None:
            raise KeyError(page_id)
        return doc.pages[row]

    def chunks_on(self, page_id: str) -> list[str]:
        """The page's chunk ids, in reading order (none for a page this snapshot lacks)."""
        doc = self._indexes.lookup.doc_of_page(page_id)
        return [] if doc is None else doc.chunk_ids.get(self.page_key(page_id), [])

    def page_vector_hits(
        self, vector: np.ndarray, top_k: int, allowed: Collection[str] | None = None
    ) -> list[str]:
        """The ids of the `top_k` pages of this snapshot (among `allowed`) whose head vectors
        are nearest `vector`, from the page index. A page without a head vector (a document
        stored before they were made) is not ranked by it; the other pages still are."""
        if self.pages is None or not self.page_ids:
            return []
        visible = self.page_ids
        among: Collection[str] = (
            visible if allowed is None else {p for p in allowed if p in visible}
        )
        hits = self.pages.search(self.name, vector, top_k, among)
        return [page_id for page_id, _ in hits]

    def keyword_hits(
        self, kind: KeywordKind, query: str, top_k: int, allowed: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """Keyword hits among this snapshot's chunks or pages (the index may already hold a
        document this snapshot does not show yet)."""
        visible: Collection[str] = self.places if kind == "chunk" else self.page_ids
        hits = self.keywords.search(self.name, KeywordQuery(kind, query, top_k, allowed))
        return [hit for hit in hits if hit[0] in visible]

    def at_generation(self, generation: int) -> CollectionState:
        """This snapshot, marked as current at `generation` (writes that changed nothing it
        shows: a document still being ingested elsewhere)."""
        moved = copy.copy(self)
        moved.generation = generation
        return moved

    def with_changes(
        self, loaded: list[DocState], dropped: Iterable[str], generation: int | None = None
    ) -> CollectionState:
        dropped = set(dropped)
        docs = {d: s for d, s in self.docs.items() if d not in dropped}
        for doc in loaded:
            docs[doc.doc_id] = doc
        docs = dict(sorted(docs.items()))
        gone = [self.docs[d] for d in dropped if d in self.docs]
        indexes = self._indexes.moved(docs, gone, loaded)
        at = self.generation if generation is None else generation
        return CollectionState(
            self.name, docs, self.keywords, self.docstore, indexes, at, self.pages
        )


@dataclass(frozen=True)
class _CarriedValues:
    """A list field's stored values, asked in the docstore (`citerag.text.mentions`)."""

    docstore: DocStore
    collection: str
    key: str

    def present(self, folded: Collection[str]) -> set[str]:
        return self.docstore.values_carried(self.collection, self.key, folded)


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
    pages: PageIndex | None = None,
) -> CollectionState:
    """`state` brought in line with the docstore's ready documents (itself when nothing
    changed); a None state is loaded whole (a cold open), and so is one the docstore's journal
    no longer reaches. `vocabulary` finds key pages; `pages` is the page index a new state
    searches (a state carries its own to the next)."""
    if state is not None:
        changes = docstore.changes_since(collection, state.generation)
        if changes is not None:
            return _applied(state, changes, docstore, keywords, vocabulary)
        log.info("%s: the change journal no longer reaches this state; listing it", collection)
    # The generation before the listing: a write between the two is applied again next time.
    generation = docstore.generation(collection)
    records = {r.doc_id: r for r in docstore.list_documents(collection)}
    current = state or CollectionState(collection, {}, keywords, docstore, pages=pages)
    have = current.versions
    load = [r for d, r in records.items() if have.get(d) != r.created_at]
    drop = [
        d for d, version in have.items() if d not in records or records[d].created_at != version
    ]
    sync_keywords(docstore, keywords, collection, [r.doc_id for r in load], None)
    loaded = _loaded(docstore, collection, load, vocabulary)
    return current.with_changes(loaded, drop, generation)


def _applied(
    state: CollectionState,
    changes: ChangeSet,
    docstore: DocStore,
    keywords: KeywordIndex,
    vocabulary: DomainVocabulary,
) -> CollectionState:
    """`state` with `changes`: the documents they name, and no other, loaded or dropped."""
    if changes.generation == state.generation:
        return state
    collection, have = state.name, state.docs
    load = [r for d, r in changes.ready.items() if d not in have or have[d].version != r.created_at]
    drop = [d for d in changes.unready if d in have] + [r.doc_id for r in load if r.doc_id in have]
    if load or changes.gone:
        sync_keywords(docstore, keywords, collection, [r.doc_id for r in load], changes.gone)
    if not load and not drop:
        return state.at_generation(changes.generation)
    loaded = _loaded(docstore, collection, load, vocabulary)
    return state.with_changes(loaded, drop, changes.generation)


def _loaded(
    docstore: DocStore, collection: str, records: list[DocumentRecord], vocabulary: DomainVocabulary
) -> list[DocState]:
    if not records:
        return []
    stored = docstore.get_cards(collection, [r.doc_id for r in records])
    cards = {d: DocumentCard.from_dict(card) for d, card in stored.items()}
    return load_doc_states(docstore, collection, records, vocabulary, cards)
