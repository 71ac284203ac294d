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

import pytest

from citerag.errors import BackendUnavailable
from citerag.settings import Settings
from citerag.store.factory import open_docstore
from citerag.store.mongo_docstore import MongoDocStore
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.testing.docstore import DocStoreContract, JournalContract, ingest


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


# integration: a MONGODB_URI naming another machine must get past the loopback-only guard
@pytest.mark.server
@pytest.mark.integration
class TestMongoDocStore(DocStoreContract, JournalContract):
    @pytest.fixture
    def database(self) -> str:
        return f"citerag_test_{uuid.uuid4().hex[:12]}"

    @pytest.fixture
    def docstore(self, mongo_wire_uri: str, database: str) -> Iterator[MongoDocStore]:
        store = MongoDocStore(mongo_wire_uri, database)
        yield store
        store.drop_database()
        store.close()

    @pytest.fixture
    def open_again(
        self, mongo_wire_uri: str, database: str
    ) -> Iterator[Callable[[int], MongoDocStore]]:
        opened: list[MongoDocStore] = []

        def open_store(keep: int) -> MongoDocStore:
            opened.append(MongoDocStore(mongo_wire_uri, database, journal_keep=keep))
            return opened[-1]

        yield open_store
        for store in opened:
            store.close()


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
