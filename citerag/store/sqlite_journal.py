"""The SQLite docstore's change record (`citerag.store.journal`): the `changes` table, written in
the transaction of the write it records."""

from __future__ import annotations

import sqlite3
from typing import Any

from citerag.store.journal import ChangeKind, ChangeSet, change_set, reaches
from citerag.types import DocumentRecord

JOURNAL_SCHEMA = """
CREATE TABLE IF NOT EXISTS changes (
    collection TEXT NOT NULL,
    generation INTEGER NOT NULL,
    doc_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    PRIMARY KEY (collection, generation)
);
"""
DOCUMENT_COLUMNS = "doc_id, name, collection, pages, parser, status, created_at, source"
# Stays below SQLite's bound-parameter limit on old builds (999) with room for the collection.
_BATCH = 500


def journal(
    conn: sqlite3.Connection, keep: int, collection: str, doc_id: str, kind: ChangeKind
) -> None:
    """One entry, inside the transaction of the write it records (which holds the file's write
    lock, so generations are taken one at a time and a reader never sees a gap), and the
    entries beyond the last `keep` dropped."""
    (last,) = conn.execute(
        "SELECT COALESCE(MAX(generation), 0) FROM changes WHERE collection = ?", (collection,)
    ).fetchone()
    generation = int(last) + 1
    conn.execute(
        "INSERT INTO changes (collection, generation, doc_id, kind) VALUES (?, ?, ?, ?)",
        (collection, generation, doc_id, kind),
    )
    conn.execute(
        "DELETE FROM changes WHERE collection = ? AND generation <= ?",
        (collection, generation - keep),
    )


def read_changes(conn: sqlite3.Connection, collection: str, since: int) -> ChangeSet | None:
    """`DocStore.changes_since`. The entries are read first and the records after, so a record
    is at least as new as the entries: every change up to the generation returned is in it."""
    rows = conn.execute(
        "SELECT generation, doc_id FROM changes WHERE collection = ? AND generation >= ?"
        " ORDER BY generation",
        (collection, since),
    ).fetchall()
    if not reaches(since, [int(row[0]) for row in rows]):
        return None
    changed = list(dict.fromkeys(str(doc_id) for generation, doc_id in rows if generation > since))
    if not changed:
        return ChangeSet(since)
    records: list[DocumentRecord] = []
    for start in range(0, len(changed), _BATCH):
        batch = changed[start : start + _BATCH]
        marks = ", ".join("?" * len(batch))
        found = conn.execute(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents"  # noqa: S608
            f" WHERE collection = ? AND doc_id IN ({marks})",
            (collection, *batch),
        ).fetchall()
        records += [document_record(row) for row in found]
    return change_set(int(rows[-1][0]), changed, records)


def document_record(row: tuple[Any, ...]) -> DocumentRecord:
    """A row of the documents table, its columns as `DOCUMENT_COLUMNS` names them."""
    doc_id, name, collection, pages, parser, status, created_at, source = row
    return DocumentRecord(
        doc_id=doc_id,
        name=name,
        collection=collection,
        pages=int(pages),
        parser=parser,
        status=status,
        created_at=float(created_at),
        source=str(source or ""),
    )
