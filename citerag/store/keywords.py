"""The keyword-index seam: BM25 over a collection's chunks and pages, updated per document.

Two backends implement it: the project's BM25 files kept per document (`bm25-files`: the
embedded default, and the choice for Milvus servers before 2.5) and Milvus's own BM25 function
(full-text search on a sparse field) where the deployment reports it (Milvus Lite 3.x, servers
from 2.5). Adding or removing a document touches that document only; nothing rebuilds the
whole collection.

Both backends see the same tokens (`citerag.text.tokens.tokenize`: lower case, stop words
out, plurals folded), so a backend whose analyzer has no stemming still ranks stemmed text.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

KeywordKind = Literal["chunk", "page"]
KINDS: tuple[KeywordKind, ...] = ("chunk", "page")


@dataclass(frozen=True)
class KeywordEntry:
    """One searchable text: a chunk (its id) or a page (its `page_vector_key`)."""

    id: str
    kind: KeywordKind
    text: str


@dataclass(frozen=True)
class KeywordQuery:
    """One keyword search: the best `top_k` entries of `kind` for `text`, among `allowed_ids`
    when given (None: every entry; empty: none)."""

    kind: KeywordKind
    text: str
    top_k: int
    allowed_ids: Collection[str] | None = None


class KeywordIndex(Protocol):
    """BM25 search per collection and kind; every method is safe to call from several threads."""

    def add_document(
        self, collection: str, doc_id: str, entries: Sequence[KeywordEntry]
    ) -> None: ...

    def remove_document(self, collection: str, doc_id: str) -> None: ...

    def search(self, collection: str, query: KeywordQuery) -> list[tuple[str, float]]:
        """The best `query.top_k` ids of `query.kind` with a positive score, best first, among
        `query.allowed_ids` when given. Ties go by document id, then by the entry's place in its
        document, so that processes that added documents in another order still agree."""
        ...

    def doc_ids(self, collection: str) -> set[str]:
        """The documents the index holds (for consistency checks and repair)."""
        ...

    def doc_ids_among(self, collection: str, doc_ids: Iterable[str]) -> set[str]:
        """Which of `doc_ids` the index holds, at a cost in those documents only (what a change
        asks, where `doc_ids` costs the whole collection)."""
        ...

    def drop_collection(self, collection: str) -> None: ...

    def close(self) -> None: ...
