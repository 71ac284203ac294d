"""The contract every docstore backend must keep: SQLite, and MongoDB over the wire protocol.

MongoDB runs against `mongo_wire_uri` (conftest.py): the real mongod named by MONGODB_URI when it
is set, else nx-27017 (an SQLite-backed MongoDB wire server) started for the session.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

from citerag.errors import BackendUnavailable
from citerag.nodes import boxes_of, chunk_node, neighbour_id
from citerag.settings import Settings
from citerag.store.base import DocStore
from citerag.store.factory import open_docstore
from citerag.store.mongo_docstore import MongoDocStore
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.types import BBox, DocumentRecord

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    # integration: a MONGODB_URI naming another machine must get past the loopback-only guard
    pytest.param("mongodb", id="mongodb", marks=[pytest.mark.server, pytest.mark.integration]),
]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DocStore]:
    if request.param == "sqlite":
        sqlite_store = SQLiteDocStore(tmp_path / "docstore.sqlite")
        yield sqlite_store
        sqlite_store.close()
        return
    uri = request.getfixturevalue("mongo_wire_uri")
    mongo_store = MongoDocStore(uri, f"citerag_test_{uuid.uuid4().hex[:12]}")
    yield mongo_store
    mongo_store.drop_database()
    mongo_store.close()


def record(doc_id: str, name: str = "report.pdf", collection: str = "main") -> DocumentRecord:
    return DocumentRecord(
        doc_id=doc_id,
        name=name,
        collection=collection,
        pages=12,
        parser="pymupdf",
        created_at=1_700_000_000.5,
    )


def chunk(doc_id: str, index: int, page: int = 1) -> TextNode:
    text = f"Revenue grew {index}% in the quarter. Costs fell sharply."
    node = chunk_node(
        node_id=f"{doc_id}-c{index}",
        doc_id=doc_id,
        doc_name=f"{doc_id}.pdf",
        page=page,
        chunk_index=index,
        text=text,
        start=100 * index,
        section="2 Results > 2.1 Revenue",
        block_type="table" if index % 2 else "text",
        label="3" if index % 2 else "",
        boxes=[BBox(10.0, 20.5, 300.25, 40.0), BBox(10.0, 42.0, 120.0, 60.75)],
        sentences=[(0, 36), (37, len(text))],
        table_context="Revenue by quarter | 2024" if index % 2 else "",
    )
    if index:
        node.relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(
            node_id=f"{doc_id}-c{index - 1}"
        )
    node.relationships[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=f"{doc_id}-c{index + 1}")
    return node


def ingest(store: DocStore, doc_id: str, n_chunks: int, collection: str = "main") -> list[TextNode]:
    chunks = [chunk(doc_id, i) for i in range(n_chunks)]
    store.put_document(record(doc_id, name=f"{doc_id}.pdf", collection=collection))
    store.put_chunks(collection, chunks)
    store.mark_ready(collection, doc_id)
    return chunks


def test_put_and_get_document_round_trips_every_field(store: DocStore) -> None:
    store.put_document(record("d1"))
    assert store.get_document("main", "d1") == record("d1")
    assert store.get_document("main", "missing") is None


def test_pending_documents_are_hidden_until_marked_ready(store: DocStore) -> None:
    store.put_document(record("d1"))
    store.put_chunks("main", [chunk("d1", 0)])
    assert store.list_documents("main") == []
    assert [d.doc_id for d in store.list_documents("main", include_pending=True)] == ["d1"]
    assert store.ready_chunks("main") == []

    store.mark_ready("main", "d1")
    listed = store.list_documents("main")
    assert [(d.doc_id, d.status) for d in listed] == [("d1", "ready")]
    assert [c.node_id for c in store.ready_chunks("main")] == ["d1-c0"]


def test_find_by_name_returns_every_version_of_a_file(store: DocStore) -> None:
    store.put_document(record("v1", name="same.pdf"))
    store.put_document(record("v2", name="same.pdf"))
    store.put_document(record("other", name="other.pdf"))
    assert sorted(d.doc_id for d in store.find_by_name("main", "same.pdf")) == ["v1", "v2"]
    assert store.find_by_name("main", "absent.pdf") == []


def test_chunks_round_trip_with_boxes_and_sentences(store: DocStore) -> None:
    chunks = ingest(store, "d1", 3)
    assert store.get_chunks("main", [c.node_id for c in chunks]) == chunks
    assert store.chunks_of("main", "d1") == chunks
    assert boxes_of(store.get_chunks("main", ["d1-c1"])[0])[1] == BBox(10.0, 42.0, 120.0, 60.75)
    first = store.get_chunks("main", ["d1-c0"])[0]
    assert neighbour_id(first, NodeRelationship.PREVIOUS) is None
    assert neighbour_id(first, NodeRelationship.NEXT) == "d1-c1"


def test_get_chunks_keeps_the_order_asked_and_skips_unknown_ids(store: DocStore) -> None:
    ingest(store, "d1", 4)
    got = store.get_chunks("main", ["d1-c3", "nope", "d1-c0", "d1-c2"])
    assert [c.node_id for c in got] == ["d1-c3", "d1-c0", "d1-c2"]
    assert store.get_chunks("main", []) == []


def test_ready_chunks_are_ordered_by_document_then_position(store: DocStore) -> None:
    store.put_document(record("b"))
    store.put_chunks("main", [chunk("b", i) for i in (2, 0, 1)])
    store.mark_ready("main", "b")
    store.put_document(record("a"))
    store.put_chunks("main", [chunk("a", i) for i in (1, 0)])
    store.mark_ready("main", "a")
    ids = [c.node_id for c in store.ready_chunks("main")]
    assert ids == ["a-c0", "a-c1", "b-c0", "b-c1", "b-c2"]


def test_sentence_vectors_round_trip_as_float32_within_float16_precision(
    store: DocStore,
) -> None:
    rng = np.random.default_rng(7)
    vectors = {
        "d1-c0": rng.standard_normal((3, 384)).astype(np.float32),
        "d1-c1": rng.standard_normal((1, 384)).astype(np.float32),
    }
    ingest(store, "d1", 2)
    store.put_sentence_vectors("main", vectors)
    got = store.get_sentence_vectors("main", ["d1-c1", "d1-c0", "unknown"])
    assert set(got) == {"d1-c0", "d1-c1"}
    for chunk_id, expected in vectors.items():
        assert got[chunk_id].dtype == np.float32
        assert got[chunk_id].shape == expected.shape
        np.testing.assert_allclose(got[chunk_id], expected, rtol=1e-3, atol=1e-3)


def test_count_chunks_counts_one_document(store: DocStore) -> None:
    ingest(store, "d1", 5)
    ingest(store, "d2", 2)
    assert store.count_chunks("main", "d1") == 5
    assert store.count_chunks("main", "d2") == 2
    assert store.count_chunks("main", "missing") == 0


def test_delete_document_removes_record_chunks_and_vectors(store: DocStore) -> None:
    chunks = ingest(store, "d1", 3)
    ingest(store, "d2", 2)
    store.put_sentence_vectors("main", {c.node_id: np.ones((2, 8), np.float32) for c in chunks})
    store.delete_document("main", "d1")
    assert store.get_document("main", "d1") is None
    assert store.count_chunks("main", "d1") == 0
    assert store.get_chunks("main", [c.node_id for c in chunks]) == []
    assert store.get_sentence_vectors("main", [c.node_id for c in chunks]) == {}
    assert [d.doc_id for d in store.list_documents("main")] == ["d2"]
    assert store.count_chunks("main", "d2") == 2


def test_collections_isolate_each_other(store: DocStore) -> None:
    ingest(store, "d1", 2, collection="alpha")
    ingest(store, "d1", 3, collection="beta")
    store.put_sentence_vectors("alpha", {"d1-c0": np.zeros((1, 4), np.float32)})
    assert store.collections() == ["alpha", "beta"]
    assert store.count_chunks("alpha", "d1") == 2
    assert store.count_chunks("beta", "d1") == 3
    assert store.get_sentence_vectors("beta", ["d1-c0"]) == {}

    store.delete_document("alpha", "d1")
    assert store.get_document("alpha", "d1") is None
    assert store.count_chunks("beta", "d1") == 3
    assert store.get_document("beta", "d1") is not None


def test_a_collection_with_only_a_pending_document_is_not_listed(store: DocStore) -> None:
    ingest(store, "d1", 2, collection="alpha")
    store.put_document(record("d2", collection="crashed"))  # an ingest killed before ready
    store.put_chunks("crashed", [chunk("d2", 0)])
    assert store.collections() == ["alpha"]
    store.mark_ready("crashed", "d2")
    assert store.collections() == ["alpha", "crashed"]


def test_putting_the_same_document_twice_adds_nothing(store: DocStore) -> None:
    ingest(store, "d1", 3)
    ingest(store, "d1", 3)
    store.put_sentence_vectors("main", {"d1-c0": np.ones((2, 4), np.float32)})
    store.put_sentence_vectors("main", {"d1-c0": np.ones((2, 4), np.float32)})
    assert len(store.list_documents("main", include_pending=True)) == 1
    assert store.count_chunks("main", "d1") == 3
    assert len(store.ready_chunks("main")) == 3
    assert store.get_sentence_vectors("main", ["d1-c0"])["d1-c0"].shape == (2, 4)


def test_concurrent_writers_from_several_threads_all_land(store: DocStore) -> None:
    errors: list[BaseException] = []

    def write(doc_id: str) -> None:
        try:
            ingest(store, doc_id, 20)
        except BaseException as error:  # collected so the test can report it
            errors.append(error)

    threads = [threading.Thread(target=write, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(store.ready_chunks("main")) == 80


def test_sqlite_store_keeps_data_after_reopening(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "docstore.sqlite"
    first = SQLiteDocStore(path)
    chunks = ingest(first, "d1", 2)
    first.close()
    reopened = SQLiteDocStore(path)
    assert reopened.get_chunks("main", [c.node_id for c in chunks]) == chunks
    assert reopened.get_document("main", "d1") is not None
    reopened.close()


def test_unreachable_mongodb_raises_backend_unavailable_naming_the_uri() -> None:
    uri = "mongodb://127.0.0.1:9/"  # the discard port: nothing answers
    with pytest.raises(BackendUnavailable, match=r"127\.0\.0\.1:9"):
        MongoDocStore(uri, "citerag_unreachable")


def test_factory_opens_sqlite_in_the_storage_folder_when_no_mongodb_uri(tmp_path: Path) -> None:
    settings = Settings(storage_dir=tmp_path / "fresh" / "storage")
    store = open_docstore(settings)
    try:
        assert isinstance(store, SQLiteDocStore)
        ingest(store, "d1", 1)
        assert settings.sqlite_path.is_file()
    finally:
        store.close()


def test_factory_reports_an_unreachable_mongodb_uri(tmp_path: Path) -> None:
    settings = Settings(storage_dir=tmp_path, mongodb_uri="mongodb://127.0.0.1:9/")
    with pytest.raises(BackendUnavailable, match="MONGODB_URI"):
        open_docstore(settings)


def test_chunk_stats_count_chunks_and_find_the_highest_index_per_document(
    store: DocStore,
) -> None:
    ingest(store, "d1", 4)
    store.put_chunks("main", [chunk("orphan", i) for i in (0, 2)])  # chunks with no record
    ingest(store, "d2", 1, collection="other")
    assert store.chunk_stats("main") == {"d1": (4, 3), "orphan": (2, 2)}
    assert store.chunk_stats("empty") == {}


def test_delete_document_removes_its_page_head_vectors(store: DocStore) -> None:
    from citerag.nodes import page_vector_key

    ingest(store, "d1", 1)
    ingest(store, "d2", 1)
    heads = {page_vector_key(d, 1): np.ones((1, 4), np.float32) for d in ("d1", "d2")}
    store.put_sentence_vectors("main", heads)
    store.delete_document("main", "d1")
    assert set(store.get_sentence_vectors("main", list(heads))) == {page_vector_key("d2", 1)}


def test_chunk_metadata_gives_the_keys_asked_and_no_text(store: DocStore) -> None:
    chunks = ingest(store, "d1", 3)
    ingest(store, "d2", 1)
    found = store.chunk_metadata("main", "d1", ["page", "block_type", "table_context", "years"])
    assert [f.chunk_id for f in found] == [c.node_id for c in chunks]
    assert [f.start for f in found] == [0, 100, 200]
    assert found[0].metadata == {"page": 1, "block_type": "text"}
    assert found[1].metadata == {
        "page": 1,
        "block_type": "table",
        "table_context": "Revenue by quarter | 2024",
    }
    assert store.chunk_metadata("main", "missing", ["page"]) == []
