"""Split-brain (seed 004): Milvus rows or docstore records lost or half deleted are detected when
the engine opens the collection and repaired from the surviving side, with no loss."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from helpers import DEMO_PDF, MILVUS_BACKENDS, make_old_schema_collection, milvus_uri_for

from citerag.embed.embedder import Embedder
from citerag.engine import Engine
from citerag.nodes import folded, page_vector_key
from citerag.settings import Settings
from citerag.store.milvus_index import MilvusIndex
from citerag.store.milvus_lists import LIST_COLUMNS
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.types import DocumentRecord

pytestmark = pytest.mark.slow


@dataclass
class Stored:
    settings: Settings
    collection: str
    doc_id: str
    chunks: dict[str, dict]  # chunk id -> TextNode.to_dict()
    sentences: dict[str, np.ndarray]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder()


@pytest.fixture(params=MILVUS_BACKENDS)
def stored(request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder) -> Iterator[Stored]:
    """The demo PDF ingested in small chunks (enough for "half a document")."""
    settings = Settings(
        storage_dir=tmp_path / "storage",
        chunk_size=96,
        chunk_overlap=16,
        milvus_uri=milvus_uri_for(request, request.param),
    )
    collection = f"sb_{uuid.uuid4().hex[:8]}"
    engine = Engine(settings, embedder=embedder)
    try:
        outcome = engine.ingest(DEMO_PDF, collection)
        chunks = {
            c.node_id: c.to_dict() for c in engine.docstore.chunks_of(collection, outcome.doc_id)
        }
        sentences = engine.docstore.get_sentence_vectors(collection, list(chunks))
    finally:
        engine.close()
    assert len(chunks) >= 6
    yield Stored(settings, collection, outcome.doc_id, chunks, sentences)
    if settings.storage.milvus_uri:
        cleanup = Engine(settings, embedder=embedder)
        cleanup.vectors.drop_collection(collection)  # type: ignore[attr-defined]
        cleanup.close()


def reopen_and_check(stored: Stored, embedder: Embedder, caplog: pytest.LogCaptureFixture) -> str:
    """Open the engine again, list (which checks the collection), and assert nothing was lost."""
    caplog.clear()
    engine = Engine(stored.settings, embedder=embedder)
    try:
        with caplog.at_level(logging.WARNING, logger="citerag.ingest.repair"):
            [summary] = engine.list_documents([stored.collection])
        assert summary.to_dict()["health"] == "ok"
        assert summary.chunks_in_milvus == summary.chunks_in_docstore == len(stored.chunks)
        restored = engine.docstore.chunks_of(stored.collection, stored.doc_id)
        assert {c.node_id: c.to_dict() for c in restored} == stored.chunks
        assert engine.vectors.ids_of(stored.collection, stored.doc_id) == sorted(stored.chunks)
        sentences = engine.docstore.get_sentence_vectors(stored.collection, list(stored.chunks))
        for chunk_id, matrix in stored.sentences.items():
            np.testing.assert_allclose(sentences[chunk_id], matrix, atol=2e-3)
        assert engine.vectors.pages.count(stored.collection, stored.doc_id) == len(
            chunk_pages(stored)
        ), "every page that holds chunks has its page row"
        answer = engine.query("Which parser was chosen?", stored.collection)
        assert answer.sources
    finally:
        engine.close()
    return "\n".join(r.getMessage() for r in caplog.records if "split-brain" in r.getMessage())


def chunk_pages(stored: Stored) -> set[int]:
    return {int(chunk["metadata"]["page"]) for chunk in stored.chunks.values()}


def test_page_rows_are_written_at_ingest_filled_for_an_old_collection_and_go_with_the_document(
    stored: Stored, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    engine = Engine(stored.settings, embedder=embedder)
    collection, doc_id = stored.collection, stored.doc_id
    try:
        pages = engine.vectors.pages
        assert pages.count(collection, doc_id) == len(chunk_pages(stored)) >= 2
        keys = {page_vector_key(doc_id, page): page for page in chunk_pages(stored)}
        heads = engine.docstore.get_sentence_vectors(collection, list(keys))
        for key, head in heads.items():
            assert pages.search(collection, head[0], 1, None)[0][0] == key
        state = engine.searchable_state(collection)
        assert state.page_vector_hits(next(iter(heads.values()))[0], 2)
        pages.drop(collection)  # as a collection made before its page collection was
        assert not engine.vectors.pages.count(collection)
    finally:
        engine.close()
    with caplog.at_level(logging.WARNING, logger="citerag.ingest.page_rows"):
        reopen_and_check(stored, embedder, caplog)
    assert "wrote the page head vectors of 1 documents" in caplog.text
    engine = Engine(stored.settings, embedder=embedder)
    try:
        key, head = next(iter(heads.items()))
        assert engine.searchable_state(collection).page_vector_hits(head[0], 1) == [key]
        assert engine.delete(DEMO_PDF.name, collection) == 1
        assert engine.vectors.pages.doc_ids(collection) == set()
    finally:
        engine.close()


def test_dropped_milvus_rows_are_rebuilt_from_the_docstore(
    stored: Stored, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    engine = Engine(stored.settings, embedder=embedder)
    engine.vectors.drop_collection(stored.collection)  # type: ignore[attr-defined]
    engine.close()
    log = reopen_and_check(stored, embedder, caplog)
    assert f"restored {len(stored.chunks)} Milvus rows from the docstore" in log
    assert "embedded the sentences" not in log  # nothing re-embedded but table contexts


def test_reindex_gives_a_collection_made_before_the_list_columns_its_years(
    stored: Stored, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    """Rows written into the old schema (no list columns) are rebuilt by the repair's steps
    with every list field the chunks carry, and nothing else changes."""
    engine = Engine(stored.settings, embedder=embedder)
    try:
        index = engine.vectors
        assert isinstance(index, MilvusIndex)
        rows = index.rows_of(stored.collection, stored.doc_id)
        index.drop_collection(stored.collection)
        make_old_schema_collection(index.client, stored.collection, len(rows[0].vector))
        index.insert(stored.collection, rows)
        assert index.list_fields(stored.collection) == frozenset()
        repairs = engine.reindex(stored.collection)
        assert [r.doc_id for r in repairs] == [stored.doc_id]
        assert index.list_fields(stored.collection) == frozenset(LIST_COLUMNS)
        rebuilt = {r.chunk_id: r for r in index.rows_of(stored.collection, stored.doc_id)}
        chunks = engine.docstore.chunks_of(stored.collection, stored.doc_id)
        assert sorted(rebuilt) == sorted(stored.chunks)
        for chunk in chunks:
            for name in LIST_COLUMNS:
                assert rebuilt[chunk.node_id].lists[name] == folded(chunk.metadata.get(name, []))
        held = [n for n in LIST_COLUMNS for chunk in chunks if chunk.metadata.get(n)]
        assert held  # the demo's chunks carry values (entities, labels), so rows were checked
    finally:
        engine.close()
    reopen_and_check(stored, embedder, caplog)


def test_dropped_docstore_records_are_rebuilt_from_the_parse_cache(
    stored: Stored, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    card = SQLiteDocStore(stored.settings.storage.sqlite_path).get_cards(stored.collection)[
        stored.doc_id
    ]
    drop_records(stored, "documents", "chunks", "cards")
    log = reopen_and_check(stored, embedder, caplog)
    assert f"restored {len(stored.chunks)} docstore chunks from the parse cache" in log
    assert "restored the document record" in log
    restored = SQLiteDocStore(stored.settings.storage.sqlite_path).get_cards(stored.collection)
    assert restored[stored.doc_id]["kind"] == card["kind"]  # the card came back with it
    assert "Milvus rows" not in log  # the surviving vectors were kept, not rebuilt
    assert "embedded" not in log  # the sentence vectors survived: nothing embedded again


def drop_records(stored: Stored, *tables: str) -> None:
    docstore = SQLiteDocStore(stored.settings.storage.sqlite_path)
    with docstore._transaction() as conn:
        for table in tables:
            conn.execute(
                f"DELETE FROM {table} WHERE collection = ? AND doc_id = ?",
                (stored.collection, stored.doc_id),
            )
    docstore.close()


def test_half_a_document_deleted_on_both_sides_is_restored(
    stored: Stored, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    half = sorted(stored.chunks)[: len(stored.chunks) // 2]
    docstore = SQLiteDocStore(stored.settings.storage.sqlite_path)
    with docstore._transaction() as conn:
        conn.executemany(
            "DELETE FROM chunks WHERE collection = ? AND id = ?",
            [(stored.collection, chunk_id) for chunk_id in half],
        )
    docstore.close()
    engine = Engine(stored.settings, embedder=embedder)
    engine.vectors.delete_ids(stored.collection, half)
    engine.close()
    log = reopen_and_check(stored, embedder, caplog)
    assert f"restored {len(half)} docstore chunks from the parse cache" in log
    assert f"restored {len(half)} Milvus rows from the docstore" in log


@pytest.mark.parametrize("docstore_knows_the_collection", [True, False])
def test_rows_whose_text_cannot_be_restored(
    stored: Stored,
    embedder: Embedder,
    caplog: pytest.LogCaptureFixture,
    docstore_knows_the_collection: bool,
) -> None:
    """No docstore chunks and no parse cache: the rows go when the docstore holds other documents
    of the collection (a loss), and are kept when it holds none (likely the wrong docstore)."""
    docstore = SQLiteDocStore(stored.settings.storage.sqlite_path)
    docstore.delete_document(stored.collection, stored.doc_id)
    if docstore_knows_the_collection:
        other = DocumentRecord("other", "other.pdf", stored.collection, 1, "pymupdf", "pending")
        docstore.put_document(other)
    docstore.close()
    for cached in stored.settings.storage.parse_cache_dir.glob("*.json"):
        cached.unlink()
    engine = Engine(stored.settings, embedder=embedder)
    try:
        with caplog.at_level(logging.WARNING, logger="citerag.ingest.repair"):
            assert engine.list_documents([stored.collection]) == []
        left = engine.vectors.count(stored.collection)
    finally:
        engine.close()
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    if docstore_knows_the_collection:
        assert left == 0 and "ingest it again" in errors[0]
    else:
        assert left == len(stored.chunks) and "rows are kept" in errors[0]
        assert "MONGODB_URI" in errors[0]


def test_a_delete_cut_short_is_finished_not_undone(
    stored: Stored, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    """Milvus rows and the record gone, chunks left (MongoDB deletes in several steps): the
    document was being deleted, so its remains go; nothing is restored."""
    engine = Engine(stored.settings, embedder=embedder)
    engine.vectors.delete_document(stored.collection, stored.doc_id)
    engine.close()
    drop_records(stored, "documents")
    engine = Engine(stored.settings, embedder=embedder)
    try:
        with caplog.at_level(logging.WARNING, logger="citerag.ingest.repair"):
            assert engine.list_documents([stored.collection]) == []
        assert engine.docstore.chunk_stats(stored.collection) == {}
        assert engine.vectors.count(stored.collection) == 0
    finally:
        engine.close()
    assert "left by a delete that was cut short" in caplog.text
