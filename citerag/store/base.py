"""The storage seams: a docstore for text and relations, a vector index for ids and vectors,
and the `Stores` bundle of them with the keyword index (`citerag.store.keywords`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import MetadataFilters

from citerag.errors import InputError
from citerag.store.journal import ChangeSet
from citerag.store.keywords import KeywordIndex
from citerag.types import DocumentRecord, JSONObject


@dataclass
class VectorRow:
    """One row of the vector index: the chunk id, its vector and the scalars filters need."""

    chunk_id: str
    vector: np.ndarray
    doc_id: str
    doc_name: str
    page: int
    node_type: str
    section: str
    label: str
    preview: str  # the first characters of the chunk text, for Attu
    # Enrichment's list fields (`enrich.fields.LIST_FIELDS`) the search filters on; `lists_cut`:
    # some value was left out of the index's bounded columns (`store.milvus_lists`).
    lists: dict[str, list[str]] = field(default_factory=dict)
    lists_cut: bool = False


@dataclass(frozen=True, eq=False)  # arrays have no plain equality
class PageRow:
    """One page's head vector (its title, period and first rows) as the page index keeps it."""

    page_id: str  # `citerag.nodes.page_vector_key`
    doc_id: str
    page: int
    vector: np.ndarray  # normalized


@dataclass(frozen=True, eq=False)  # arrays have no plain equality
class VectorQuery:
    """One vector search: per row of `vectors`, the best `top_k` rows among those `filters`
    match (keys: the chunk metadata the index keeps as fields) and, when given, among
    `node_ids` (as LlamaIndex's `VectorStoreQuery` has them)."""

    vectors: np.ndarray
    top_k: int
    filters: MetadataFilters | None = None
    node_ids: Sequence[str] | None = None


@dataclass(frozen=True)
class PageRange:
    first: int
    last: int


def parse_page_range(text: str) -> PageRange:
    """'A-B' or 'N' as a page range; an InputError with the sentence the API answers."""
    parts = text.strip().split("-")
    try:
        first, last = (int(parts[0]), int(parts[-1])) if len(parts) <= 2 else (0, -1)
    except ValueError:
        first, last = 0, -1
    if first < 1 or last < first:
        raise InputError(f"{text!r} is not a page range; write it as A-B, e.g. 3-7.")
    return PageRange(first, last)


@dataclass(frozen=True)
class ChunkMetadata:
    """A chunk without its text: where it starts in its page text and the metadata asked for."""

    chunk_id: str
    start: int
    metadata: dict[str, Any]


class DocStore(Protocol):
    """Full text, relations and per-chunk features, keyed by collection and id."""

    def put_document(self, record: DocumentRecord) -> None: ...
    def put_chunks(self, collection: str, chunks: Sequence[TextNode]) -> None: ...
    def put_sentence_vectors(self, collection: str, vectors: dict[str, np.ndarray]) -> None: ...
    def mark_ready(self, collection: str, doc_id: str) -> None: ...
    def get_document(self, collection: str, doc_id: str) -> DocumentRecord | None: ...
    def find_by_name(self, collection: str, name: str) -> list[DocumentRecord]: ...
    def list_documents(
        self, collection: str, include_pending: bool = False
    ) -> list[DocumentRecord]: ...
    def get_chunks(self, collection: str, chunk_ids: Sequence[str]) -> list[TextNode]: ...
    def get_sentence_vectors(
        self, collection: str, chunk_ids: Sequence[str]
    ) -> dict[str, np.ndarray]: ...
    def chunks_of(self, collection: str, doc_id: str) -> list[TextNode]: ...
    def ready_chunks(self, collection: str) -> list[TextNode]: ...
    def chunk_metadata(
        self, collection: str, doc_id: str, keys: Sequence[str]
    ) -> list[ChunkMetadata]:
        """The document's chunks in order, without text: only `keys` of their metadata."""
        ...

    def chunks_carrying(
        self, collection: str, field: str, values: Sequence[str], partial: bool = False
    ) -> dict[str, set[str]]:
        """Each of `values`, case-folded (`citerag.nodes.fold`), that chunks carry in list field
        `field` -> the ids of those chunks (every chunk written, ready or not); with `partial`,
        the chunks carrying a value that contains it. Values no chunk carries are left out:
        the answer is bounded by what was asked and who carries it, not by the collection."""
        ...

    def values_carried(self, collection: str, field: str, values: Collection[str]) -> set[str]:
        """Those of `values` (case-folded) that some chunk carries in list field `field`: one
        indexed lookup, however many chunks carry them (which names a question mentions)."""
        ...

    def count_chunks(self, collection: str, doc_id: str) -> int: ...
    def chunk_stats(self, collection: str) -> dict[str, tuple[int, int]]: ...
    def delete_document(self, collection: str, doc_id: str) -> None: ...
    def put_tree(self, collection: str, doc_id: str, tree: JSONObject) -> None: ...
    def get_tree(self, collection: str, doc_id: str) -> JSONObject | None: ...
    def put_card(self, collection: str, doc_id: str, card: JSONObject) -> None: ...
    def get_cards(
        self, collection: str, doc_ids: Sequence[str] | None = None
    ) -> dict[str, JSONObject]:
        """The stored cards of `doc_ids` (None: every document of the collection), by document
        id (a card goes with its document)."""
        ...

    def put_doc_states(self, collection: str, states: Mapping[str, JSONObject]) -> None:
        """Keep what retrieval derived of each document (doc id -> it), so a new process reads
        that instead of the document's chunks (`citerag.retrieve.doc_state_record`). Not a
        change to the collection (nothing journaled); dropped when any chunk of its document is
        written, and deleted with the document."""
        ...

    def get_doc_states(self, collection: str, doc_ids: Sequence[str]) -> dict[str, JSONObject]:
        """The kept derived states of those of `doc_ids` that have one, by document id."""
        ...

    def generation(self, collection: str) -> int:
        """The collection's generation: how many journaled writes it has had (0: none yet)."""
        ...

    def changes_since(self, collection: str, generation: int) -> ChangeSet | None:
        """What changed after `generation` (`citerag.store.journal`); None when the journal no
        longer reaches back that far (trimmed, or the store was reset): list the collection."""
        ...

    def collections(self) -> list[str]:
        """The collections holding at least one ready document (one being ingested, or left
        pending by a crash, does not make its collection exist)."""
        ...

    def close(self) -> None: ...


class PageIndex(Protocol):
    """The page head vectors of each collection, beside its chunk rows: searched for pages,
    so that no process holds them. The docstore keeps them too and is their source of truth
    (repair writes them here again from it)."""

    def insert(self, collection: str, rows: Sequence[PageRow]) -> None:
        """Upsert `rows` (the same page twice never duplicates), searchable at once."""
        ...

    def search(
        self, collection: str, vector: np.ndarray, top_k: int, among: Collection[str] | None
    ) -> list[tuple[str, float]]:
        """(page id, cosine similarity) of the `top_k` pages nearest `vector` among `among`
        (None: any), best first, ties by page id: exact where the index is (Milvus Lite)."""
        ...

    def doc_ids(self, collection: str) -> set[str]:
        """The documents that have page rows (none when the collection has no page index)."""
        ...

    def count(self, collection: str, doc_id: str | None = None) -> int:
        """The page rows of the collection, or of one document."""
        ...

    def delete_document(self, collection: str, doc_id: str) -> None: ...
    def drop(self, collection: str) -> None: ...


class VectorIndex(Protocol):
    """Vectors and filterable scalars (Milvus Lite file or a Milvus server); its `pages` hold
    the page head vectors, and deleting a document or a collection deletes them too."""

    @property
    def pages(self) -> PageIndex: ...

    # Up to this many matching chunks, a filter on list fields reaches the search as the
    # chunks' ids rather than as the filter itself (which is then the slower of the two).
    id_list_limit: int

    def ensure_collection(self, collection: str, dim: int) -> None: ...
    def insert(self, collection: str, rows: Sequence[VectorRow]) -> None: ...
    def search(self, collection: str, query: VectorQuery) -> list[list[tuple[str, float]]]:
        """Per query vector, (chunk id, cosine similarity) pairs, best first, at most
        `query.top_k`, among the rows the query's filters and ids allow."""
        ...

    def count(self, collection: str, doc_id: str | None = None) -> int: ...
    def ids_of(self, collection: str, doc_id: str) -> list[str]: ...
    def rows_of(self, collection: str, doc_id: str) -> list[VectorRow]:
        """The document's rows, vectors included, as stored."""
        ...

    def delete_document(self, collection: str, doc_id: str) -> None: ...
    def delete_ids(self, collection: str, chunk_ids: Sequence[str]) -> None: ...
    def doc_ids_except(self, collection: str, known: Sequence[str]) -> list[str]: ...
    def has_collection(self, collection: str) -> bool: ...
    def drop_collection(self, collection: str) -> None: ...
    def note_change(self, collection: str) -> None:
        """The collection changed through another process (its searches must see it)."""
        ...

    def list_fields(self, collection: str) -> frozenset[str]:
        """The list fields (years, entities, ...) the collection's rows carry for filters in
        the search: none in a collection made before them (filters then go by chunk ids)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Stores:
    """Every store a collection lives in: text, relations and section trees (the docstore),
    vectors and filterable scalars, keywords. Ingest, repair and delete write all three."""

    docstore: DocStore
    vectors: VectorIndex
    keywords: KeywordIndex

    def remove_document(self, collection: str, doc_id: str) -> None:
        """Delete a document everywhere: vectors, keyword entries, then the docstore.

        The record turns `pending` first: a delete cut short then leaves a document that split-
        brain repair leaves alone (and a re-ingest replaces), not one it would restore."""
        record = self.docstore.get_document(collection, doc_id)
        if record is not None and record.status != "pending":
            self.docstore.put_document(replace(record, status="pending"))
        self.vectors.delete_document(collection, doc_id)
        self.keywords.remove_document(collection, doc_id)
        self.docstore.delete_document(collection, doc_id)

    def is_whole(self, collection: str, doc_id: str) -> bool:
        """Whether the document's chunks are all in the vector index (as many rows as chunks,
        and some): what a stored document must be to be skipped, renamed or trusted."""
        chunks = self.docstore.count_chunks(collection, doc_id)
        rows = (
            self.vectors.count(collection, doc_id) if self.vectors.has_collection(collection) else 0
        )
        return chunks > 0 and chunks == rows

    def close(self) -> None:
        self.keywords.close()
        self.vectors.close()
        self.docstore.close()
