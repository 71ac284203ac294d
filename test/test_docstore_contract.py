"""The docstore contract (`citerag.testing.docstore`) on SQLite and on MongoDB over the wire
protocol, and what only one backend or the factory does.

MongoDB runs against `mongo_wire_uri` (conftest.py): the real mongod named by MONGODB_URI when it
is set, else nx-27017 (an SQLite-backed MongoDB wire server) started for the session.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from bson.binary import Binary

from citerag.errors import BackendUnavailable
from citerag.settings import Settings
from citerag.settings.choices import SentenceVectorEncoding
from citerag.store.base import DocStore
from citerag.store.factory import open_docstore
from citerag.store.mongo_docstore import MongoDocStore
from citerag.store.mongo_values import VALUES
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.store.vector_codec import DEFAULT_ENCODING
from citerag.testing.docstore import DocStoreContract, JournalContract, ingest

Reopen = Callable[[SentenceVectorEncoding], DocStore]


class TestSQLiteDocStore(DocStoreContract, JournalContract):
    @pytest.fixture
    def docstore(self, tmp_path: Path) -> Iterator[SQLiteDocStore]:
        store = SQLiteDocStore(tmp_path / "docstore.sqlite")
        yield store
        store.close()

    @pytest.fixture
    def open_again(self, tmp_path: Path) -> Iterator[Callable[[int], SQLiteDocStore]]:
        opened: list[SQLiteDocStore] = []

        def open_store(keep: int) -> SQLiteDocStore:
            opened.append(SQLiteDocStore(tmp_path / "docstore.sqlite", journal_keep=keep))
            return opened[-1]

        yield open_store
        for store in opened:
            store.close()

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Iterator[Reopen]:
        opened: list[SQLiteDocStore] = []

        def open_with(encoding: SentenceVectorEncoding) -> DocStore:
            opened.append(SQLiteDocStore(tmp_path / "docstore.sqlite", encoding))
            return opened[-1]

        yield open_with
        for store in opened:
            store.close()

    def put_unnamed_vectors(
        self, docstore: DocStore, collection: str, vectors: dict[str, np.ndarray]
    ) -> None:
        assert isinstance(docstore, SQLiteDocStore)
        with docstore._transaction() as conn:
            conn.executemany(
                "INSERT INTO sentence_vectors (collection, chunk_id, row_count, dim, vectors)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (collection, key, *m.shape, m.astype(np.float16).tobytes())
                    for key, m in vectors.items()
                ],
            )

    def as_written_before(self, docstore: DocStore) -> DocStore:
        assert isinstance(docstore, SQLiteDocStore)
        ((_, _, path),) = docstore._read("PRAGMA database_list")
        docstore._conn.execute("DROP TABLE chunk_values")
        older = SQLiteDocStore(Path(path))
        self.opened.append(older)
        return older

    @pytest.fixture(autouse=True)
    def _closed_after(self) -> Iterator[None]:
        self.opened: list[DocStore] = []
        yield
        for store in self.opened:
            store.close()

    def stored_vector_bytes(self, docstore: DocStore, collection: str) -> int:
        assert isinstance(docstore, SQLiteDocStore)
        rows = docstore._read(
            "SELECT SUM(LENGTH(vectors)) FROM sentence_vectors WHERE collection = ?",
            (collection,),
        )
        return int(rows[0][0])


# integration: a MONGODB_URI naming another machine must get past the loopback-only guard
@pytest.mark.server
@pytest.mark.integration
class TestMongoDocStore(DocStoreContract, JournalContract):
    @pytest.fixture
    def docstore(self, mongo_wire_uri: str) -> Iterator[MongoDocStore]:
        store = MongoDocStore(mongo_wire_uri, self.database)
        self.uri, self.opened = mongo_wire_uri, []
        yield store
        store.drop_database()
        store.close()
        for other in self.opened:
            other.close()

    def as_written_before(self, docstore: DocStore) -> DocStore:
        assert isinstance(docstore, MongoDocStore)
        docstore._chunks.update_many({}, {"$unset": {VALUES: ""}})
        docstore._chunks.database["migrations"].delete_many({})
        assert docstore.chunks_carrying("main", "years", ["2019"]) == {}
        self.opened.append(MongoDocStore(self.uri, self.database))
        return self.opened[-1]

    @pytest.fixture
    def open_again(self, mongo_wire_uri: str) -> Iterator[Callable[[int], MongoDocStore]]:
        opened: list[MongoDocStore] = []

        def open_store(keep: int) -> MongoDocStore:
            opened.append(MongoDocStore(mongo_wire_uri, self.database, journal_keep=keep))
            return opened[-1]

        yield open_store
        for store in opened:
            store.close()

    @pytest.fixture(autouse=True)
    def _database(self) -> None:
        self.database = f"citerag_test_{uuid.uuid4().hex[:12]}"

    @pytest.fixture
    def reopen(self, mongo_wire_uri: str) -> Iterator[Reopen]:
        opened: list[MongoDocStore] = []

        def open_with(encoding: SentenceVectorEncoding) -> DocStore:
            opened.append(MongoDocStore(mongo_wire_uri, self.database, encoding))
            return opened[-1]

        yield open_with
        for store in opened:
            store.close()

    def put_unnamed_vectors(
        self, docstore: DocStore, collection: str, vectors: dict[str, np.ndarray]
    ) -> None:
        assert isinstance(docstore, MongoDocStore)
        docstore._vectors.insert_many(
            [
                {
                    "collection": collection,
                    "chunk_id": key,
                    "row_count": m.shape[0],
                    "dim": m.shape[1],
                    "vectors": Binary(m.astype(np.float16).tobytes()),
                }
                for key, m in vectors.items()
            ]
        )

    def stored_vector_bytes(self, docstore: DocStore, collection: str) -> int:
        assert isinstance(docstore, MongoDocStore)
        found = docstore._vectors.find({"collection": collection})
        return sum(len(bytes(row["vectors"])) for row in found)


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
    store = open_docstore(settings.storage)
    try:
        assert isinstance(store, SQLiteDocStore)
        ingest(store, "d1", 1)
        assert settings.storage.sqlite_path.is_file()
    finally:
        store.close()


def test_factory_opens_the_docstore_with_the_configured_vector_encoding(tmp_path: Path) -> None:
    assert Settings().storage.sentence_vector_encoding == DEFAULT_ENCODING
    settings = Settings(storage_dir=tmp_path, sentence_vector_encoding="int8")
    store = open_docstore(settings.storage)
    try:
        assert isinstance(store, SQLiteDocStore)
        store.put_sentence_vectors("main", {"d1-c0": np.ones((3, 384), np.float32)})
        rows = store._read("SELECT encoding, LENGTH(vectors) FROM sentence_vectors")
        assert rows == [("int8", 3 * (384 + 4))]
    finally:
        store.close()


def test_factory_reports_an_unreachable_mongodb_uri(tmp_path: Path) -> None:
    settings = Settings(storage_dir=tmp_path, mongodb_uri="mongodb://127.0.0.1:9/")
    with pytest.raises(BackendUnavailable, match="MONGODB_URI"):
        open_docstore(settings.storage)


def test_a_docstore_file_from_before_sources_gains_the_column_and_keeps_its_documents(
    tmp_path: Path,
) -> None:
    path = tmp_path / "docstore.sqlite"
    with sqlite3.connect(path) as old:  # the documents table as it was written before sources
        old.execute(
            "CREATE TABLE documents (collection TEXT NOT NULL, doc_id TEXT NOT NULL, name TEXT "
            "NOT NULL, pages INTEGER NOT NULL, parser TEXT NOT NULL, status TEXT NOT NULL, "
            "created_at REAL NOT NULL, PRIMARY KEY (collection, doc_id))"
        )
        row = "('main', 'd1', 'a.pdf', 3, 'pymupdf', 'ready', 1)"
        old.execute(f"INSERT INTO documents VALUES {row}")
    store = SQLiteDocStore(path)
    try:
        [kept] = store.list_documents("main")
        assert (kept.name, kept.source) == ("a.pdf", "")
    finally:
        store.close()


def test_a_docstore_file_from_before_the_journal_gains_it_and_journals_from_then_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "docstore.sqlite"
    ingest(SQLiteDocStore(path), "d1", 1)
    with sqlite3.connect(path) as old:  # a file written before the change record existed
        old.execute("DROP TABLE changes")
    store = SQLiteDocStore(path)
    try:
        assert store.generation("main") == 0  # a reader lists the collection to start
        assert [r.doc_id for r in store.list_documents("main")] == ["d1"]
        ingest(store, "d2", 1)
        changes = store.changes_since("main", 0)
        assert changes is not None and set(changes.ready) == {"d2"}
    finally:
        store.close()


def test_a_docstore_file_from_before_vector_encodings_keeps_reading_its_vectors(
    tmp_path: Path,
) -> None:
    path = tmp_path / "docstore.sqlite"
    vectors = np.random.default_rng(3).standard_normal((2, 384)).astype(np.float32)
    with sqlite3.connect(path) as old:  # the table as it was before rows named their encoding
        old.execute(
            "CREATE TABLE sentence_vectors (collection TEXT NOT NULL, chunk_id TEXT NOT NULL, "
            "row_count INTEGER NOT NULL, dim INTEGER NOT NULL, vectors BLOB NOT NULL, "
            "PRIMARY KEY (collection, chunk_id))"
        )
        old.execute(
            "INSERT INTO sentence_vectors VALUES ('main', 'd1-c0', 2, 384, ?)",
            (vectors.astype(np.float16).tobytes(),),
        )
    store = SQLiteDocStore(path, "int8")
    try:
        got = store.get_sentence_vectors("main", ["d1-c0"])["d1-c0"]
        np.testing.assert_allclose(got, vectors, rtol=1e-3, atol=1e-3)
        store.put_sentence_vectors("main", {"d1-c1": vectors})  # new rows in the store's own
        assert store.get_sentence_vectors("main", ["d1-c1"])["d1-c1"].shape == (2, 384)
    finally:
        store.close()


def test_a_vector_encoding_this_version_does_not_know_is_refused_in_one_sentence(
    tmp_path: Path,
) -> None:
    store = SQLiteDocStore(tmp_path / "docstore.sqlite")
    try:
        store.put_sentence_vectors("main", {"d1-c0": np.ones((1, 4), np.float32)})
        with store._transaction() as conn:
            conn.execute("UPDATE sentence_vectors SET encoding = 'bfloat8'")
        with pytest.raises(ValueError, match="'bfloat8'.*cannot read"):
            store.get_sentence_vectors("main", ["d1-c0"])
    finally:
        store.close()
