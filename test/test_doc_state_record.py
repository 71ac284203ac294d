"""A new serving process opens a collection from the document states the docstore keeps, without
reading chunks, and gets the state the chunks give; a kept state of another version, vocabulary or
format, or a damaged one, is loaded again from the chunks."""

from __future__ import annotations

import base64
import sqlite3
from array import array
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from citerag.domain import GENERIC
from citerag.nodes import chunk_key, chunk_node
from citerag.retrieve import doc_state_record
from citerag.retrieve.collection_state import CollectionState, refresh_state
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.types import DocumentRecord, JSONObject
from extraction_schemas import FINANCIAL_VOCABULARY

STATEMENT = (
    "CONSOLIDATED STATEMENTS OF CASH FLOWS\n(In millions)\n"
    "|Year Ended June 30,|2021|2020|\n|---|---|---|\n|Net income|61,271|44,281|"
)
# (page, text, block type, section, label, page label, topics)
CHUNKS = [
    (1, "Risk factors we face.", "text", "1 Risks", None, "i", ["risk=piracy"]),
    (1, "More risk prose.", "text", "1 Risks", None, "i", []),
    (2, STATEMENT, "table", "2 Statements > 2.1 Cash", "Table 3", "F-4", ["finance=cash"]),
    (3, "Figure of the year.", "figure", None, "Figure 1", None, []),
]


class ReadCounter:
    """The docstore, counting the calls that read chunks (the slow part of a cold open)."""

    def __init__(self, store: SQLiteDocStore, refuse_writes: bool = False) -> None:
        self._store = store
        self._refuse = refuse_writes
        self.calls: Counter[str] = Counter()

    def chunk_metadata(self, *args: Any) -> Any:
        self.calls["chunk_metadata"] += 1
        return self._store.chunk_metadata(*args)

    def get_chunks(self, *args: Any) -> Any:
        self.calls["get_chunks"] += 1
        return self._store.get_chunks(*args)

    def put_doc_states(self, collection: str, states: Mapping[str, JSONObject]) -> None:
        if self._refuse:
            raise sqlite3.OperationalError("attempt to write a readonly database")
        self._store.put_doc_states(collection, states)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def chunk_id(doc_id: str, index: int) -> str:
    """The chunker's ids for d1 (read back by number), ids of another form for d2."""
    return chunk_key(doc_id, index) if doc_id == "d1" else f"{doc_id}-{index}"


def write(store: SQLiteDocStore, doc_id: str, created_at: float, card: bool = True) -> None:
    store.delete_document("c", doc_id)
    store.put_document(
        DocumentRecord(doc_id, f"{doc_id}.pdf", "c", 3, "pymupdf", "pending", created_at)
    )
    nodes = []
    for index, (page, text, block, section, label, printed, topics) in enumerate(CHUNKS):
        node = chunk_node(
            node_id=chunk_id(doc_id, index), doc_id=doc_id, doc_name=f"{doc_id}.pdf", page=page,
            chunk_index=index, text=text, start=0, block_type=block,
        )  # fmt: skip
        node.metadata.update({"section": section, "label": label, "page_label": printed})
        node.metadata["topics"] = topics
        nodes.append(node)
    store.put_chunks("c", nodes)
    if card:
        store.put_card("c", doc_id, {"title": f"Annual report {doc_id}"})
    store.mark_ready("c", doc_id)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteDocStore]:
    docstore = SQLiteDocStore(tmp_path / "docstore.sqlite")
    write(docstore, "d1", 1.0)
    write(docstore, "d2", 2.0, card=False)  # stored before cards: read from its first pages
    yield docstore
    docstore.close()


def opened(store: Any, tmp_path: Path, vocabulary: Any = FINANCIAL_VOCABULARY) -> CollectionState:
    """The collection as a new process opens it."""
    return refresh_state(None, store, BM25FilesIndex(tmp_path / "keywords"), "c", vocabulary)


def described(state: CollectionState) -> dict[str, Any]:
    """Everything retrieval reads of the snapshot's documents."""
    return {
        doc_id: (
            doc.places,
            doc.pages,
            doc.chunk_ids,
            dict(doc.statement_kinds),
            doc.statement_ids,
            doc.card,
            doc.page_count,
            dict(doc.values),
            doc.chunks_by_prefix,
        )
        for doc_id, doc in state.docs.items()
    }


def test_a_second_process_opens_from_kept_states_without_reading_chunks(
    store: SQLiteDocStore, tmp_path: Path
) -> None:
    first = ReadCounter(store)
    loaded = opened(first, tmp_path)
    assert first.calls["chunk_metadata"] == 2, "the first open reads each document's chunks"
    assert set(loaded.key_pages) == {"d1-page00002", "d2-page00002"}
    second = ReadCounter(store)
    again = opened(second, tmp_path)
    assert second.calls == Counter(), "nothing of the chunks is read again"
    assert described(again) == described(loaded)
    assert again.places[chunk_key("d1", 2)].page_label == "F-4"
    assert again.docs["d2"].card.title, "a card read from the first pages is kept with the state"
    assert dict(again.key_pages) == dict(loaded.key_pages)


def test_a_document_ingested_again_is_loaded_from_its_new_chunks(
    store: SQLiteDocStore, tmp_path: Path
) -> None:
    opened(store, tmp_path)
    before = list(CHUNKS)
    try:
        CHUNKS[0] = (5, "Moved to page five.", "text", "9 Other", None, "v", [])
        write(store, "d1", 3.0)  # a new version: a new created_at
    finally:
        CHUNKS[:] = before
    counter = ReadCounter(store)
    again = opened(counter, tmp_path)
    assert counter.calls["chunk_metadata"] == 1, "only the new version is read from its chunks"
    assert (again.places[chunk_key("d1", 0)].page, again.places[chunk_key("d1", 0)].section) == (
        5,
        "9 Other",
    )
    assert again.places["d2-0"].page == 1


def test_another_vocabulary_finds_its_own_key_pages(store: SQLiteDocStore, tmp_path: Path) -> None:
    assert set(opened(store, tmp_path).key_pages) == {"d1-page00002", "d2-page00002"}
    assert dict(opened(store, tmp_path, GENERIC).key_pages) == {}
    assert set(opened(store, tmp_path).key_pages) == {"d1-page00002", "d2-page00002"}


def packed(values: list[int]) -> str:
    return base64.b64encode(array("i", values).tobytes()).decode()


def with_places(kept: JSONObject, **changed: Any) -> JSONObject:
    return {**kept, "places": {**kept["places"], **changed}}  # type: ignore[dict-item]


DAMAGES = {
    "rows not base64": lambda kept: with_places(kept, rows="!!"),
    "rows not whole integers": lambda kept: with_places(kept, rows="AAA="),
    "fewer rows than chunks": lambda kept: with_places(kept, rows=packed([0] * 7)),
    "a string index past the table": lambda kept: with_places(
        kept, rows=packed([0, 99, 0, 0, 0, -1, -1] * 4)
    ),
    "a page row past the pages": lambda kept: with_places(
        kept, rows=packed([5, 0, 1, -1, -1, -1, -1] * 4)
    ),
    "no pages": lambda kept: with_places(kept, pages=packed([])),
    "strings not a list": lambda kept: with_places(kept, strings=None),
    "ids not strings": lambda kept: with_places(kept, others=[1, 2, 3, 4], numbered=0),
    "key pages not pairs": lambda kept: {**kept, "key_pages": "d1-page2"},
    "an older format": lambda kept: {**kept, "format": 1},
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_kept_state_is_loaded_again_and_replaced(
    store: SQLiteDocStore, tmp_path: Path, damage: str
) -> None:
    good = described(opened(store, tmp_path))
    kept = store.get_doc_states("c", ["d1"])["d1"]
    store.put_doc_states("c", {"d1": DAMAGES[damage](kept)})
    counter = ReadCounter(store)
    assert described(opened(counter, tmp_path)) == good
    assert counter.calls["chunk_metadata"] == 1
    assert store.get_doc_states("c", ["d1"])["d1"] == kept, "replaced by a good one"


def test_a_store_that_refuses_to_keep_states_still_opens(
    store: SQLiteDocStore, tmp_path: Path
) -> None:
    refusing = ReadCounter(store, refuse_writes=True)
    state = opened(refusing, tmp_path)
    assert sorted(state.places) == [chunk_id(d, i) for d in ("d1", "d2") for i in range(4)]
    assert store.get_doc_states("c", ["d1", "d2"]) == {}


@pytest.mark.parametrize("text", ['{"format": 1, "rows": [', "[1, 2]"])
def test_a_kept_state_that_is_not_a_json_object_is_made_again(
    store: SQLiteDocStore, tmp_path: Path, text: str
) -> None:
    good = described(opened(store, tmp_path))
    with sqlite3.connect(tmp_path / "docstore.sqlite") as raw:  # a torn or foreign write
        raw.execute("UPDATE doc_states SET data = ? WHERE doc_id = 'd1'", (text,))
    assert "d1" not in store.get_doc_states("c", ["d1"])
    assert described(opened(store, tmp_path)) == good
    assert "d1" in store.get_doc_states("c", ["d1"])


def test_documents_are_read_and_kept_a_batch_at_a_time(
    store: SQLiteDocStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = described(opened(store, tmp_path))
    store.delete_document("c", "d2")
    write(store, "d2", 5.0, card=False)  # its state made again, in a batch of its own
    monkeypatch.setattr(doc_state_record, "BATCH", 1)
    counter = ReadCounter(store)
    again = described(opened(counter, tmp_path))
    assert counter.calls["chunk_metadata"] == 1
    assert again["d1"] == whole["d1"] and set(again) == {"d1", "d2"}
    assert set(store.get_doc_states("c", ["d1", "d2"])) == {"d1", "d2"}
