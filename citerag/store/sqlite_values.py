"""The SQLite docstore's value table: one row per (chunk, list field, case-folded value), written
in the transaction that writes the chunk, so a serving process asks which chunks carry a value
instead of holding every chunk's lists (`DocStore.chunks_carrying`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence

from citerag.nodes import VALUE_SOURCES, folded, folded_values

VALUES_TABLE = """
CREATE TABLE IF NOT EXISTS chunk_values (
    collection TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    field TEXT NOT NULL,
    value TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    PRIMARY KEY (collection, chunk_id, field, value)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunk_values_by_value ON chunk_values (collection, field, value);
CREATE INDEX IF NOT EXISTS chunk_values_by_doc ON chunk_values (collection, doc_id);
"""
# Stays below SQLite's bound-parameter limit on old builds (999) with room for the rest.
_BATCH = 400
ValueRow = tuple[str, str, str, str, str]  # collection, chunk id, field, folded value, doc id


def add_values_table(conn: sqlite3.Connection) -> None:
    """The table, for a file of any age. A file written before it has its chunks' values read
    from their stored metadata once, in the transaction that creates the table: a process
    stopped half-way leaves no table, and the next open backfills again."""
    if _has_table(conn):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _has_table(conn):  # another process made it while this one waited for the lock
            conn.execute("ROLLBACK")
            return
        for statement in VALUES_TABLE.split(";"):  # executescript would commit first
            if statement.strip():
                conn.execute(statement)
        extracts = ", ".join(
            f"json_extract(data, '$.node.metadata.\"{key}\"')" for key in VALUE_SOURCES
        )
        cursor = conn.execute(
            f"SELECT collection, id, doc_id, json_array({extracts}) FROM chunks"  # noqa: S608
        )
        while rows := cursor.fetchmany(_BATCH):
            for collection, chunk_id, doc_id, lists in rows:
                held = dict(zip(VALUE_SOURCES, json.loads(lists), strict=True))
                insert_values(conn, value_rows(collection, chunk_id, doc_id, held))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _has_table(conn: sqlite3.Connection) -> bool:
    (found,) = conn.execute(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'chunk_values'"
    ).fetchone()
    return bool(found)


def value_rows(
    collection: str, chunk_id: str, doc_id: str, metadata: Mapping[str, object]
) -> Iterator[ValueRow]:
    for field, value in folded_values(metadata):
        yield collection, chunk_id, field, value, doc_id


def replace_values(
    conn: sqlite3.Connection, collection: str, chunk_ids: Sequence[str], rows: list[ValueRow]
) -> None:
    """The value rows of `chunk_ids` become `rows` (inside the caller's transaction)."""
    for start in range(0, len(chunk_ids), _BATCH):
        batch = chunk_ids[start : start + _BATCH]
        marks = ", ".join("?" * len(batch))
        conn.execute(
            f"DELETE FROM chunk_values WHERE collection = ? AND chunk_id IN ({marks})",  # noqa: S608
            (collection, *batch),
        )
    insert_values(conn, rows)


def insert_values(conn: sqlite3.Connection, rows: Iterable[ValueRow]) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO chunk_values (collection, chunk_id, field, value, doc_id)"
        " VALUES (?, ?, ?, ?, ?)",
        rows,
    )


def read_carried(
    conn: sqlite3.Connection, collection: str, field: str, values: Collection[str]
) -> set[str]:
    """`DocStore.values_carried` on one connection (the caller holds its lock): the index on
    (collection, field, value) answers it without reading a chunk."""
    rows = _rows_among(conn, "DISTINCT value", collection, field, folded(values))
    return {value for (value,) in rows}


def read_carriers(
    conn: sqlite3.Connection,
    collection: str,
    field: str,
    values: Sequence[str],
    partial: bool,
) -> dict[str, set[str]]:
    """`DocStore.chunks_carrying` on one connection (the caller holds its lock)."""
    wanted = folded(values)
    found: dict[str, set[str]] = {}
    if partial:  # instr, not LIKE: a value's own % and _ are not wildcards
        for needle in wanted:
            rows = conn.execute(
                "SELECT chunk_id FROM chunk_values"
                " WHERE collection = ? AND field = ? AND instr(value, ?) > 0",
                (collection, field, needle),
            ).fetchall()
            if rows:
                found[needle] = {row[0] for row in rows}
        return found
    for value, chunk_id in _rows_among(conn, "value, chunk_id", collection, field, wanted):
        found.setdefault(value, set()).add(chunk_id)
    return found


def _rows_among(
    conn: sqlite3.Connection, columns: str, collection: str, field: str, values: Iterable[str]
) -> Iterator[tuple[str, ...]]:
    """`columns` of the value rows of `field` holding any of `values` (case-folded already),
    asked in batches under SQLite's bound-parameter limit."""
    wanted = list(values)
    for start in range(0, len(wanted), _BATCH):
        batch = wanted[start : start + _BATCH]
        marks = ", ".join("?" * len(batch))
        yield from conn.execute(
            f"SELECT {columns} FROM chunk_values"  # noqa: S608
            f" WHERE collection = ? AND field = ? AND value IN ({marks})",
            (collection, field, *batch),
        ).fetchall()
