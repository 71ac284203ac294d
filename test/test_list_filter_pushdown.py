"""A filter on a list field (a chunk's years) is applied by the vector search itself at any size,
on Milvus Lite and on the Milvus server; a collection made before the list columns still answers
(chunk ids as before) and says once how to upgrade.

The library: 5,200 chunks that mention 1996, spread at random, and 100 that mention 1997 lying
right beside the question's vector, as a question about 1996 lies beside passages about 1997
(an embedding cannot tell the years apart). The true top hits among the 1996 chunks are found
only when the filter is inside the search: an unfiltered top-k holds 1997 chunks alone.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from helpers import MILVUS_BACKENDS, make_old_schema_collection, milvus_uri_for
from llama_index.core.schema import QueryBundle, TextNode
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from citerag.errors import InputError
from citerag.ingest.vectors import vector_rows
from citerag.nodes import chunk_node
from citerag.retrieve.collection_state import refresh_state
from citerag.retrieve.hybrid import RetrievalSettings
from citerag.store.base import VectorQuery
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.milvus_index import MilvusIndex
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.tools.retriever import MAX_PUSHED_IDS, ListFilteredRetriever, ListFilters
from citerag.types import DocumentRecord

pytestmark = pytest.mark.slow  # over 5,000 chunks written to the docstore and to Milvus

DIM, MANY, NEAR, TOP_K = 16, 5200, 100, 10
COLLECTION = "pushdown"
OLD = "old_pushdown"  # beside the other on a shared server


@dataclass
class Library:
    docstore: SQLiteDocStore
    vectors: MilvusIndex
    keywords: BM25FilesIndex
    matrix: np.ndarray  # row i: chunk f"d1-c{i}"
    query: np.ndarray
    collection: str


def nodes() -> list[TextNode]:
    made = []
    for i in range(MANY + NEAR):
        year = "1996" if i < MANY else "1997"
        node = chunk_node(
            node_id=f"d1-c{i}",
            doc_id="d1",
            doc_name="d1.pdf",
            page=1 + i // 20,
            chunk_index=i,
            text=f"Passage {i} on the results of {year}.",
            start=0,
            sentences=[(0, 10)],
        )
        node.metadata["years"] = [year]
        made.append(node)
    return made


def vectors() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    query = rng.standard_normal(DIM).astype(np.float32)
    query /= np.linalg.norm(query)
    matrix = rng.standard_normal((MANY + NEAR, DIM)).astype(np.float32)
    matrix[MANY:] = query + 0.05 * matrix[MANY:]  # the 1997 chunks, beside the question
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix, query


def open_library(tmp_path: Path, uri: str, collection: str) -> Library:
    docstore = SQLiteDocStore(tmp_path / "docstore.sqlite")
    index = MilvusIndex(uri or str(tmp_path / "milvus.db"))
    matrix, query = vectors()
    chunks = nodes()
    record = DocumentRecord("d1", "d1.pdf", collection, 300, "pymupdf", created_at=1.0)
    docstore.put_document(record)
    docstore.put_chunks(collection, chunks)
    docstore.mark_ready(collection, "d1")
    if collection == OLD:
        make_old_schema_collection(index.client, collection, DIM)
    index.ensure_collection(collection, DIM)
    index.insert(collection, vector_rows(chunks, matrix))
    keywords = BM25FilesIndex(tmp_path / "keywords")
    return Library(docstore, index, keywords, matrix, query, collection)


@pytest.fixture(scope="module", params=MILVUS_BACKENDS)
def library(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Library]:
    uri = milvus_uri_for(request, request.param)
    opened = open_library(tmp_path_factory.mktemp("pushdown"), uri, COLLECTION)
    yield opened
    close(opened)


@pytest.fixture(params=MILVUS_BACKENDS)
def old_library(
    request: pytest.FixtureRequest, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> Iterator[Library]:
    caplog.set_level(logging.WARNING, logger="citerag.store.milvus_index")
    opened = open_library(tmp_path, milvus_uri_for(request, request.param), OLD)
    yield opened
    close(opened)


def close(library: Library) -> None:
    if library.vectors.is_server:
        library.vectors.drop_collection(library.collection)
    library.vectors.close()
    library.keywords.close()
    library.docstore.close()


def year_filter(*years: str) -> MetadataFilters:
    item = MetadataFilter(key="years", value=list(years), operator=FilterOperator.ANY)
    return MetadataFilters(filters=[item])


def dense_hits(library: Library, filters: MetadataFilters) -> tuple[list[str], dict[str, int]]:
    state = refresh_state(None, library.docstore, library.keywords, library.collection)
    retriever = ListFilteredRetriever(
        library.vectors,
        library.docstore,
        state,
        None,  # type: ignore[arg-type]  # the question comes with its vector
        RetrievalSettings(similarity_top_k_fusion=TOP_K),
        list_filters=ListFilters(vector=filters),
    )
    ranking = retriever.rank(QueryBundle("results of 1996", embedding=library.query.tolist()))
    return ranking.dense, retriever.matched


def exact_top(library: Library, rows: range) -> list[str]:
    scores = library.matrix[rows.start : rows.stop] @ library.query
    return [f"d1-c{rows.start + i}" for i in np.argsort(-scores)[:TOP_K]]


def assert_true_top(library: Library, hits: list[str], rows: range) -> None:
    """The exact top hits among `rows` (FLAT, Milvus Lite); at least 9 of the 10 under a
    server's approximate index (HNSW), and none outside `rows`."""
    expected = exact_top(library, rows)
    assert all(int(chunk_id.split("-c")[1]) in rows for chunk_id in hits)
    if library.vectors.capabilities.index_type == "FLAT":
        assert hits == expected
    else:
        assert len(hits) == TOP_K and len(set(hits) & set(expected)) >= TOP_K - 1


def test_a_year_matching_more_chunks_than_an_id_list_takes_gives_the_true_top_hits(
    library: Library,
) -> None:
    assert MANY > MAX_PUSHED_IDS  # too many for an id list: only a filter in the search works
    hits, matched = dense_hits(library, year_filter("1996"))
    assert matched == {"vector": MANY}
    assert_true_top(library, hits, range(0, MANY))


def test_a_rare_year_still_gives_its_true_top_hits(library: Library) -> None:
    hits, matched = dense_hits(library, year_filter("1997", "1850"))
    assert matched == {"vector": NEAR}
    assert_true_top(library, hits, range(MANY, MANY + NEAR))


def test_a_collection_made_before_the_list_columns_still_answers(
    old_library: Library, caplog: pytest.LogCaptureFixture
) -> None:
    """Its rows were written without the columns; a year filter goes as chunk ids when they
    are few (true top hits), and after the search when they are many (only matching hits, and
    here none: what `reindex` fixes). The log says so once."""
    assert old_library.vectors.list_fields(OLD) == frozenset()
    hits, _ = dense_hits(old_library, year_filter("1997"))
    many, _ = dense_hits(old_library, year_filter("1996"))
    assert_true_top(old_library, hits, range(MANY, MANY + NEAR))
    assert all(int(chunk_id.split("-c")[1]) < MANY for chunk_id in many)
    logged = caplog.get_records("setup") + caplog.records
    warnings = [r.getMessage() for r in logged if "reindex" in r.getMessage()]
    assert len(warnings) == 1 and "python main.py reindex old_pushdown" in warnings[0]
    query = VectorQuery(old_library.query.reshape(1, -1), TOP_K, filters=year_filter("1996"))
    with pytest.raises(InputError, match="reindex old_pushdown"):
        old_library.vectors.search(OLD, query)
