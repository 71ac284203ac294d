"""On Milvus Lite the page rows are searched in a copy the process holds (`store/lite_pages.py`):
its hits are Lite's own exact FLAT search's, it follows this process's inserts and deletes, and
it is read from Lite once, not per search."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from citerag.store.base import PageRow
from citerag.store.lite_pages import ExactPageCache
from citerag.store.milvus_index import MilvusIndex

DIM = 8


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[MilvusIndex]:
    index = MilvusIndex(str(tmp_path / "milvus.db"))
    yield index
    index.close()


def rows(doc_id: str, count: int, seed: int) -> list[PageRow]:
    vectors = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    return [
        PageRow(f"{doc_id}-page{n:05d}", doc_id, n, vectors[n - 1]) for n in range(1, count + 1)
    ]


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [page_id for page_id, _ in hits]


def agree(lite: MilvusIndex, queries: np.ndarray, among: set[str] | None) -> None:
    for query in queries:
        held = lite.pages.search("c", query, 7, among)
        flat = lite._page_rows.search("c", query, 7, among)  # Lite's own FLAT search
        assert ids(held) == ids(flat)
        assert np.allclose([s for _, s in held], [s for _, s in flat], atol=1e-4)


def test_the_copy_finds_what_lite_finds_and_follows_writes(lite: MilvusIndex) -> None:
    assert isinstance(lite.pages, ExactPageCache)
    reads: list[str] = []
    read_rows = lite._page_rows.stored_rows
    lite.pages._read_rows = lambda c: reads.append(c) or read_rows(c)  # type: ignore[attr-defined]
    for n, doc_id in enumerate(("a", "b", "c")):
        lite.pages.insert("c", rows(doc_id, 20, seed=n))
    queries = np.random.default_rng(9).standard_normal((5, DIM)).astype(np.float32)
    some = {f"{d}-page{n:05d}" for d in "abc" for n in range(1, 21, 3)}
    agree(lite, queries, None)
    agree(lite, queries, some)
    lite.delete_document("c", "b")  # through the index, as every delete path goes
    agree(lite, queries, None)
    assert not any(p.startswith("b-") for p in ids(lite.pages.search("c", queries[0], 60, None)))
    lite.pages.insert("c", rows("a", 5, seed=42))  # pages of "a" embedded again
    lite.pages.insert("c", rows("d", 10, seed=43))
    agree(lite, queries, None)
    agree(lite, queries, some)
    # Begun by this process, the copy is never read back from Lite: every write is applied to it.
    assert reads == []
    lite.drop_collection("c")
    assert lite.pages.search("c", queries[0], 5, None) == []


def test_an_empty_or_absent_page_collection_finds_nothing(lite: MilvusIndex) -> None:
    query = np.ones(DIM, np.float32)
    assert lite.pages.search("absent", query, 5, None) == []
    lite.pages.insert("c", rows("a", 3, seed=1))
    assert lite.pages.search("c", query, 5, set()) == []
    assert len(lite.pages.search("c", query, 5, None)) == 3


def test_a_wide_or_a_narrow_restriction_finds_what_lite_finds(lite: MilvusIndex) -> None:
    lite.pages.insert("c", rows("a", 400, seed=5))
    lite.pages.insert("c", rows("b", 400, seed=6))
    queries = np.random.default_rng(7).standard_normal((5, DIM)).astype(np.float32)
    every = {f"{d}-page{n:05d}" for d in "ab" for n in range(1, 401)}
    agree(lite, queries, every - {f"a-page{n:05d}" for n in range(1, 401, 2)})  # most pages
    agree(lite, queries, {f"b-page{n:05d}" for n in range(1, 401, 40)})  # few: every row checked
