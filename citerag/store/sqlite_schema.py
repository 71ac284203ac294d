"""The SQLite docstore's tables, and what a file written by an older version gets on open."""

from __future__ import annotations

import sqlite3

from citerag.store.sqlite_journal import JOURNAL_SCHEMA
from citerag.store.sqlite_values import add_values_table

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    collection TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    name TEXT NOT NULL,
    pages INTEGER NOT NULL,
    parser TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'ready')),
    created_at REAL NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (collection, doc_id)
);
CREATE INDEX IF NOT EXISTS documents_by_name ON documents (collection, name);
CREATE TABLE IF NOT EXISTS chunks (
    collection TEXT NOT NULL,
    id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    page INTEGER NOT NULL,
    chunk_index INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (collection, id)
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks (collection, doc_id, chunk_index);
CREATE TABLE IF NOT EXISTS sentence_vectors (
    collection TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    row_count INTEGER NOT NULL,
    dim INTEGER NOT NULL,
    vectors BLOB NOT NULL,
    encoding TEXT NOT NULL DEFAULT 'float16',
    PRIMARY KEY (collection, chunk_id)
);
CREATE TABLE IF NOT EXISTS cards (
    collection TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (collection, doc_id)
);
CREATE TABLE IF NOT EXISTS doc_states (
    collection TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (collection, doc_id)
);
CREATE TABLE IF NOT EXISTS trees (
    collection TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (collection, doc_id)
);
"""


def open_schema(conn: sqlite3.Connection) -> None:
    """Every table, in a new file or an old one (the caller holds the connection's lock)."""
    conn.executescript(SCHEMA + JOURNAL_SCHEMA)
    _add_source_column(conn)
    _add_encoding_column(conn)
    add_values_table(conn)


def _add_source_column(conn: sqlite3.Connection) -> None:
    """Files written before documents kept their source get the column (empty)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(documents)")}
    if "source" not in columns:
        conn.execute("ALTER TABLE documents ADD COLUMN source TEXT NOT NULL DEFAULT ''")


def _add_encoding_column(conn: sqlite3.Connection) -> None:
    """Files written before rows named their encoding get the column; their rows are the
    float16 every row was then (vector_codec.UNNAMED_ROWS)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(sentence_vectors)")}
    if "encoding" not in columns:
        conn.execute(
            "ALTER TABLE sentence_vectors ADD COLUMN encoding TEXT NOT NULL DEFAULT 'float16'"
        )
