"""The embedded docstore: one SQLite file (WAL) with indexed tables, shared between threads."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.schema import TextNode

from citerag.nodes import (
    chunk_index_of,
    doc_id_of,
    from_record,
    page_of,
    page_vector_prefix,
    to_record,
)
from citerag.settings.choices import SentenceVectorEncoding
from citerag.store.base import ChunkMetadata
from citerag.store.journal import JOURNAL_KEEP, ChangeKind, ChangeSet
from citerag.store.sqlite_journal import DOCUMENT_COLUMNS, journal, read_changes
from citerag.store.sqlite_journal import document_record as _record
from citerag.store.sqlite_schema import open_schema
from citerag.store.sqlite_values import read_carried, read_carriers, replace_values, value_rows
from citerag.store.vector_codec import (
    DEFAULT_ENCODING,
    checked_encoding,
    decode_vectors,
    encode_vectors,
)
from citerag.types import DocumentRecord, JSONObject

# Stays below SQLite's bound-parameter limit on old builds (999) with room for the collection.
ID_BATCH = 500


class SQLiteDocStore:
    """`DocStore` over sqlite3: one connection guarded by a lock, every write a transaction.
    A write that changes a document's record journals it in the same transaction
    (`citerag.store.journal`); the `changes` table is created in a file written before it, whose
    readers start from a listing."""

    def __init__(
        self,
        path: Path,
        vector_encoding: SentenceVectorEncoding = DEFAULT_ENCODING,
        journal_keep: int = JOURNAL_KEEP,
    ) -> None:
        self._keep = journal_keep
        path.parent.mkdir(parents=True, exist_ok=True)
        self._vector_encoding = checked_encoding(vector_encoding)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        with self._lock:
            open_schema(self._conn)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def put_document(self, record: DocumentRecord) -> None:
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO documents"
                " (collection, doc_id, name, pages, parser, status, created_at, source)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (collection, doc_id) DO UPDATE SET name = excluded.name,"
                " pages = excluded.pages, parser = excluded.parser, status = excluded.status,"
                " created_at = excluded.created_at, source = excluded.source",
                (
                    record.collection,
                    record.doc_id,
                    record.name,
                    record.pages,
                    record.parser,
                    record.status,
                    record.created_at,
                    record.source,
                ),
            )
            kind: ChangeKind = "ready" if record.status == "ready" else "pending"
            journal(conn, self._keep, record.collection, record.doc_id, kind)

    def put_chunks(self, collection: str, chunks: Sequence[TextNode]) -> None:
        rows = [
            (
                collection,
                c.node_id,
                doc_id_of(c),
                page_of(c),
                chunk_index_of(c),
                json.dumps(to_record(c)),
            )
            for c in chunks
        ]
        values = [
            row
            for c in chunks
            for row in value_rows(collection, c.node_id, doc_id_of(c), c.metadata)
        ]
        with self._transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO chunks (collection, id, doc_id, page, chunk_index, data)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            replace_values(conn, collection, [c.node_id for c in chunks], values)
            # A document's kept state is derived from its chunks: any chunk written drops it.
            conn.executemany(
                "DELETE FROM doc_states WHERE collection = ? AND doc_id = ?",
                [(collection, doc_id) for doc_id in sorted({doc_id_of(c) for c in chunks})],
            )

    def put_sentence_vectors(self, collection: str, vectors: dict[str, np.ndarray]) -> None:
        encoding = self._vector_encoding
        rows = [
            (collection, chunk_id, *encode_vectors(matrix, encoding), encoding)
            for chunk_id, matrix in vectors.items()
        ]
        with self._transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO sentence_vectors"
                " (collection, chunk_id, row_count, dim, vectors, encoding)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )

    def mark_ready(self, collection: str, doc_id: str) -> None:
        with self._transaction() as conn:
            conn.execute(
                "UPDATE documents SET status = 'ready' WHERE collection = ? AND doc_id = ?",
                (collection, doc_id),
            )
            journal(conn, self._keep, collection, doc_id, "ready")

    def get_document(self, collection: str, doc_id: str) -> DocumentRecord | None:
        rows = self._read(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE collection = ? AND doc_id = ?",
            (collection, doc_id),
        )
        return _record(rows[0]) if rows else None

    def find_by_name(self, collection: str, name: str) -> list[DocumentRecord]:
        rows = self._read(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE collection = ? AND name = ?"
            " ORDER BY created_at, doc_id",
            (collection, name),
        )
        return [_record(row) for row in rows]

    def list_documents(
        self, collection: str, include_pending: bool = False
    ) -> list[DocumentRecord]:
        status_filter = "" if include_pending else " AND status = 'ready'"
        rows = self._read(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE collection = ?{status_filter}"
            " ORDER BY name, doc_id",
            (collection,),
        )
        return [_record(row) for row in rows]

    def _read_among(
        self, select: str, key: str, collection: str, ids: Sequence[str]
    ) -> Iterator[tuple[Any, ...]]:
        """`select` (its WHERE to be completed) for the rows of `collection` whose `key` is one
        of `ids`, in batches under SQLite's variable limit."""
        for batch in _batches(list(dict.fromkeys(ids))):
            marks = ", ".join("?" * len(batch))
            sql = f"{select} WHERE collection = ? AND {key} IN ({marks})"
            yield from self._read(sql, (collection, *batch))

    def get_chunks(self, collection: str, chunk_ids: Sequence[str]) -> list[TextNode]:
        rows = self._read_among("SELECT id, data FROM chunks", "id", collection, chunk_ids)
        found = {chunk_id: from_record(json.loads(data)) for chunk_id, data in rows}
        return [found[i] for i in chunk_ids if i in found]

    def get_sentence_vectors(
        self, collection: str, chunk_ids: Sequence[str]
    ) -> dict[str, np.ndarray]:
        select = "SELECT chunk_id, row_count, dim, vectors, encoding FROM sentence_vectors"
        return {
            chunk_id: decode_vectors(blob, row_count, dim, checked_encoding(encoding))
            for chunk_id, row_count, dim, blob, encoding in self._read_among(
                select, "chunk_id", collection, chunk_ids
            )
        }

    def chunks_of(self, collection: str, doc_id: str) -> list[TextNode]:
        rows = self._read(
            "SELECT data FROM chunks WHERE collection = ? AND doc_id = ? ORDER BY chunk_index",
            (collection, doc_id),
        )
        return [from_record(json.loads(row[0])) for row in rows]

    def ready_chunks(self, collection: str) -> list[TextNode]:
        rows = self._read(
            "SELECT c.data FROM chunks c JOIN documents d"
            " ON d.collection = c.collection AND d.doc_id = c.doc_id"
            " WHERE c.collection = ? AND d.status = 'ready'"
            " ORDER BY c.doc_id, c.chunk_index",
            (collection,),
        )
        return [from_record(json.loads(row[0])) for row in rows]

    def chunk_metadata(
        self, collection: str, doc_id: str, keys: Sequence[str]
    ) -> list[ChunkMetadata]:
        # json_extract with several paths returns one JSON array: SQLite reads the record and
        # Python parses only the fields asked for, never the text.
        paths = ["$.node.start_char_idx", *(f'$.node.metadata."{key}"' for key in keys)]
        marks = ", ".join("?" * len(paths))
        rows = self._read(
            f"SELECT id, json_extract(data, {marks}) FROM chunks"
            " WHERE collection = ? AND doc_id = ? ORDER BY chunk_index",
            (*paths, collection, doc_id),
        )
        found = []
        for chunk_id, fields in rows:
            start, *values = json.loads(fields)
            metadata = {k: v for k, v in zip(keys, values, strict=True) if v is not None}
            found.append(ChunkMetadata(chunk_id, int(start or 0), metadata))
        return found

    def chunks_carrying(
        self, collection: str, field: str, values: Sequence[str], partial: bool = False
    ) -> dict[str, set[str]]:
        with self._lock:
            return read_carriers(self._conn, collection, field, values, partial)

    def values_carried(self, collection: str, field: str, values: Collection[str]) -> set[str]:
        with self._lock:
            return read_carried(self._conn, collection, field, values)

    def count_chunks(self, collection: str, doc_id: str) -> int:
        rows = self._read(
            "SELECT COUNT(*) FROM chunks WHERE collection = ? AND doc_id = ?",
            (collection, doc_id),
        )
        return int(rows[0][0])

    def chunk_stats(self, collection: str) -> dict[str, tuple[int, int]]:
        """Per document id (record or not): its chunk count and highest chunk index."""
        rows = self._read(
            "SELECT doc_id, COUNT(*), MAX(chunk_index) FROM chunks WHERE collection = ?"
            " GROUP BY doc_id",
            (collection,),
        )
        return {str(row[0]): (int(row[1]), int(row[2])) for row in rows}

    def delete_document(self, collection: str, doc_id: str) -> None:
        with self._transaction() as conn:
            conn.execute(
                "DELETE FROM sentence_vectors WHERE collection = ? AND chunk_id IN"
                " (SELECT id FROM chunks WHERE collection = ? AND doc_id = ?)",
                (collection, collection, doc_id),
            )
            conn.execute(
                "DELETE FROM sentence_vectors WHERE collection = ? AND chunk_id LIKE ?",
                (collection, page_vector_prefix(doc_id) + "%"),
            )
            conn.execute(
                "DELETE FROM chunks WHERE collection = ? AND doc_id = ?", (collection, doc_id)
            )
            conn.execute(
                "DELETE FROM chunk_values WHERE collection = ? AND doc_id = ?",
                (collection, doc_id),
            )
            conn.execute(
                "DELETE FROM documents WHERE collection = ? AND doc_id = ?", (collection, doc_id)
            )
            for table in ("trees", "cards", "doc_states"):
                conn.execute(
                    f"DELETE FROM {table} WHERE collection = ? AND doc_id = ?",  # noqa: S608
                    (collection, doc_id),
                )
            journal(conn, self._keep, collection, doc_id, "deleted")

    def put_tree(self, collection: str, doc_id: str, tree: JSONObject) -> None:
        with self._transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO trees (collection, doc_id, data) VALUES (?, ?, ?)",
                (collection, doc_id, json.dumps(tree)),
            )

    def get_tree(self, collection: str, doc_id: str) -> JSONObject | None:
        rows = self._read(
            "SELECT data FROM trees WHERE collection = ? AND doc_id = ?", (collection, doc_id)
        )
        return json.loads(rows[0][0]) if rows else None

    def put_card(self, collection: str, doc_id: str, card: JSONObject) -> None:
        with self._transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO cards (collection, doc_id, data) VALUES (?, ?, ?)",
                (collection, doc_id, json.dumps(card)),
            )

    def get_cards(
        self, collection: str, doc_ids: Sequence[str] | None = None
    ) -> dict[str, JSONObject]:
        select = "SELECT doc_id, data FROM cards"
        rows = (
            self._read(f"{select} WHERE collection = ?", (collection,))
            if doc_ids is None
            else self._read_among(select, "doc_id", collection, doc_ids)
        )
        return {doc_id: json.loads(data) for doc_id, data in rows}

    def put_doc_states(self, collection: str, states: Mapping[str, JSONObject]) -> None:
        rows = [(collection, doc_id, json.dumps(state)) for doc_id, state in states.items()]
        with self._transaction() as conn:  # not journaled: derived data, no change to a document
            conn.executemany(
                "INSERT OR REPLACE INTO doc_states (collection, doc_id, data) VALUES (?, ?, ?)",
                rows,
            )

    def get_doc_states(self, collection: str, doc_ids: Sequence[str]) -> dict[str, JSONObject]:
        select = "SELECT doc_id, data FROM doc_states"
        return {
            doc_id: state
            for doc_id, data in self._read_among(select, "doc_id", collection, doc_ids)
            for state in _json_object(data)
        }

    def generation(self, collection: str) -> int:
        rows = self._read(
            "SELECT COALESCE(MAX(generation), 0) FROM changes WHERE collection = ?", (collection,)
        )
        return int(rows[0][0])

    def changes_since(self, collection: str, generation: int) -> ChangeSet | None:
        with self._lock:
            return read_changes(self._conn, collection, generation)

    def collections(self) -> list[str]:
        rows = self._read(
            "SELECT DISTINCT collection FROM documents WHERE status = 'ready' ORDER BY collection"
        )
        return [row[0] for row in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _batches(ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), ID_BATCH):
        yield ids[start : start + ID_BATCH]


def _json_object(data: str) -> list[JSONObject]:
    """`data` parsed, or nothing when it is not a JSON object (a damaged row of derived data,
    which its reader makes again)."""
    try:
        parsed = json.loads(data)
    except ValueError:
        return []
    return [parsed] if isinstance(parsed, dict) else []
