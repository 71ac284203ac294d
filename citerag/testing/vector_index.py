"""The contract of `VectorIndex` (citerag.store.base): Milvus Lite and a Milvus server keep it.

Subclass `VectorIndexContract` and give the class a `vector_index` fixture that yields an empty
index (and closes it after). Filters are LlamaIndex `MetadataFilters` over the chunk metadata
the index keeps as fields; each backend translates them itself.
"""

from __future__ import annotations

import numpy as np
import pytest
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from citerag.errors import ConfigError, InputError
from citerag.store.base import VectorIndex, VectorQuery, VectorRow

DIM = 32


def unit_vectors(n: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def rows_for(doc_id: str, vectors: np.ndarray, pages_per_row: int = 1) -> list[VectorRow]:
    return [
        VectorRow(
            chunk_id=f"{doc_id}-c{i}",
            vector=vector,
            doc_id=doc_id,
            doc_name=f"{doc_id}.pdf",
            page=1 + i // pages_per_row,
            node_type="table" if i % 2 else "text",
            section="1 Intro",
            label="",
            preview=f"chunk {i} of {doc_id}",
        )
        for i, vector in enumerate(vectors)
    ]


def leaf(key: str, value: object, operator: FilterOperator = FilterOperator.EQ) -> MetadataFilter:
    return MetadataFilter(key=key, value=value, operator=operator)  # type: ignore[arg-type]


def pages(first: int, last: int) -> MetadataFilters:
    return MetadataFilters(
        filters=[leaf("page", first, FilterOperator.GTE), leaf("page", last, FilterOperator.LTE)]
    )


def docs(*doc_ids: str) -> MetadataFilters:
    return MetadataFilters(filters=[leaf("doc_id", list(doc_ids), FilterOperator.IN)])


def found_pages(hits: list[tuple[str, float]]) -> list[int]:
    return sorted(int(chunk_id.split("-c")[1]) + 1 for chunk_id, _ in hits)


def first_hits(index: VectorIndex, query: VectorQuery) -> list[tuple[str, float]]:
    """The hits of the query's first vector in the collection "main"."""
    return index.search("main", query)[0]


class VectorIndexContract:
    def test_rows_read_back_with_their_vectors_and_written_again_under_a_new_name(
        self, vector_index: VectorIndex
    ) -> None:
        vectors = unit_vectors(5, seed=30)
        vector_index.insert("main", rows_for("d1", vectors))
        vector_index.insert("main", rows_for("d2", unit_vectors(3, seed=31)))
        rows = sorted(vector_index.rows_of("main", "d1"), key=lambda r: r.chunk_id)
        assert [r.chunk_id for r in rows] == [f"d1-c{i}" for i in range(5)]
        assert np.allclose(np.stack([r.vector for r in rows]), vectors, atol=1e-6)
        assert rows[1].page == 2 and rows[1].node_type == "table" and rows[1].doc_name == "d1.pdf"
        for row in rows:
            row.doc_name = "renamed.pdf"
        vector_index.insert("main", rows)  # an upsert: the same ids, no second copy
        assert vector_index.count("main", "d1") == 5 and vector_index.count("main") == 8
        named = MetadataFilters(filters=[leaf("doc_name", "renamed.pdf")])
        hits = first_hits(vector_index, VectorQuery(vectors[:1], top_k=10, filters=named))
        assert hits[0][0] == "d1-c0" and len(hits) == 5

    def test_an_inserted_vector_finds_itself_first(self, vector_index: VectorIndex) -> None:
        vectors = unit_vectors(40)
        vector_index.ensure_collection("main", DIM)
        vector_index.insert("main", rows_for("d1", vectors))
        results = vector_index.search("main", VectorQuery(vectors[[3, 17, 29]], top_k=5))
        assert [hits[0][0] for hits in results] == ["d1-c3", "d1-c17", "d1-c29"]
        for hits in results:
            assert hits[0][1] == pytest.approx(1.0, abs=1e-4)
            similarities = [score for _, score in hits]
            assert similarities == sorted(similarities, reverse=True)
            assert len(hits) == 5

    def test_a_page_range_keeps_only_pages_in_range(self, vector_index: VectorIndex) -> None:
        vectors = unit_vectors(30, seed=1)
        vector_index.insert("main", rows_for("d1", vectors))  # pages 1..30
        hits = first_hits(vector_index, VectorQuery(vectors[:1], top_k=30, filters=pages(5, 9)))
        assert found_pages(hits) == [5, 6, 7, 8, 9]

    def test_a_document_filter_keeps_only_the_documents_named(
        self, vector_index: VectorIndex
    ) -> None:
        vector_index.insert("main", rows_for("d1", unit_vectors(10, seed=2)))
        vector_index.insert("main", rows_for("d2", unit_vectors(10, seed=3)))
        vector_index.insert("main", rows_for('d"3', unit_vectors(10, seed=4)))
        query = unit_vectors(1, seed=5)
        only_d2 = first_hits(vector_index, VectorQuery(query, top_k=30, filters=docs("d2")))
        assert {chunk_id.split("-c")[0] for chunk_id, _ in only_d2} == {"d2"}
        assert len(only_d2) == 10
        quoted = first_hits(vector_index, VectorQuery(query, top_k=30, filters=docs('d"3', "d1")))
        assert {chunk_id.split("-c")[0] for chunk_id, _ in quoted} == {'d"3', "d1"}
        assert vector_index.search("main", VectorQuery(query, top_k=30, filters=docs())) == [[]]
        one = MetadataFilters(filters=[leaf("doc_id", "d1")])
        assert len(first_hits(vector_index, VectorQuery(query, top_k=30, filters=one))) == 10

    def test_or_not_and_nested_filters_keep_their_logic(self, vector_index: VectorIndex) -> None:
        vectors = unit_vectors(12, seed=20)
        vector_index.insert("main", rows_for("d1", vectors))  # pages 1..12
        query = vectors[:1]

        def pages_found(filters: MetadataFilters) -> list[int]:
            return found_pages(first_hits(vector_index, VectorQuery(query, 30, filters)))

        either = MetadataFilters(
            filters=[leaf("page", 2), leaf("page", 11)], condition=FilterCondition.OR
        )
        assert pages_found(either) == [2, 11]
        outside = MetadataFilters(filters=[pages(3, 12)], condition=FilterCondition.NOT)
        assert pages_found(outside) == [1, 2]
        nested = MetadataFilters(
            filters=[pages(1, 6), MetadataFilters(filters=[leaf("block_type", "table")])]
        )
        assert pages_found(nested) == [2, 4, 6]
        not_in = MetadataFilters(filters=[pages(1, 4), leaf("page", [2, 3], FilterOperator.NIN)])
        assert pages_found(not_in) == [1, 4]
        other = MetadataFilters(filters=[pages(1, 3), leaf("page", 2, FilterOperator.NE)])
        assert pages_found(other) == [1, 3]

    def test_a_filter_on_a_field_the_index_lacks_is_refused(
        self, vector_index: VectorIndex
    ) -> None:
        vector_index.insert("main", rows_for("d1", unit_vectors(3, seed=21)))
        colour = MetadataFilters(filters=[leaf("colour", "red")])
        with pytest.raises(InputError, match="colour"):
            vector_index.search("main", VectorQuery(unit_vectors(1), 3, filters=colour))
        text = MetadataFilters(filters=[leaf("section", "Intro", FilterOperator.TEXT_MATCH)])
        with pytest.raises(InputError, match="text_match"):
            vector_index.search("main", VectorQuery(unit_vectors(1), 3, filters=text))

    def test_list_field_filters_are_applied_by_the_search(self, vector_index: VectorIndex) -> None:
        """Years and entities as the in-memory filter reads them: `==` contains, any shares
        one, all holds every one, case-blind; a row whose lists were cut passes."""
        matrix = unit_vectors(6, seed=23)
        rows = rows_for("d1", matrix)
        rows[1].lists = {"years": ["1996"], "entities": ["Viaweb"]}
        rows[3].lists = {"years": ["1996", "2019"], "entities": ["Viaweb", "Yahoo"]}
        rows[4].lists = {"years": ["2019"]}
        rows[5].lists_cut = True
        vector_index.insert("main", rows)
        assert {"years", "entities", "topics"} <= vector_index.list_fields("main")

        def found(*items: MetadataFilter) -> list[int]:
            query = VectorQuery(matrix[0:1], 6, MetadataFilters(filters=list(items)))
            return found_pages(first_hits(vector_index, query))

        assert found(leaf("years", "1996")) == [2, 4, 6]
        assert found(leaf("years", 2019, FilterOperator.CONTAINS)) == [4, 5, 6]
        assert found(leaf("entities", ["YAHOO", "nobody"], FilterOperator.ANY)) == [4, 6]
        assert found(leaf("entities", ["viaweb", "yahoo"], FilterOperator.ALL)) == [4, 6]
        assert found(leaf("years", "1996"), leaf("page", 3, FilterOperator.LTE)) == [2]
        kept = sorted(vector_index.rows_of("main", "d1"), key=lambda r: r.chunk_id)
        assert kept[3].lists["entities"] == ["viaweb", "yahoo"] and kept[5].lists_cut

    def test_node_ids_limit_the_search_to_those_chunks(self, vector_index: VectorIndex) -> None:
        matrix = unit_vectors(6, seed=22)
        vector_index.insert("main", rows_for("d1", matrix))
        assert vector_index.search("main", VectorQuery(matrix[0:1], 6))[0][0][0] == "d1-c0"
        hits = first_hits(vector_index, VectorQuery(matrix[0:1], 6, node_ids=["d1-c1", "d1-c4"]))
        assert sorted(chunk_id for chunk_id, _ in hits) == ["d1-c1", "d1-c4"]
        assert vector_index.search("main", VectorQuery(matrix[0:1], 6, node_ids=[])) == [[]]
        both = vector_index.search(
            "main", VectorQuery(matrix[0:1], 6, pages(2, 3), ["d1-c1", "d1-c4"])
        )
        assert [chunk_id for chunk_id, _ in both[0]] == ["d1-c1"]

    def test_delete_document_removes_its_rows_and_count_drops(
        self, vector_index: VectorIndex
    ) -> None:
        vector_index.insert("main", rows_for("d1", unit_vectors(12, seed=6)))
        vector_index.insert("main", rows_for("d2", unit_vectors(5, seed=7)))
        assert vector_index.count("main") == 17
        assert vector_index.count("main", "d1") == 12
        assert vector_index.ids_of("main", "d2") == sorted(f"d2-c{i}" for i in range(5))

        vector_index.delete_document("main", "d1")
        assert vector_index.count("main") == 5
        assert vector_index.count("main", "d1") == 0
        assert vector_index.ids_of("main", "d1") == []
        hits = first_hits(vector_index, VectorQuery(unit_vectors(1, seed=6), top_k=20))
        assert all(chunk_id.startswith("d2-") for chunk_id, _ in hits)

    def test_delete_ids_and_rows_of_unknown_documents(self, vector_index: VectorIndex) -> None:
        vector_index.insert("main", rows_for("d1", unit_vectors(6, seed=15)))
        vector_index.insert("main", rows_for("stray", unit_vectors(2, seed=16)))
        assert vector_index.doc_ids_except("main", ["d1"]) == ["stray"]
        assert vector_index.doc_ids_except("main", []) == ["d1", "stray"]
        vector_index.delete_ids("main", ["d1-c0", "d1-c5", "stray-c1"])
        assert vector_index.ids_of("main", "d1") == [f"d1-c{i}" for i in range(1, 5)]
        assert vector_index.count("main") == 5
        assert vector_index.doc_ids_except("never made", ["d1"]) == []

    def test_inserting_the_same_rows_twice_does_not_duplicate(
        self, vector_index: VectorIndex
    ) -> None:
        rows = rows_for("d1", unit_vectors(8, seed=8))
        vector_index.insert("main", rows)
        vector_index.insert("main", rows)
        assert vector_index.count("main", "d1") == 8

    @pytest.mark.slow  # over a second: see test_slow_markers.py
    def test_collections_with_awkward_names_are_kept_apart(self, vector_index: VectorIndex) -> None:
        vector_index.insert("Annual Reports 2024", rows_for("a", unit_vectors(3, seed=10)))
        vector_index.insert("Annual_Reports_2024", rows_for("b", unit_vectors(4, seed=11)))
        vector_index.insert("2024-été", rows_for("c", unit_vectors(5, seed=12)))
        assert vector_index.count("Annual Reports 2024") == 3
        assert vector_index.count("Annual_Reports_2024") == 4
        assert vector_index.count("2024-été") == 5
        assert not vector_index.has_collection("never made")
        assert vector_index.count("never made") == 0
        assert vector_index.search("never made", VectorQuery(unit_vectors(2), top_k=3)) == [[], []]

    def test_long_text_fields_are_stored(self, vector_index: VectorIndex) -> None:
        row = rows_for("d1", unit_vectors(1, seed=13))[0]
        row.preview = "é" * 1000  # 2000 UTF-8 bytes
        row.section = "€" * 1000
        row.lists = {"entities": ["é" * 1000, *(f"name {i}" for i in range(5000))]}
        vector_index.insert("main", [row])
        assert vector_index.count("main", "d1") == 1

    def test_a_different_dimension_for_an_existing_collection_is_refused(
        self, vector_index: VectorIndex
    ) -> None:
        vector_index.ensure_collection("main", DIM)
        with pytest.raises(ConfigError, match="32-dimensional"):
            vector_index.ensure_collection("main", DIM * 2)
