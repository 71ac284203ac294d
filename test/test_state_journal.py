"""A serving process follows the docstore's change record: a question with nothing changed reads
one small query and lists nothing; adds, deletes and re-ingests written through another docstore
object on the same file are seen by the next question exactly as a fresh load would see them;
and a process the trimmed journal no longer reaches lists the collection once and is right."""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from citerag.nodes import chunk_node, page_vector_key
from citerag.retrieve.collection_state import CollectionState, refresh_state
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.journal import ChangeSet
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.types import DocumentRecord, JSONObject

DIM = 8
YEARS = ["2019", "2020", "2021", "2022"]


class CountingDocStore:
    """A docstore that counts the calls a refresh makes, by method."""

    def __init__(self, store: SQLiteDocStore) -> None:
        self._store = store
        self.calls: Counter[str] = Counter()

    def list_documents(self, collection: str, include_pending: bool = False) -> Any:
        self.calls["list_documents"] += 1
        return self._store.list_documents(collection, include_pending)

    def changes_since(self, collection: str, generation: int) -> ChangeSet | None:
        self.calls["changes_since"] += 1
        return self._store.changes_since(collection, generation)

    def get_cards(self, collection: str, doc_ids: Sequence[str] | None = None) -> Any:
        self.calls["get_cards" if doc_ids is None else "get_cards:some"] += 1
        return self._store.get_cards(collection, doc_ids)

    def __getattr__(self, name: str) -> Any:
        self.calls[name] += 1
        return getattr(self._store, name)


def add(
    store: SQLiteDocStore,
    doc_id: str,
    seed: int = 0,
    created_at: float = 1.0,
    chunker_ids: bool = True,
    status: str = "ready",
) -> None:
    """A three-page document with head vectors and enrichment years, as ingest writes one;
    `chunker_ids` False names its chunks without the chunker's document prefix."""
    rng = random.Random(seed)
    store.put_document(
        DocumentRecord(doc_id, f"{doc_id}.pdf", "c", 3, "pymupdf", "pending", created_at)
    )
    nodes = []
    for i in range(6):
        node = chunk_node(
            node_id=chunk_id(doc_id, i, chunker_ids),
            doc_id=doc_id,
            doc_name=f"{doc_id}.pdf",
            page=i // 2 + 1,
            chunk_index=i,
            text=f"Revenue of {doc_id} in part {i}.",
            start=0,
            block_type="table" if i % 2 else "text",
        )
        node.metadata["years"] = rng.sample(YEARS, rng.randint(0, 2))
        nodes.append(node)
    store.put_chunks("c", nodes)
    vectors = np.random.default_rng(seed).standard_normal((3, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store.put_sentence_vectors(
        "c", {page_vector_key(doc_id, page): vectors[page - 1 : page] for page in (1, 2, 3)}
    )
    card: JSONObject = {"title": f"{doc_id} report"}
    store.put_card("c", doc_id, card)
    if status == "ready":
        store.mark_ready("c", doc_id)


def chunk_id(doc_id: str, index: int, chunker_ids: bool) -> str:
    if not chunker_ids:
        return f"chunk{index}of{doc_id}"
    if index == 5:  # a figure description's id, as `enrich.figure_descriptions` makes it
        return f"{doc_id[:16]}-fig-{index // 2 + 1:04d}-0"
    return f"{doc_id[:16]}-{index:05d}"


def assert_same(state: CollectionState, fresh: CollectionState) -> None:
    """`state` (brought here by delta) shows what `fresh` (loaded whole) shows."""
    assert state.versions == fresh.versions
    assert dict(state.places.items()) == dict(fresh.places.items())
    assert len(state.places) == len(fresh.places)
    assert all(chunk_id in state.places for chunk_id in fresh.places)
    assert list(state.page_ids) == list(fresh.page_ids)
    assert len(state.page_ids) == len(fresh.page_ids)
    for page_id in fresh.page_ids:
        assert state.chunks_on(page_id) == fresh.chunks_on(page_id)
        assert state.page_key(page_id) == fresh.page_key(page_id)
    assert dict(state.key_pages) == dict(fresh.key_pages)
    assert state.carriers("years", YEARS) == fresh.carriers("years", YEARS)
    # The snapshot holds no chunk's years: each filter's chunks are the docstore's, as written
    written = {c.node_id: c.metadata["years"] for c in fresh.docstore.ready_chunks("c")}
    for wanted in YEARS:
        year = MetadataFilter(key="years", value=[wanted], operator=FilterOperator.ANY)
        expected = {chunk_id for chunk_id, years in written.items() if wanted in years}
        assert state.matching(MetadataFilters(filters=[year])) == expected
        other = MetadataFilter(key="years", value=[wanted], operator=FilterOperator.NIN)
        assert state.matching(MetadataFilters(filters=[other])) == set(written) - expected


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "docstore.sqlite"


def test_a_question_with_nothing_changed_lists_nothing(path: Path, tmp_path: Path) -> None:
    store = SQLiteDocStore(path)
    add(store, "d1", 1)
    here = CountingDocStore(store)
    keywords = BM25FilesIndex(tmp_path / "keywords")
    state = refresh_state(None, here, keywords, "c")  # type: ignore[arg-type]
    here.calls.clear()
    for _ in range(3):
        assert refresh_state(state, here, keywords, "c") is state  # type: ignore[arg-type]
    assert here.calls == Counter({"changes_since": 3})

    add(store, "d2", 2)  # as another process would
    newer = refresh_state(state, here, keywords, "c")  # type: ignore[arg-type]
    assert set(newer.docs) == {"d1", "d2"}
    assert here.calls["list_documents"] == 0
    assert here.calls["get_cards"] == 0, "only the added document's card is read"
    assert here.calls["get_cards:some"] == 1
    store.close()


def test_a_write_that_changes_nothing_shown_moves_only_the_generation(
    path: Path, tmp_path: Path
) -> None:
    store = SQLiteDocStore(path)
    add(store, "d1", 1)
    keywords = BM25FilesIndex(tmp_path / "keywords")
    state = refresh_state(None, store, keywords, "c")
    other = SQLiteDocStore(path)
    add(other, "d2", 2, status="pending")  # an ingest under way in another process
    newer = refresh_state(state, store, keywords, "c")
    assert set(newer.docs) == {"d1"}
    assert newer.generation == other.generation("c") > state.generation
    assert refresh_state(newer, store, keywords, "c") is newer
    other.close()
    store.close()


def test_adds_deletes_and_reingests_through_another_store_are_seen_as_a_fresh_load_sees_them(
    path: Path, tmp_path: Path
) -> None:
    reader, writer = SQLiteDocStore(path), SQLiteDocStore(path)
    keywords = BM25FilesIndex(tmp_path / "keywords")
    rng = random.Random(5)
    live: list[str] = []
    for n in range(4):
        add(writer, f"doc{n:02d}" + "a" * 20, n, chunker_ids=n != 2)
        live.append(f"doc{n:02d}" + "a" * 20)
    state = refresh_state(None, reader, keywords, "c")
    for step in range(30):
        action = rng.choice(["add", "add", "delete", "reingest"]) if live else "add"
        if action == "add":
            doc_id = f"doc{step + 10:02d}" + "b" * 20
            add(writer, doc_id, 100 + step, chunker_ids=step % 5 != 0)
            live.append(doc_id)
        elif action == "delete":
            doc_id = live.pop(rng.randrange(len(live)))
            gone = state.docs[doc_id]
            writer.delete_document("c", doc_id)
            keywords.remove_document("c", doc_id)  # what the deleting process's Stores does
        else:
            doc_id = rng.choice(live)
            writer.delete_document("c", doc_id)
            add(writer, doc_id, 200 + step, created_at=2.0 + step)
        state = refresh_state(state, reader, keywords, "c")
        assert set(state.docs) == set(live)
        if action == "delete":
            assert not any(chunk_id in state.places for chunk_id in gone.places)
            assert not any(page.id in state.page_ids for page in gone.pages)
        assert_same(state, refresh_state(None, SQLiteDocStore(path), keywords, "c"))
    assert keywords.doc_ids("c") == set(live)
    loose = [d for d in state.docs.values() if not d.chunks_by_prefix]
    assert 0 < len(loose) < len(state.docs), "both kinds of chunk ids were exercised"
    reader.close()
    writer.close()


def test_a_state_the_trimmed_journal_no_longer_reaches_lists_once_and_is_right(
    path: Path, tmp_path: Path
) -> None:
    writer = SQLiteDocStore(path, journal_keep=3)
    add(writer, "d1", 1)
    add(writer, "d2", 2)
    here = CountingDocStore(SQLiteDocStore(path))
    keywords = BM25FilesIndex(tmp_path / "keywords")
    state = refresh_state(None, here, keywords, "c")  # type: ignore[arg-type]
    writer.delete_document("c", "d1")
    keywords.remove_document("c", "d1")
    add(writer, "d3", 3)
    add(writer, "d2", 4, created_at=5.0)  # ingested again
    here.calls.clear()
    newer = refresh_state(state, here, keywords, "c")  # type: ignore[arg-type]
    assert here.calls["list_documents"] == 2, "one listing, one for the keyword index"
    assert set(newer.docs) == {"d2", "d3"}
    assert newer.docs["d2"].version == 5.0
    assert_same(newer, refresh_state(None, SQLiteDocStore(path), keywords, "c"))
    here.calls.clear()
    assert refresh_state(newer, here, keywords, "c") is newer  # type: ignore[arg-type]
    assert here.calls == Counter({"changes_since": 1}), "back on the journal"
    writer.close()


def test_a_file_written_before_the_value_table_answers_list_filters_as_written(
    path: Path, tmp_path: Path
) -> None:
    """A docstore file from before the value table gets it on open, filled from the stored
    chunk metadata, and a snapshot over it filters on years as over a new file."""
    store = SQLiteDocStore(path)
    for n in range(3):
        add(store, f"doc{n}", n)
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE chunk_values")
    reopened = SQLiteDocStore(path)
    state = refresh_state(None, reopened, BM25FilesIndex(tmp_path / "keywords"), "c")
    written = {c.node_id: c.metadata["years"] for c in reopened.ready_chunks("c")}
    for wanted in YEARS:
        year = MetadataFilter(key="years", value=[wanted], operator=FilterOperator.ANY)
        expected = {chunk_id for chunk_id, years in written.items() if wanted in years}
        assert state.matching(MetadataFilters(filters=[year])) == expected
    assert any(written.values())
    reopened.close()
