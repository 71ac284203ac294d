"""The contract of `DocStore` (citerag.store.base): SQLite and MongoDB keep it.

Subclass `DocStoreContract` and give the class a `docstore` fixture that yields an empty store
(and closes it after), and what `citerag.testing.docstore_vectors` asks for; `JournalContract`
checks the change record and needs `open_again` too; `citerag.testing.docstore_values` asks for
`as_written_before`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

from citerag.nodes import boxes_of, chunk_node, neighbour_id, page_vector_key
from citerag.store.base import DocStore
from citerag.store.journal import JOURNAL_KEEP, ChangeSet
from citerag.testing.docstore_values import ValueTableContract
from citerag.testing.docstore_vectors import SentenceVectorContract
from citerag.types import BBox, DocumentRecord, JSONObject


def record(doc_id: str, name: str = "report.pdf", collection: str = "main") -> DocumentRecord:
    return DocumentRecord(
        doc_id=doc_id,
        name=name,
        collection=collection,
        pages=12,
        parser="pymupdf",
        created_at=1_700_000_000.5,
    )


def chunk(doc_id: str, index: int, page: int = 1) -> TextNode:
    text = f"Revenue grew {index}% in the quarter. Costs fell sharply."
    node = chunk_node(
        node_id=f"{doc_id}-c{index}",
        doc_id=doc_id,
        doc_name=f"{doc_id}.pdf",
        page=page,
        chunk_index=index,
        text=text,
        start=100 * index,
        section="2 Results > 2.1 Revenue",
        block_type="table" if index % 2 else "text",
        label="3" if index % 2 else "",
        boxes=[BBox(10.0, 20.5, 300.25, 40.0), BBox(10.0, 42.0, 120.0, 60.75)],
        sentences=[(0, 36), (37, len(text))],
        table_context="Revenue by quarter | 2024" if index % 2 else "",
    )
    if index:
        node.relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(
            node_id=f"{doc_id}-c{index - 1}"
        )
    node.relationships[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=f"{doc_id}-c{index + 1}")
    return node


def ingest(store: DocStore, doc_id: str, n_chunks: int, collection: str = "main") -> list[TextNode]:
    chunks = [chunk(doc_id, i) for i in range(n_chunks)]
    store.put_document(record(doc_id, name=f"{doc_id}.pdf", collection=collection))
    store.put_chunks(collection, chunks)
    store.mark_ready(collection, doc_id)
    return chunks


class DocStoreContract(SentenceVectorContract, ValueTableContract):
    def test_put_and_get_document_round_trips_every_field(self, docstore: DocStore) -> None:
        docstore.put_document(record("d1"))
        assert docstore.get_document("main", "d1") == record("d1")
        assert docstore.get_document("main", "missing") is None

    def test_a_document_keeps_its_source_path_and_a_rewrite_changes_it(
        self, docstore: DocStore
    ) -> None:
        first = replace(record("d1"), source="/shelf/a/report.pdf")
        docstore.put_document(first)
        assert docstore.get_document("main", "d1") == first
        moved = replace(first, name="renamed.pdf", source="/shelf/a/renamed.pdf")
        docstore.put_document(moved)
        assert docstore.find_by_name("main", "renamed.pdf") == [moved]
        assert docstore.find_by_name("main", "report.pdf") == []

    def test_pending_documents_are_hidden_until_marked_ready(self, docstore: DocStore) -> None:
        docstore.put_document(record("d1"))
        docstore.put_chunks("main", [chunk("d1", 0)])
        assert docstore.list_documents("main") == []
        assert [d.doc_id for d in docstore.list_documents("main", include_pending=True)] == ["d1"]
        assert docstore.ready_chunks("main") == []

        docstore.mark_ready("main", "d1")
        listed = docstore.list_documents("main")
        assert [(d.doc_id, d.status) for d in listed] == [("d1", "ready")]
        assert [c.node_id for c in docstore.ready_chunks("main")] == ["d1-c0"]

    def test_find_by_name_returns_every_version_of_a_file(self, docstore: DocStore) -> None:
        docstore.put_document(record("v1", name="same.pdf"))
        docstore.put_document(record("v2", name="same.pdf"))
        docstore.put_document(record("other", name="other.pdf"))
        assert sorted(d.doc_id for d in docstore.find_by_name("main", "same.pdf")) == ["v1", "v2"]
        assert docstore.find_by_name("main", "absent.pdf") == []

    def test_chunks_round_trip_with_boxes_and_sentences(self, docstore: DocStore) -> None:
        chunks = ingest(docstore, "d1", 3)
        assert docstore.get_chunks("main", [c.node_id for c in chunks]) == chunks
        assert docstore.chunks_of("main", "d1") == chunks
        assert boxes_of(docstore.get_chunks("main", ["d1-c1"])[0])[1] == BBox(
            10.0, 42.0, 120.0, 60.75
        )
        first = docstore.get_chunks("main", ["d1-c0"])[0]
        assert neighbour_id(first, NodeRelationship.PREVIOUS) is None
        assert neighbour_id(first, NodeRelationship.NEXT) == "d1-c1"

    def test_get_chunks_keeps_the_order_asked_and_skips_unknown_ids(
        self, docstore: DocStore
    ) -> None:
        ingest(docstore, "d1", 4)
        got = docstore.get_chunks("main", ["d1-c3", "nope", "d1-c0", "d1-c2"])
        assert [c.node_id for c in got] == ["d1-c3", "d1-c0", "d1-c2"]
        assert docstore.get_chunks("main", []) == []

    def test_ready_chunks_are_ordered_by_document_then_position(self, docstore: DocStore) -> None:
        docstore.put_document(record("b"))
        docstore.put_chunks("main", [chunk("b", i) for i in (2, 0, 1)])
        docstore.mark_ready("main", "b")
        docstore.put_document(record("a"))
        docstore.put_chunks("main", [chunk("a", i) for i in (1, 0)])
        docstore.mark_ready("main", "a")
        ids = [c.node_id for c in docstore.ready_chunks("main")]
        assert ids == ["a-c0", "a-c1", "b-c0", "b-c1", "b-c2"]

    def test_sentence_vectors_round_trip_as_float32_within_float16_precision(
        self, docstore: DocStore
    ) -> None:
        rng = np.random.default_rng(7)
        vectors = {
            "d1-c0": rng.standard_normal((3, 384)).astype(np.float32),
            "d1-c1": rng.standard_normal((1, 384)).astype(np.float32),
        }
        ingest(docstore, "d1", 2)
        docstore.put_sentence_vectors("main", vectors)
        got = docstore.get_sentence_vectors("main", ["d1-c1", "d1-c0", "unknown"])
        assert set(got) == {"d1-c0", "d1-c1"}
        for chunk_id, expected in vectors.items():
            assert got[chunk_id].dtype == np.float32
            assert got[chunk_id].shape == expected.shape
            np.testing.assert_allclose(got[chunk_id], expected, rtol=1e-3, atol=1e-3)

    def test_count_chunks_counts_one_document(self, docstore: DocStore) -> None:
        ingest(docstore, "d1", 5)
        ingest(docstore, "d2", 2)
        assert docstore.count_chunks("main", "d1") == 5
        assert docstore.count_chunks("main", "d2") == 2
        assert docstore.count_chunks("main", "missing") == 0

    def test_delete_document_removes_record_chunks_and_vectors(self, docstore: DocStore) -> None:
        chunks = ingest(docstore, "d1", 3)
        ingest(docstore, "d2", 2)
        docstore.put_sentence_vectors(
            "main", {c.node_id: np.ones((2, 8), np.float32) for c in chunks}
        )
        docstore.delete_document("main", "d1")
        assert docstore.get_document("main", "d1") is None
        assert docstore.count_chunks("main", "d1") == 0
        assert docstore.get_chunks("main", [c.node_id for c in chunks]) == []
        assert docstore.get_sentence_vectors("main", [c.node_id for c in chunks]) == {}
        assert [d.doc_id for d in docstore.list_documents("main")] == ["d2"]
        assert docstore.count_chunks("main", "d2") == 2

    def test_collections_isolate_each_other(self, docstore: DocStore) -> None:
        ingest(docstore, "d1", 2, collection="alpha")
        ingest(docstore, "d1", 3, collection="beta")
        docstore.put_sentence_vectors("alpha", {"d1-c0": np.zeros((1, 4), np.float32)})
        assert docstore.collections() == ["alpha", "beta"]
        assert docstore.count_chunks("alpha", "d1") == 2
        assert docstore.count_chunks("beta", "d1") == 3
        assert docstore.get_sentence_vectors("beta", ["d1-c0"]) == {}

        docstore.delete_document("alpha", "d1")
        assert docstore.get_document("alpha", "d1") is None
        assert docstore.count_chunks("beta", "d1") == 3
        assert docstore.get_document("beta", "d1") is not None

    def test_a_collection_with_only_a_pending_document_is_not_listed(
        self, docstore: DocStore
    ) -> None:
        ingest(docstore, "d1", 2, collection="alpha")
        docstore.put_document(record("d2", collection="crashed"))  # an ingest killed before ready
        docstore.put_chunks("crashed", [chunk("d2", 0)])
        assert docstore.collections() == ["alpha"]
        docstore.mark_ready("crashed", "d2")
        assert docstore.collections() == ["alpha", "crashed"]

    def test_putting_the_same_document_twice_adds_nothing(self, docstore: DocStore) -> None:
        ingest(docstore, "d1", 3)
        ingest(docstore, "d1", 3)
        docstore.put_sentence_vectors("main", {"d1-c0": np.ones((2, 4), np.float32)})
        docstore.put_sentence_vectors("main", {"d1-c0": np.ones((2, 4), np.float32)})
        assert len(docstore.list_documents("main", include_pending=True)) == 1
        assert docstore.count_chunks("main", "d1") == 3
        assert len(docstore.ready_chunks("main")) == 3
        assert docstore.get_sentence_vectors("main", ["d1-c0"])["d1-c0"].shape == (2, 4)

    def test_concurrent_writers_from_several_threads_all_land(self, docstore: DocStore) -> None:
        errors: list[BaseException] = []

        def write(doc_id: str) -> None:
            try:
                ingest(docstore, doc_id, 20)
            except BaseException as error:  # collected so the test can report it
                errors.append(error)

        threads = [threading.Thread(target=write, args=(f"t{i}",)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(docstore.ready_chunks("main")) == 80

    def test_chunk_stats_count_chunks_and_find_the_highest_index_per_document(
        self, docstore: DocStore
    ) -> None:
        ingest(docstore, "d1", 4)
        docstore.put_chunks("main", [chunk("orphan", i) for i in (0, 2)])  # chunks with no record
        ingest(docstore, "d2", 1, collection="other")
        assert docstore.chunk_stats("main") == {"d1": (4, 3), "orphan": (2, 2)}
        assert docstore.chunk_stats("empty") == {}

    def test_delete_document_removes_its_page_head_vectors(self, docstore: DocStore) -> None:
        ingest(docstore, "d1", 1)
        ingest(docstore, "d2", 1)
        heads = {page_vector_key(d, 1): np.ones((1, 4), np.float32) for d in ("d1", "d2")}
        docstore.put_sentence_vectors("main", heads)
        docstore.delete_document("main", "d1")
        assert set(docstore.get_sentence_vectors("main", list(heads))) == {page_vector_key("d2", 1)}

    def test_chunk_metadata_gives_the_keys_asked_and_no_text(self, docstore: DocStore) -> None:
        chunks = ingest(docstore, "d1", 3)
        ingest(docstore, "d2", 1)
        found = docstore.chunk_metadata(
            "main", "d1", ["page", "block_type", "table_context", "years"]
        )
        assert [f.chunk_id for f in found] == [c.node_id for c in chunks]
        assert [f.start for f in found] == [0, 100, 200]
        assert found[0].metadata == {"page": 1, "block_type": "text"}
        assert found[1].metadata == {
            "page": 1,
            "block_type": "table",
            "table_context": "Revenue by quarter | 2024",
        }
        assert docstore.chunk_metadata("main", "missing", ["page"]) == []

    def test_a_section_tree_round_trips_and_goes_with_its_document(
        self, docstore: DocStore
    ) -> None:
        tree: JSONObject = {
            "doc_id": "d1",
            "nodes": [{"node_id": "0000", "title": "1 Intro", "start": 1}],
        }
        ingest(docstore, "d1", 1)
        docstore.put_tree("main", "d1", tree)
        docstore.put_tree("other", "d1", {"nodes": []})
        assert docstore.get_tree("main", "d1") == tree
        assert docstore.get_tree("main", "missing") is None
        docstore.put_tree("main", "d1", {**tree, "nodes": []})  # written again: replaced
        assert docstore.get_tree("main", "d1") == {"doc_id": "d1", "nodes": []}
        docstore.delete_document("main", "d1")
        assert docstore.get_tree("main", "d1") is None
        assert docstore.get_tree("other", "d1") == {"nodes": []}

    def test_a_card_round_trips_and_goes_with_its_document(self, docstore: DocStore) -> None:
        ingest(docstore, "d1", 1)
        card: JSONObject = {"organisation": "Adobe Inc.", "fiscal_year": 2019, "authors": []}
        docstore.put_card("main", "d1", card)
        docstore.put_card("other", "d1", {"kind": "paper"})
        assert docstore.get_cards("main") == {"d1": card}
        docstore.put_card("main", "d1", {**card, "fiscal_year": 2020})  # written again: replaced
        assert docstore.get_cards("main")["d1"]["fiscal_year"] == 2020
        docstore.delete_document("main", "d1")
        assert docstore.get_cards("main") == {}
        assert docstore.get_cards("other") == {"d1": {"kind": "paper"}}

    def test_get_cards_of_some_documents_reads_only_those(self, docstore: DocStore) -> None:
        for doc_id in ("d1", "d2", "d3"):
            ingest(docstore, doc_id, 1)
            docstore.put_card("main", doc_id, {"title": doc_id})
        assert docstore.get_cards("main", ["d3", "d1", "missing"]) == {
            "d1": {"title": "d1"},
            "d3": {"title": "d3"},
        }
        assert docstore.get_cards("main", []) == {}

    def test_a_derived_state_round_trips_is_not_a_change_and_goes_with_its_document(
        self, docstore: DocStore
    ) -> None:
        ingest(docstore, "d1", 1)
        ingest(docstore, "d2", 1)
        generation = docstore.generation("main")
        state: JSONObject = {"version": 1.5, "rows": [["d1-c0", 3, 0, -1]], "strings": ["s"]}
        docstore.put_doc_states("main", {"d1": state, "d2": {"version": 2.0}})
        docstore.put_doc_states("other", {"d1": {"version": 9.0}})
        assert docstore.get_doc_states("main", ["d1", "missing"]) == {"d1": state}
        assert docstore.generation("main") == generation, "a cache, not a change to a document"
        docstore.put_doc_states("main", {"d1": {"version": 3.0}})  # written again: replaced
        assert docstore.get_doc_states("main", ["d1"]) == {"d1": {"version": 3.0}}
        docstore.delete_document("main", "d1")
        assert docstore.get_doc_states("main", ["d1", "d2"]) == {"d2": {"version": 2.0}}
        docstore.put_chunks("main", [chunk("d2", 1)])  # a chunk restored: the state is stale
        assert docstore.get_doc_states("main", ["d2"]) == {}
        assert docstore.get_doc_states("other", ["d1"]) == {"d1": {"version": 9.0}}


class JournalContract:
    """The change record (`citerag.store.journal`). Subclasses give `docstore` (an empty store)
    and `open_again`: another store object on the same storage, with a journal bound."""

    def test_each_write_to_a_record_moves_the_generation(self, docstore: DocStore) -> None:
        assert docstore.generation("main") == 0
        assert docstore.changes_since("main", 0) == ChangeSet(0)
        ingest(docstore, "d1", 2)
        after = docstore.generation("main")
        assert after == 2  # the pending record, then ready
        changes = docstore.changes_since("main", 0)
        assert changes is not None
        assert (changes.generation, changes.ready) == (after, {"d1": record_ready("d1")})
        assert docstore.changes_since("main", after) == ChangeSet(after)
        assert docstore.generation("other") == 0, "each collection counts its own"

    def test_changes_name_what_turned_ready_pending_or_went(self, docstore: DocStore) -> None:
        for doc_id in ("kept", "deleted", "reingested", "renaming"):
            ingest(docstore, doc_id, 1)
        since = docstore.generation("main")
        docstore.delete_document("main", "deleted")
        again = replace(record_ready("reingested"), created_at=1_800_000_000.0)
        docstore.put_document(again)
        docstore.put_document(replace(record_ready("renaming"), status="pending"))
        ingest(docstore, "added", 1)
        changes = docstore.changes_since("main", since)
        assert changes is not None
        assert changes.generation == docstore.generation("main") == since + 5
        assert changes.ready == {"reingested": again, "added": record_ready("added")}
        assert changes.pending == {"renaming"}
        assert changes.gone == {"deleted"}
        assert changes.unready == {"renaming", "deleted"}

    def test_another_store_object_on_the_same_storage_sees_each_change(
        self, docstore: DocStore, open_again: Callable[[int], DocStore]
    ) -> None:
        ingest(docstore, "d1", 1)
        since = docstore.generation("main")
        other = open_again(JOURNAL_KEEP)
        ingest(other, "d2", 1)
        other.delete_document("main", "d1")
        changes = docstore.changes_since("main", since)
        assert changes is not None
        assert (set(changes.ready), changes.gone) == ({"d2"}, {"d1"})
        assert changes.generation == other.generation("main") == docstore.generation("main")

    def test_a_reader_behind_the_trimmed_journal_is_told_to_list_again(
        self, docstore: DocStore, open_again: Callable[[int], DocStore]
    ) -> None:
        small = open_again(3)
        for doc_id in ("d1", "d2", "d3"):
            ingest(small, doc_id, 1)  # six entries: the first three are trimmed
        last = small.generation("main")
        assert last == 6
        assert small.changes_since("main", 0) is None
        assert small.changes_since("main", 2) is None
        recent = small.changes_since("main", last - 2)
        assert recent is not None and set(recent.ready) == {"d3"}
        assert small.changes_since("main", last) == ChangeSet(last)
        assert small.changes_since("main", last + 5) is None, "a store reset behind the reader"

    def test_concurrent_writers_take_distinct_generations(self, docstore: DocStore) -> None:
        threads = [threading.Thread(target=ingest, args=(docstore, f"t{i}", 2)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert docstore.generation("main") == 8
        changes = docstore.changes_since("main", 0)
        assert changes is not None and set(changes.ready) == {"t0", "t1", "t2", "t3"}


def record_ready(doc_id: str) -> DocumentRecord:
    """`ingest`'s record of `doc_id` once it is ready."""
    return replace(record(doc_id, name=f"{doc_id}.pdf"), status="ready")
