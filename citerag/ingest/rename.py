"""Renaming a stored document: its bytes did not change, only the file's name, so nothing is
parsed or embedded again.

Documents are stored by file name in three places: the docstore's record, each chunk's
metadata (and the section tree), and each Milvus row's `doc_name` field. The keyword index and
the sentence vectors are keyed by ids only. A rename rewrites those three in place: the record
turns `pending` under its new name first, so no question sees a half-renamed document and a kill
at any point leaves a pending record that the next sync finishes (`finish_rename`) or, when its
rows no longer agree, that ingest replaces; the record turns `ready` last, with a new
`created_at`, which is how another process's collection state notices the change and reloads
the document.
"""

from __future__ import annotations

import time
from dataclasses import replace

from citerag.nodes import DOC_NAME
from citerag.store.base import Stores
from citerag.types import DocumentRecord


def can_finish(stores: Stores, record: DocumentRecord) -> bool:
    """Whether the document's chunks and rows are whole (as many rows as chunks), so that a
    rename of it cut short can be finished rather than the file ingested again."""
    return stores.is_whole(record.collection, record.doc_id)


def rename_document(stores: Stores, record: DocumentRecord, name: str, source: str) -> None:
    """Give the document `name` (and `source`) everywhere it is stored; safe to repeat."""
    docstore, collection, doc_id = stores.docstore, record.collection, record.doc_id
    docstore.put_document(replace(record, name=name, source=source, status="pending"))
    chunks = docstore.chunks_of(collection, doc_id)
    for chunk in chunks:
        chunk.metadata[DOC_NAME] = name
    docstore.put_chunks(collection, chunks)
    tree = docstore.get_tree(collection, doc_id)
    if tree is not None:
        docstore.put_tree(collection, doc_id, {**tree, "doc_name": name})
    rows = stores.vectors.rows_of(collection, doc_id)
    for row in rows:
        row.doc_name = name
    stores.vectors.insert(collection, rows)  # an upsert by chunk id: rows are never missing
    renamed = replace(record, name=name, source=source, status="ready", created_at=time.time())
    docstore.put_document(renamed)
