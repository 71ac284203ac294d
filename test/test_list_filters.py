"""Filters on enrichment's list fields really match: in the docstore's metadata, in the
collection state, and in Milvus Lite through candidate ids (the seed's `==` on lists never did)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from llama_index.core.schema import QueryBundle, TextNode
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from citerag.nodes import chunk_node
from citerag.retrieve.collection_state import refresh_state
from citerag.retrieve.filters import check_filters, matches
from citerag.retrieve.hybrid import RetrievalSettings
from citerag.store.base import VectorRow
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.milvus_index import MilvusIndex
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.tools.retriever import ListFilteredRetriever, ListFilters
from citerag.types import DocumentRecord

DIM = 16
YEARS = {1: ["1996"], 4: ["1996", "2019"]}
ENTITIES = {2: ["Viaweb"], 4: ["Viaweb", "Yahoo"]}


def one(key: str, value: object, operator: FilterOperator) -> MetadataFilters:
    return MetadataFilters(filters=[MetadataFilter(key=key, value=value, operator=operator)])


def test_list_semantics_for_every_operator() -> None:
    place = {"years": ["1996", "2019"], "entities": ["Viaweb"], "page": 3}
    assert matches(place, one("years", "1996", FilterOperator.EQ))  # "==" means contains
    assert not matches(place, one("years", "1997", FilterOperator.EQ))
    assert matches(place, one("years", ["1980", "2019"], FilterOperator.ANY))
    assert matches(place, one("years", ["1980", "2019"], FilterOperator.IN))
    assert not matches(place, one("years", ["1980", "2019"], FilterOperator.ALL))
    assert matches(place, one("entities", "viaweb", FilterOperator.CONTAINS))  # case-blind
    assert matches(place, one("entities", ["Yahoo"], FilterOperator.NIN))
    assert not matches({"years": []}, one("years", "1996", FilterOperator.EQ))
    assert not matches({"page": 3}, one("years", "1996", FilterOperator.EQ))
    check_filters(one("entities", ["x"], FilterOperator.ANY))


def chunks() -> list[TextNode]:
    nodes = []
    for i in range(6):
        node = chunk_node(
            node_id=f"d1-c{i}",
            doc_id="d1",
            doc_name="d1.pdf",
            page=i + 1,
            chunk_index=i,
            text=f"Passage {i} about the startup and its founders.",
            start=0,
            sentences=[(0, 10)],
        )
        node.metadata["years"] = YEARS.get(i, [])
        node.metadata["entities"] = ENTITIES.get(i, [])
        nodes.append(node)
    return nodes


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[SQLiteDocStore, MilvusIndex, np.ndarray, Path]]:
    docstore = SQLiteDocStore(tmp_path / "docstore.sqlite")
    vectors = MilvusIndex(str(tmp_path / "milvus.db"))
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((6, DIM)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    nodes = chunks()
    docstore.put_document(DocumentRecord("d1", "d1.pdf", "c", 6, "pymupdf", created_at=1.0))
    docstore.put_chunks("c", nodes)
    docstore.mark_ready("c", "d1")
    vectors.ensure_collection("c", DIM)
    vectors.insert(
        "c",
        [
            VectorRow(n.node_id, matrix[i], "d1", "d1.pdf", i + 1, "text", "", "", n.text)
            for i, n in enumerate(nodes)
        ],
    )
    yield docstore, vectors, matrix, tmp_path
    vectors.close()
    docstore.close()


def test_a_list_filter_matches_what_the_docstore_holds(stores: tuple) -> None:
    docstore, _, _, _ = stores
    stored = docstore.get_chunks("c", [f"d1-c{i}" for i in range(6)])
    wanted = one("years", "1996", FilterOperator.EQ)
    assert [n.node_id for n in stored if matches(n.metadata, wanted)] == ["d1-c1", "d1-c4"]


def retriever(stores: tuple, **filters: MetadataFilters) -> ListFilteredRetriever:
    docstore, vectors, _, tmp_path = stores
    state = refresh_state(None, docstore, BM25FilesIndex(tmp_path / "keywords"), "c")
    return ListFilteredRetriever(
        vectors,
        docstore,
        state,
        None,
        RetrievalSettings(similarity_top_k_fusion=6),
        None,  # type: ignore[arg-type]
        list_filters=ListFilters(**filters),
    )


def test_a_hard_year_filter_holds_every_ranking(stores: tuple) -> None:
    _, _, matrix, _ = stores
    hard = retriever(stores, hard=one("years", ["1996"], FilterOperator.ANY))
    query = QueryBundle("startup founders", embedding=matrix[0].tolist())
    ranking = hard.rank(query)
    assert set(ranking.dense) == {"d1-c1", "d1-c4"}
    assert {cid for cid, _ in ranking.fused} == {"d1-c1", "d1-c4"}
    assert hard.matched == {"hard": 2}


def test_a_vector_entity_filter_leaves_keywords_unfiltered(stores: tuple) -> None:
    _, _, matrix, _ = stores
    soft = retriever(stores, vector=one("entities", ["viaweb"], FilterOperator.ANY))
    ranking = soft.rank(QueryBundle("startup founders", embedding=matrix[0].tolist()))
    assert set(ranking.dense) == {"d1-c2", "d1-c4"}
    assert len(ranking.keyword) == 6


def test_a_filter_nothing_matches_is_dropped(stores: tuple) -> None:
    _, _, matrix, _ = stores
    none = retriever(stores, hard=one("years", ["1850"], FilterOperator.ANY))
    ranking = none.rank(QueryBundle("startup", embedding=matrix[0].tolist()))
    assert len(ranking.dense) == 6
