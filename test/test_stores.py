"""The `Stores` bundle: a document removed from it is gone from all three stores, and a removal
cut short leaves the record pending (split-brain repair then leaves it alone)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from citerag.store.base import Stores, VectorRow
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.keywords import KeywordEntry
from citerag.store.milvus_index import MilvusIndex
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.testing.docstore import ingest


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[Stores]:
    bundle = Stores(
        SQLiteDocStore(tmp_path / "docstore.sqlite"),
        MilvusIndex(str(tmp_path / "milvus.db")),
        BM25FilesIndex(tmp_path / "keywords"),
    )
    for doc_id in ("d1", "d2"):
        chunks = ingest(bundle.docstore, doc_id, 2)
        vectors = np.eye(2, 8, dtype=np.float32)
        bundle.vectors.insert(
            "main",
            [
                VectorRow(c.node_id, v, doc_id, f"{doc_id}.pdf", 1, "text", "", "", c.text)
                for c, v in zip(chunks, vectors, strict=True)
            ],
        )
        entries = [KeywordEntry(c.node_id, "chunk", c.text) for c in chunks]
        bundle.keywords.add_document("main", doc_id, entries)
    yield bundle
    bundle.close()


def test_a_removed_document_is_gone_from_every_store(stores: Stores) -> None:
    stores.remove_document("main", "d1")
    assert stores.docstore.get_document("main", "d1") is None
    assert stores.docstore.count_chunks("main", "d1") == 0
    assert stores.vectors.count("main", "d1") == 0
    assert stores.keywords.doc_ids("main") == {"d2"}
    assert stores.vectors.count("main", "d2") == 2
    assert stores.docstore.count_chunks("main", "d2") == 2


def test_a_removal_cut_short_leaves_the_record_pending(
    stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    def killed(_collection: str, _doc_id: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(stores.vectors, "delete_document", killed)
    with pytest.raises(KeyboardInterrupt):
        stores.remove_document("main", "d1")
    record = stores.docstore.get_document("main", "d1")
    assert record is not None and record.status == "pending"
    assert [r.doc_id for r in stores.docstore.list_documents("main")] == ["d2"]
