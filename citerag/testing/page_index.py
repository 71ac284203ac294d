"""The contract of a vector index's page collection (`VectorIndex.pages`, citerag.store.base):
Milvus Lite and a Milvus server keep it.

Subclass `PageIndexContract` beside `VectorIndexContract`, with the same `vector_index` fixture.
The nearest pages must be those an exact numpy ranking gives (cosine, best first, ties by page
id), whichever way the search is held to the pages allowed.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pytest

from citerag.nodes import page_vector_key
from citerag.store.base import PageRow, VectorIndex

DIM = 32


def page_rows(doc_id: str, count: int, seed: int) -> list[PageRow]:
    vectors = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    return [
        PageRow(page_vector_key(doc_id, n), doc_id, n, vectors[n - 1] * 3.0)  # not normalized
        for n in range(1, count + 1)
    ]


def exact(
    rows: list[PageRow], query: np.ndarray, top_k: int, among: Collection[str] | None
) -> list[str]:
    """The numpy ranking the page search must give (what a snapshot computed in memory)."""
    kept = [row for row in rows if among is None or row.page_id in among]
    matrix = np.stack([row.vector / np.linalg.norm(row.vector) for row in kept])
    scores = matrix @ (query / np.linalg.norm(query))
    order = sorted(range(len(kept)), key=lambda i: (-float(scores[i]), kept[i].page_id))
    return [kept[i].page_id for i in order[:top_k]]


class PageIndexContract:
    def test_nearest_pages_are_the_exact_ranking_with_and_without_allowed_pages(
        self, vector_index: VectorIndex
    ) -> None:
        rows = page_rows("a" * 64, 180, seed=1) + page_rows("b" * 64, 120, seed=2)
        vector_index.pages.insert("main", rows)
        queries = np.random.default_rng(3).standard_normal((3, DIM)).astype(np.float32)
        ids = [row.page_id for row in rows]
        for query in queries:
            for among in (None, set(ids[::40]), set(ids[::2]), set(ids[-5:])):
                hits = vector_index.pages.search("main", query, 7, among)
                assert [page for page, _ in hits] == exact(rows, query, 7, among)
                scores = [score for _, score in hits]
                assert scores == sorted(scores, reverse=True)
        first = vector_index.pages.search("main", rows[10].vector, 1, None)
        assert first[0][0] == rows[10].page_id
        assert first[0][1] == pytest.approx(1.0, abs=1e-4)

    def test_page_rows_go_with_their_document_and_collection(
        self, vector_index: VectorIndex
    ) -> None:
        vector_index.pages.insert("main", page_rows("d1", 4, seed=4) + page_rows("d2", 3, seed=5))
        vector_index.pages.insert("main", page_rows("d1", 4, seed=4))  # an upsert
        assert vector_index.pages.doc_ids("main") == {"d1", "d2"}
        assert vector_index.pages.count("main", "d1") == 4
        vector_index.delete_document("main", "d1")
        assert vector_index.pages.doc_ids("main") == {"d2"}
        hits = vector_index.pages.search("main", page_rows("d1", 1, seed=4)[0].vector, 10, None)
        assert sorted(page for page, _ in hits) == [page_vector_key("d2", n) for n in (1, 2, 3)]
        vector_index.drop_collection("main")
        assert vector_index.pages.doc_ids("main") == set()
        assert vector_index.pages.search("main", np.ones(DIM), 3, None) == []
        assert vector_index.pages.search("never made", np.ones(DIM), 3, None) == []
