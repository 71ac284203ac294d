"""The collection state follows the docstore by delta: a document another process adds or removes
is seen by the next question, only that document is loaded, and no chunk text is read for
documents whose keyword entries this process already has."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.schema import TextNode

from citerag.nodes import chunk_node
from citerag.retrieve.collection_state import CollectionState, refresh_state
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.types import DocumentRecord


class CountingDocStore:
    """A docstore that counts the calls that read chunk text, per method and document."""

    def __init__(self, store: SQLiteDocStore) -> None:
        self._store = store
        self.calls: Counter[str] = Counter()

    def chunks_of(self, collection: str, doc_id: str) -> list[TextNode]:
        self.calls[f"chunks_of:{doc_id}"] += 1
        return self._store.chunks_of(collection, doc_id)

    def get_chunks(self, collection: str, chunk_ids: Sequence[str]) -> list[TextNode]:
        self.calls["get_chunks"] += len(chunk_ids)
        return self._store.get_chunks(collection, chunk_ids)

    def chunk_metadata(self, collection: str, doc_id: str, keys: Sequence[str]) -> Any:
        self.calls[f"chunk_metadata:{doc_id}"] += 1
        return self._store.chunk_metadata(collection, doc_id, keys)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def add(store: SQLiteDocStore, doc_id: str, words: str, created_at: float = 1.0) -> None:
    store.put_document(
        DocumentRecord(doc_id, f"{doc_id}.pdf", "c", 2, "pymupdf", "pending", created_at)
    )
    store.put_chunks(
        "c",
        [
            chunk_node(
                node_id=f"{doc_id}-{i}",
                doc_id=doc_id,
                doc_name=f"{doc_id}.pdf",
                page=i + 1,
                chunk_index=i,
                text=f"{words} on page {i + 1}.",
                start=0,
            )
            for i in range(2)
        ],
    )
    store.put_card("c", doc_id, {"title": words})  # as ingest stores one
    store.mark_ready("c", doc_id)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteDocStore]:
    docstore = SQLiteDocStore(tmp_path / "docstore.sqlite")
    add(docstore, "d1", "Piracy risk factors")
    yield docstore
    docstore.close()


def hits(state: CollectionState, query: str) -> list[str]:
    return [chunk_id for chunk_id, _ in state.keyword_hits("chunk", query, 10)]


def test_a_document_added_elsewhere_is_found_and_only_it_is_loaded(
    store: SQLiteDocStore, tmp_path: Path
) -> None:
    here = CountingDocStore(store)
    keywords = BM25FilesIndex(tmp_path / "here")
    state = refresh_state(None, here, keywords, "c")  # type: ignore[arg-type]
    assert hits(state, "piracy") == ["d1-0", "d1-1"]
    assert refresh_state(state, here, keywords, "c") is state  # type: ignore[arg-type]

    add(store, "d2", "Streaming revenue")  # as another process would, in the shared docstore
    here.calls.clear()
    newer = refresh_state(state, here, keywords, "c")  # type: ignore[arg-type]
    assert hits(newer, "streaming revenue") == ["d2-0", "d2-1"]
    assert sorted(newer.places) == ["d1-0", "d1-1", "d2-0", "d2-1"]
    assert [k.id for k in newer.page_keys()][-1].startswith("d2")
    assert set(here.calls) == {"chunk_metadata:d2", "chunks_of:d2"}, here.calls
    assert hits(state, "streaming") == [], "an older snapshot keeps what it showed"


def test_a_document_removed_elsewhere_is_dropped_from_state_and_keywords(
    store: SQLiteDocStore, tmp_path: Path
) -> None:
    keywords = BM25FilesIndex(tmp_path / "here")
    add(store, "d2", "Streaming revenue")
    state = refresh_state(None, store, keywords, "c")
    store.delete_document("c", "d1")
    newer = refresh_state(state, store, keywords, "c")
    assert sorted(newer.places) == ["d2-0", "d2-1"]
    assert keywords.doc_ids("c") == {"d2"}
    assert hits(newer, "piracy") == []


def test_a_cold_open_reads_no_chunk_text_when_the_keyword_files_are_there(
    store: SQLiteDocStore, tmp_path: Path
) -> None:
    refresh_state(None, store, BM25FilesIndex(tmp_path / "here"), "c")
    reopened = CountingDocStore(store)
    state = refresh_state(None, reopened, BM25FilesIndex(tmp_path / "here"), "c")  # type: ignore[arg-type]
    assert hits(state, "piracy") == ["d1-0", "d1-1"]
    assert set(reopened.calls) == set(), "the document's state is kept in the docstore"


def test_a_document_ingested_again_is_loaded_again(store: SQLiteDocStore, tmp_path: Path) -> None:
    keywords = BM25FilesIndex(tmp_path / "here")
    state = refresh_state(None, store, keywords, "c")
    store.delete_document("c", "d1")
    add(store, "d1", "Advertising revenue", created_at=2.0)
    keywords.remove_document("c", "d1")  # what the ingesting process's delete did
    newer = refresh_state(state, store, keywords, "c")
    assert hits(newer, "advertising") == ["d1-0", "d1-1"]
    assert hits(newer, "piracy") == []


def test_a_document_stored_without_a_card_gets_one_from_its_first_page(
    store: SQLiteDocStore, tmp_path: Path
) -> None:
    add(store, "d2", "ANNUAL REPORT PURSUANT TO SECTION 13. FORM 10-K")
    store._conn.execute("DELETE FROM cards WHERE doc_id = 'd2'")  # stored before cards existed
    state = refresh_state(None, store, BM25FilesIndex(tmp_path / "here"), "c")
    assert state.docs["d2"].card.kind == "annual report"
    assert state.docs["d1"].card.title == "Piracy risk factors"
