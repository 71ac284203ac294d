"""The docstore's value table (`DocStore.chunks_carrying`): what the chunks' enrichment lists
carry, case-folded, written with the chunks and gone with their document.

A subclass gives `as_written_before(docstore)`: the same storage with the value table (or
field) taken away, as a store written before it had one, opened again."""

from __future__ import annotations

from collections.abc import Mapping

from llama_index.core.schema import TextNode

from citerag.nodes import ENTITIES, LABELS, YEARS, chunk_node
from citerag.store.base import DocStore
from citerag.types import DocumentRecord


def chunk_with_lists(doc_id: str, index: int, lists: Mapping[str, list[str]]) -> TextNode:
    """A chunk of `doc_id` whose enrichment lists are `lists`."""
    node = chunk_node(
        node_id=f"{doc_id}-c{index}",
        doc_id=doc_id,
        doc_name=f"{doc_id}.pdf",
        page=index + 1,
        chunk_index=index,
        text=f"Chunk {index} of {doc_id}.",
        start=0,
    )
    node.metadata.update(lists)
    return node


def record(doc_id: str, collection: str = "main") -> DocumentRecord:
    return DocumentRecord(
        doc_id=doc_id,
        name=f"{doc_id}.pdf",
        collection=collection,
        pages=3,
        parser="pymupdf",
        created_at=1_700_000_000.5,
    )


def _chunks(doc_id: str) -> list[TextNode]:
    return [
        chunk_with_lists(doc_id, 0, {YEARS: ["2019", "2020"], ENTITIES: ["Netflix", "Reed"]}),
        chunk_with_lists(doc_id, 1, {YEARS: ["2020"], ENTITIES: ["NETFLIX"], LABELS: []}),
        chunk_with_lists(doc_id, 2, {LABELS: ["figure:3"], ENTITIES: ["Paul Graham"]}),
    ]


def _stored(docstore: DocStore, doc_id: str, collection: str = "main") -> None:
    docstore.put_document(record(doc_id, collection=collection))
    docstore.put_chunks(collection, _chunks(doc_id))
    docstore.mark_ready(collection, doc_id)


class ValueTableContract:
    def as_written_before(self, docstore: DocStore) -> DocStore:
        raise NotImplementedError

    def test_chunks_carrying_a_value_are_found_case_blind(self, docstore: DocStore) -> None:
        _stored(docstore, "a")
        _stored(docstore, "b")
        found = docstore.chunks_carrying("main", ENTITIES, ["netflix", "Paul Graham", "absent"])
        assert found == {
            "netflix": {"a-c0", "a-c1", "b-c0", "b-c1"},
            "paul graham": {"a-c2", "b-c2"},
        }
        assert docstore.chunks_carrying("main", YEARS, ["2019"]) == {"2019": {"a-c0", "b-c0"}}
        assert docstore.chunks_carrying("main", YEARS, []) == {}
        assert docstore.chunks_carrying("main", LABELS, ["figure:3"]) == {
            "figure:3": {"a-c2", "b-c2"}
        }

    def test_values_carried_are_those_asked_that_some_chunk_holds(self, docstore: DocStore) -> None:
        _stored(docstore, "a")
        asked = ["NETFLIX", "paul graham", "graham", "absent", "2019"]
        assert docstore.values_carried("main", ENTITIES, asked) == {"netflix", "paul graham"}
        assert docstore.values_carried("main", YEARS, asked) == {"2019"}
        assert docstore.values_carried("other", ENTITIES, asked) == set()
        assert docstore.values_carried("main", ENTITIES, []) == set()
        docstore.delete_document("main", "a")
        assert docstore.values_carried("main", ENTITIES, asked) == set()

    def test_a_partial_value_finds_the_chunks_whose_values_contain_it(
        self, docstore: DocStore
    ) -> None:
        _stored(docstore, "a")
        found = docstore.chunks_carrying("main", ENTITIES, ["FLIX", "%", "graham"], partial=True)
        assert found == {"flix": {"a-c0", "a-c1"}, "graham": {"a-c2"}}
        assert docstore.chunks_carrying("main", ENTITIES, ["years"], partial=True) == {}

    def test_rewritten_chunks_replace_their_values_and_a_delete_takes_them(
        self, docstore: DocStore
    ) -> None:
        _stored(docstore, "a")
        _stored(docstore, "b")
        docstore.put_chunks("main", [chunk_with_lists("a", 0, {YEARS: ["2021"]})])
        assert docstore.chunks_carrying("main", YEARS, ["2019", "2021"]) == {
            "2019": {"b-c0"},
            "2021": {"a-c0"},
        }
        docstore.delete_document("main", "b")
        assert docstore.chunks_carrying("main", YEARS, ["2019", "2020", "2021"]) == {
            "2020": {"a-c1"},
            "2021": {"a-c0"},
        }

    def test_collections_keep_their_own_values(self, docstore: DocStore) -> None:
        _stored(docstore, "a", collection="one")
        _stored(docstore, "b", collection="two")
        assert docstore.chunks_carrying("one", YEARS, ["2019"]) == {"2019": {"a-c0"}}
        assert docstore.chunks_carrying("two", YEARS, ["2019"]) == {"2019": {"b-c0"}}

    def test_a_store_written_before_the_value_table_is_filled_once_on_open(
        self, docstore: DocStore
    ) -> None:
        _stored(docstore, "a")
        asked = (ENTITIES, ["netflix", "paul graham"])
        expected = docstore.chunks_carrying("main", *asked)
        older = self.as_written_before(docstore)
        assert older.chunks_carrying("main", *asked) == expected
        _stored(older, "b")  # written after the backfill: kept as any other write
        assert older.chunks_carrying("main", YEARS, ["2019"]) == {"2019": {"a-c0", "b-c0"}}
