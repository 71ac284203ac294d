"""Keeping a keyword index in line with the docstore after a change costs the changed documents
only (never a listing of the whole keyword collection: on Milvus that reads every row), and a
document another process wrote again is searched in its new version."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from citerag.nodes import chunk_node
from citerag.retrieve.keyword_sync import sync_keywords
from citerag.retrieve.page_evidence import keyword_entries
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.keywords import KeywordIndex, KeywordQuery
from citerag.store.milvus_index import MilvusIndex
from citerag.store.milvus_keywords import MilvusKeywordIndex
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.types import DocumentRecord

C = "c"


class NoListing:
    """A keyword index that refuses to list the whole collection."""

    def __init__(self, index: KeywordIndex) -> None:
        self.index = index

    def doc_ids(self, collection: str) -> set[str]:
        raise AssertionError("a change listed every document of the keyword index")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.index, name)


def ingest(store: SQLiteDocStore, doc_id: str, text: str, keywords: KeywordIndex | None) -> None:
    nodes = [
        chunk_node(
            node_id=f"{doc_id}-{i}",
            doc_id=doc_id,
            doc_name=f"{doc_id}.pdf",
            page=1,
            chunk_index=i,
            text=f"{text} part {i}.",
            start=0,
        )
        for i in range(2)
    ]
    store.put_document(
        DocumentRecord(doc_id, f"{doc_id}.pdf", C, 1, "test", "pending", time.time())
    )
    store.put_chunks(C, nodes)
    if keywords is not None:
        keywords.add_document(C, doc_id, keyword_entries(nodes))
    store.mark_ready(C, doc_id)


@pytest.fixture(params=["bm25-files", pytest.param("milvus", marks=pytest.mark.slow)])
def keywords(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KeywordIndex]:
    if request.param == "bm25-files":
        yield BM25FilesIndex(tmp_path / "keywords")
        return
    milvus = MilvusIndex(str(tmp_path / "milvus.db"))
    yield MilvusKeywordIndex(milvus)
    milvus.close()


def test_a_change_indexes_and_removes_its_own_documents_without_listing_all(
    keywords: KeywordIndex, tmp_path: Path
) -> None:
    store = SQLiteDocStore(tmp_path / "docstore.sqlite")
    ingest(store, "d1", "Piracy risk factors", keywords)
    ingest(store, "d2", "Streaming revenue in Canada", None)  # through another process
    changed = NoListing(keywords)
    sync_keywords(store, changed, C, ["d2"], [])  # type: ignore[arg-type]
    hits = keywords.search(C, KeywordQuery("chunk", "streaming Canada", 5))
    assert {i for i, _ in hits} == {"d2-0", "d2-1"}
    store.delete_document(C, "d1")  # by another process, whose keyword files are its own
    sync_keywords(store, changed, C, [], ["d1"])  # type: ignore[arg-type]
    assert keywords.search(C, KeywordQuery("chunk", "piracy", 5)) == []
    assert keywords.doc_ids(C) == {"d2"}
    store.close()


def test_a_document_written_again_by_another_process_is_searched_in_its_new_version(
    tmp_path: Path,
) -> None:
    store = SQLiteDocStore(tmp_path / "docstore.sqlite")
    mine, theirs = BM25FilesIndex(tmp_path / "k"), BM25FilesIndex(tmp_path / "k")
    ingest(store, "d1", "Piracy risk factors", mine)
    assert mine.search(C, KeywordQuery("chunk", "piracy", 5))
    ingest(store, "d1", "Zebra crossings", theirs)  # ingested again elsewhere
    # the change record names d1 ready again, not gone
    sync_keywords(store, NoListing(mine), C, ["d1"], [])  # type: ignore[arg-type]
    assert mine.search(C, KeywordQuery("chunk", "piracy", 5)) == []
    assert {i for i, _ in mine.search(C, KeywordQuery("chunk", "zebra", 5))} == {"d1-0", "d1-1"}
    store.close()
