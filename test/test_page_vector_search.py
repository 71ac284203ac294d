"""Pages ranked by head vector come from the vector index's page collection, not from vectors the
snapshot holds: the hits are the exact ranking an in-memory matrix gave, only pages the
snapshot shows are found, a collection made before the page collection gets its rows from the
docstore once, and the snapshot holds no page vector."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from citerag.ingest.page_rows import restore_page_rows, write_page_rows
from citerag.nodes import chunk_node, page_vector_key
from citerag.retrieve.collection_state import CollectionState, refresh_state
from citerag.store.base import Stores
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.milvus_index import MilvusIndex
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.types import DocumentRecord

DIM = 16
PAGES = 4


@pytest.fixture(scope="module")
def milvus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusIndex]:
    index = MilvusIndex(str(tmp_path_factory.mktemp("milvus") / "milvus.db"))
    yield index
    index.close()


@pytest.fixture
def stores(tmp_path: Path, milvus: MilvusIndex) -> Iterator[Stores]:
    docstore = SQLiteDocStore(tmp_path / "docstore.sqlite")
    yield Stores(docstore, milvus, BM25FilesIndex(tmp_path / "keywords"))
    milvus.drop_collection("c")
    docstore.close()


def heads_of(doc_id: str, seed: int) -> dict[str, np.ndarray]:
    vectors = np.random.default_rng(seed).standard_normal((PAGES, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return {page_vector_key(doc_id, n): vectors[n - 1 : n] for n in range(1, PAGES + 1)}


def add(stores: Stores, doc_id: str, seed: int, ready: bool = True, rows: bool = True) -> None:
    """A document of PAGES pages, a chunk each, with its head vectors in the docstore and (as
    ingest writes them, unless `rows` is False) in the page collection."""
    docstore = stores.docstore
    record = DocumentRecord(doc_id, f"{doc_id}.pdf", "c", PAGES, "pymupdf", "pending", 1.0)
    docstore.put_document(record)
    chunks = [
        chunk_node(
            node_id=f"{doc_id}-{n}",
            doc_id=doc_id,
            doc_name=f"{doc_id}.pdf",
            page=n,
            chunk_index=n - 1,
            text=f"Page {n} of {doc_id}.",
            start=0,
        )
        for n in range(1, PAGES + 1)
    ]
    docstore.put_chunks("c", chunks)
    heads = heads_of(doc_id, seed)
    docstore.put_sentence_vectors("c", heads)
    if rows:
        write_page_rows(stores, "c", doc_id, range(1, PAGES + 1), heads)
    if ready:
        docstore.mark_ready("c", doc_id)


def state_of(stores: Stores) -> CollectionState:
    return refresh_state(None, stores.docstore, stores.keywords, "c", pages=stores.vectors.pages)


def exact(stores: Stores, state: CollectionState, query: np.ndarray, top_k: int) -> list[str]:
    """The ranking the snapshot's own matrix of head vectors gave (stable, in page order)."""
    ids = list(state.page_ids)
    stored = stores.docstore.get_sentence_vectors("c", ids)
    matrix = np.concatenate([stored[page_id] for page_id in ids])
    order = np.argsort(-(matrix @ query), kind="stable")
    return [ids[i] for i in order[:top_k]]


def test_page_hits_are_the_exact_ranking_of_the_pages_the_snapshot_shows(stores: Stores) -> None:
    for n in range(4):
        add(stores, f"doc{n}", seed=n)
    add(
        stores, "pending", seed=99, ready=False
    )  # being ingested elsewhere: rows written, not ready yet
    add(stores, "gone", seed=98)
    stores.remove_document("c", "gone")
    state = state_of(stores)
    assert set(state.docs) == {f"doc{n}" for n in range(4)}
    for query in np.random.default_rng(7).standard_normal((3, DIM)).astype(np.float32):
        query /= np.linalg.norm(query)
        hits = state.page_vector_hits(query, 5)
        assert hits == exact(stores, state, query, 5)
        allowed = set(list(state.page_ids)[::3]) | {page_vector_key("pending", 1)}
        assert (
            state.page_vector_hits(query, 3, allowed)
            == [p for p in exact(stores, state, query, len(state.page_ids)) if p in allowed][:3]
        )
    pending_page = heads_of("pending", 99)[page_vector_key("pending", 2)][0]
    assert page_vector_key("pending", 2) not in state.page_vector_hits(pending_page, 16)
    assert stores.vectors.pages.doc_ids("c") == {*state.docs, "pending"}, "gone went with it"


def test_a_collection_made_before_the_page_collection_gets_its_rows_from_the_docstore_once(
    stores: Stores,
) -> None:
    for n in range(3):
        add(stores, f"old{n}", seed=10 + n, rows=False)
    state = state_of(stores)
    query = heads_of("old1", 11)[page_vector_key("old1", 3)][0]
    assert state.page_vector_hits(query, 3) == []  # nothing to search yet
    assert restore_page_rows(stores, "c") == 3
    assert state.page_vector_hits(query, 3) == exact(stores, state, query, 3)
    assert state.page_vector_hits(query, 1) == [page_vector_key("old1", 3)]
    assert restore_page_rows(stores, "c") == 0, "filled once"
    assert stores.vectors.pages.count("c") == 3 * PAGES
    stores.vectors.pages.drop("c")  # a page collection lost on its own
    assert restore_page_rows(stores, "c") == 3
    assert stores.vectors.pages.count("c", "old2") == PAGES


def test_the_snapshot_holds_no_page_vector(stores: Stores) -> None:
    for n in range(3):
        add(stores, f"doc{n}", seed=n)
    state = state_of(stores)
    assert state.page_vector_hits(np.ones(DIM, np.float32), 2)
    held = [
        found
        for found in _reachable(state, skip=(state.keywords, state.pages, state.docstore))
        if isinstance(found, np.ndarray) and found.dtype.kind == "f"  # a vector, not place columns
    ]
    assert held == []


def _reachable(root: object, skip: tuple[object, ...]) -> Iterator[object]:
    """Every object reachable from `root` but through `skip` (the indexes the state asks)."""
    seen = {id(s) for s in skip} | {id(root)}
    stack = [root]
    while stack:
        found = stack.pop()
        yield found
        if isinstance(found, type):
            continue  # a class's attributes are not the state's
        for referent in gc.get_referents(found):
            if id(referent) not in seen:
                seen.add(id(referent))
                stack.append(referent)
