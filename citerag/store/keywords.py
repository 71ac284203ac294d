"""The keyword-index seam: BM25 over a collection's chunks and pages, updated per document.

Two backends implement it: bm25s-style files kept per document (the embedded default, and the
choice for Milvus servers before 2.5) and Milvus's own BM25 function (full-text search on a
sparse field) where the deployment reports it (Milvus Lite 3.x, servers from 2.5). Adding or
removing a document touches that document only; nothing rebuilds the whole collection.

Both backends see the same tokens (`citerag.text.tokens.tokenize`: lower case, stop words
out, plurals folded), so a backend whose analyzer has no stemming still ranks stemmed text.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
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


class KeywordIndex(Protocol):
    """BM25 search per collection and kind; every method is safe to call from several threads."""

    def add_document(
        self, collection: str, doc_id: str, entries: Sequence[KeywordEntry]
    ) -> None: ...

    def remove_document(self, collection: str, doc_id: str) -> None: ...

    def search(
        self,
        collection: str,
        kind: KeywordKind,
        query: str,
        top_k: int,
        allowed_ids: Collection[str] | None = None,
    ) -> list[tuple[str, float]]:
        """The best `top_k` ids of `kind` with a positive score, best first, among
        `allowed_ids` when given. Ties go by document id, then by the entry's place in its
        document, so that processes that added documents in another order still agree."""
        ...

    def doc_ids(self, collection: str) -> set[str]:
        """The documents the index holds (for consistency checks and repair)."""
        ...

    def drop_collection(self, collection: str) -> None: ...

    def close(self) -> None: ...
