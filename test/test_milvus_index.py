"""MilvusIndex against a real Milvus Lite folder in tmp_path and against a real Milvus server.

Both keep the vector-index contract (`citerag.testing.vector_index`): `TestMilvusLite` and
`TestMilvusServer` (the session's Milvus standalone server, `milvus_server_uri` in conftest.py,
marked `server` and `slow`). The Milvus-only tests below take `index`, parametrized over both.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers import MILVUS_BACKENDS
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from citerag.errors import BackendUnavailable
from citerag.settings import Settings
from citerag.store.base import PageRow, VectorQuery
from citerag.store.factory import open_vector_index
from citerag.store.milvus_caps import (
    HNSW_EF,
    IVF_NLIST,
    IVF_NPROBE,
    search_params,
    vector_index_type,
)
from citerag.store.milvus_freshness import Freshness
from citerag.store.milvus_index import MilvusIndex, milvus_collection_name, truncate_utf8
from citerag.testing.page_index import PageIndexContract
from citerag.testing.vector_index import DIM, VectorIndexContract, rows_for, unit_vectors


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "storage" / "milvus.db"


BACKENDS = MILVUS_BACKENDS


@pytest.fixture(params=BACKENDS)
def index(request: pytest.FixtureRequest, db_path: Path) -> Iterator[MilvusIndex]:
    if request.param == "lite":
        milvus = MilvusIndex(str(db_path))
        yield milvus
        milvus.close()
        return
    uri = request.getfixturevalue("milvus_server_uri")
    milvus = MilvusIndex(uri)
    try:
        yield milvus
    finally:
        drop_every_collection(milvus)
        milvus.close()


def drop_every_collection(index: MilvusIndex) -> None:
    """A shared test server starts each test empty."""
    client = index._client
    for name in client.list_collections():
        client.drop_collection(name)


class TestMilvusLite(VectorIndexContract, PageIndexContract):
    @pytest.fixture
    def vector_index(self, db_path: Path) -> Iterator[MilvusIndex]:
        milvus = MilvusIndex(str(db_path))
        yield milvus
        milvus.close()


# integration: a MILVUS_TEST_URI naming another machine must get past the loopback guard
@pytest.mark.server
@pytest.mark.slow
@pytest.mark.integration
class TestMilvusServer(VectorIndexContract, PageIndexContract):
    @pytest.fixture
    def vector_index(self, milvus_server_uri: str) -> Iterator[MilvusIndex]:
        milvus = MilvusIndex(milvus_server_uri)
        try:
            yield milvus
        finally:
            drop_every_collection(milvus)
            milvus.close()


def test_describe_shows_fields_with_readable_types(index: MilvusIndex) -> None:
    index.insert("main", rows_for("d1", unit_vectors(3, seed=17)))
    described = index.describe("main")
    types = {f["name"]: f["type"] for f in described["fields"]}
    assert types["id"] == "VARCHAR(128)" and types["page"] == "INT64"
    assert types["vector"] == f"FLOAT_VECTOR(dim={DIM})"
    # Milvus Lite's description leaves out the element's max_length
    assert types["years"] in ("ARRAY<VARCHAR(16)>[64]", "ARRAY<VARCHAR>[64]")
    assert types["lists_cut"] == "BOOL"
    assert described["rows"] == 3
    assert [i["index_type"] for i in described["indexes"]] == [index.capabilities.index_type]
    sample = index.sample("main", 2)
    assert len(sample) == 2 and {"id", "doc_name", "page", "preview"} <= set(sample[0])
    assert "vector" not in sample[0]
    assert index.describe("never made") == {}


def test_reopening_the_same_path_keeps_the_data(db_path: Path) -> None:
    vectors = unit_vectors(20, seed=9)
    first = MilvusIndex(str(db_path))
    first.insert("main", rows_for("d1", vectors))
    first.close()
    reopened = MilvusIndex(str(db_path))
    assert reopened.has_collection("main")
    assert reopened.count("main", "d1") == 20
    assert reopened.search("main", VectorQuery(vectors[[7]], top_k=1))[0][0][0] == "d1-c7"
    reopened.close()


@pytest.mark.slow  # over a second: see test_slow_markers.py
def test_another_process_reads_the_data_once_the_index_is_closed(db_path: Path) -> None:
    writer = MilvusIndex(str(db_path))
    writer.insert("main", rows_for("d1", unit_vectors(6, seed=14)))
    writer.close()
    script = (
        "from citerag.store.milvus_index import MilvusIndex\n"
        f"index = MilvusIndex({str(db_path)!r})\n"
        "print(index.count('main', 'd1'))\n"
        "index.close()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-500:]
    assert result.stdout.strip().splitlines()[-1] == "6"


def test_collection_names_are_sanitized_deterministically() -> None:
    legal = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
    for name in ["main", "Annual Reports 2024", "2024-été", "../x", "a" * 400, ""]:
        sanitized = milvus_collection_name(name)
        assert legal.fullmatch(sanitized), sanitized
        assert len(sanitized) <= 255
        assert milvus_collection_name(name) == sanitized
    assert milvus_collection_name("main") == "c_main"
    assert milvus_collection_name("a-b") != milvus_collection_name("a_b")


def test_long_text_fields_are_truncated_on_character_boundaries() -> None:
    assert truncate_utf8("é" * 10, 5) == "éé"
    assert truncate_utf8("abc", 5) == "abc"


def test_unreachable_server_raises_backend_unavailable_naming_the_uri() -> None:
    with pytest.raises(BackendUnavailable, match=r"http://127\.0\.0\.1:9"):
        MilvusIndex("http://127.0.0.1:9")


def test_factory_opens_milvus_lite_in_the_storage_folder(tmp_path: Path) -> None:
    settings = Settings(storage_dir=tmp_path / "fresh" / "storage")
    index = open_vector_index(settings.storage)
    try:
        index.insert("main", rows_for("d1", unit_vectors(3)))
        assert index.count("main") == 3
        assert settings.storage.milvus_lite_path.exists()
    finally:
        index.close()


@pytest.mark.slow  # over a second: see test_slow_markers.py
def test_a_folder_held_by_another_process_raises_backend_unavailable(db_path: Path) -> None:
    holder = MilvusIndex(str(db_path))
    script = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.INFO)\n"
        "from citerag.errors import BackendUnavailable\n"
        "from citerag.store.milvus_index import MilvusIndex\n"
        "try:\n"
        f"    MilvusIndex({str(db_path)!r})\n"
        "except BackendUnavailable as error:\n"
        "    print(error)\n"
        "    sys.exit(3)\n"
    )
    try:
        result = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
        )
    finally:
        holder.close()
    assert result.returncode == 3, result.stderr[-500:]
    assert "another process" in result.stdout
    assert "Traceback" not in result.stderr, result.stderr[-500:]  # the sentence, nothing else


@pytest.mark.slow  # inserts 16,500 rows
def test_listings_read_past_the_query_window_of_16384_rows(index: MilvusIndex) -> None:
    # Milvus answers a plain query with at most 16,384 rows; repair lists a collection's
    # documents and a document's ids this way, so a larger one must still be read whole.
    many = 16_500
    big = rows_for("big", unit_vectors(many, seed=3))
    index.insert("main", big[: many // 2])
    index.insert("main", big[many // 2 :] + rows_for("other", unit_vectors(2, seed=4)))
    assert len(index.ids_of("main", "big")) == many
    assert index.ids_of("main", "big") == sorted(row.chunk_id for row in big)
    assert index.doc_ids_except("main", []) == ["big", "other"]
    assert index.doc_ids_except("main", ["big"]) == ["other"]


def test_a_server_searches_while_a_write_holds_the_lock_and_lite_waits(index: MilvusIndex) -> None:
    # Questions answered on several threads of one `serve` process search a Milvus server at
    # once; Milvus Lite is driven one call at a time.
    vectors = unit_vectors(8, seed=21)
    index.insert("main", rows_for("d1", vectors))
    query = VectorQuery(vectors[[5]], top_k=1)
    found: list[list[list[tuple[str, float]]]] = []
    with index.lock:
        searching = threading.Thread(target=lambda: found.append(index.search("main", query)))
        searching.start()
        # A server's search returns well within 30 s; Lite's must still wait after 2 s.
        searching.join(timeout=30 if index.is_server else 2)
        finished_under_the_lock = not searching.is_alive()
    searching.join(timeout=30)
    assert finished_under_the_lock == index.is_server
    assert found and found[0][0][0][0] == "d1-c5"


def test_server_searches_are_strong_just_after_a_change_and_bounded_after(
    index: MilvusIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    levels: list[object] = []
    search = index._client.search

    def recording(*args: object, **kwargs: object) -> object:
        levels.append(kwargs.get("consistency_level"))
        return search(*args, **kwargs)

    monkeypatch.setattr(index._client, "search", recording)
    monkeypatch.setattr(index, "_freshness", Freshness(window_s=0.5))
    vectors = unit_vectors(4, seed=8)
    index.insert("main", rows_for("d1", vectors))
    query = VectorQuery(vectors[[1]], top_k=1)
    index.search("main", query)
    time.sleep(0.6)
    index.search("main", query)
    index.note_change("main")  # another process's write, reported by the change record
    index.search("main", query)
    if index.is_server:
        assert levels == ["Strong", "Bounded", "Strong"]
    else:  # Milvus Lite has applied every write before the next call: no level to ask
        assert levels == [None, None, None]


def test_a_write_through_another_client_is_found_by_the_first_search_after_its_change(
    index: MilvusIndex,
) -> None:
    if not index.is_server:
        pytest.skip("Milvus Lite opens in one process at a time")
    index._freshness = Freshness(window_s=5.0)
    vectors = unit_vectors(6, seed=9)
    index.insert("main", rows_for("d1", vectors[:3]))
    index.pages.insert("main", [PageRow("d1-page00001", "d1", 1, vectors[0])])
    index.search("main", VectorQuery(vectors[[0]], top_k=1))
    index.pages.search("main", vectors[0], 1, None)
    writer = MilvusIndex(index.uri)
    try:
        writer.insert("main", rows_for("d2", vectors[3:]))
        writer.pages.insert("main", [PageRow("d2-page00001", "d2", 1, vectors[4])])
    finally:
        writer.close()
    index.note_change("main")
    hits = index.search("main", VectorQuery(vectors[[4]], top_k=1))
    assert hits[0][0][0] == "d2-c1"
    assert index.pages.search("main", vectors[4], 1, None)[0][0] == "d2-page00001"


def test_the_freshness_window_starts_at_a_change_or_the_first_search() -> None:
    clock = iter([0.0, 0.0, 4.9, 5.1, 10.0, 10.0, 14.0, 16.0])
    freshness = Freshness(window_s=5.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("citerag.store.milvus_freshness.time.monotonic", lambda: next(clock))
        assert freshness.level("c") == "Strong"  # first seen at 0: what was loaded may be new
        assert freshness.level("c") == "Strong"
        assert freshness.level("c") == "Strong"  # 4.9 s
        assert freshness.level("c") == "Bounded"  # 5.1 s
        freshness.changed("c")  # at 10
        assert freshness.level("c") == "Strong"  # 10
        assert freshness.level("c") == "Strong"  # 14
        assert freshness.level("c") == "Bounded"  # 16


@pytest.mark.slow  # over a second: see test_slow_markers.py
def test_a_search_finds_the_exact_nearest_and_may_ask_for_more_than_the_hnsw_breadth(
    index: MilvusIndex,
) -> None:
    """A search finds the exact nearest on the deployment's own index, and a limit above HNSW's
    breadth (`milvus_caps.HNSW_EF`; HNSW refuses an ef below the limit) still answers in full."""
    vectors = unit_vectors(600, seed=3)
    index.ensure_collection("wide", DIM)
    index.insert("wide", rows_for("d", vectors))
    index.flush(milvus_collection_name("wide"))
    queries = unit_vectors(10, seed=4)
    for query in queries:
        exact = [f"d-c{i}" for i in np.argsort(-(vectors @ query), kind="stable")[:10]]
        found = index.search("wide", VectorQuery(query, 10))[0]
        assert len(set(exact) & {chunk_id for chunk_id, _ in found}) >= 9
    assert len(index.search("wide", VectorQuery(queries[0], 400))[0]) == 400


def test_a_search_asks_what_its_index_takes() -> None:
    assert search_params("FLAT", 10) == {"metric_type": "COSINE"}
    assert search_params("AUTOINDEX", 10)["params"] == {"ef": HNSW_EF}
    assert search_params("AUTOINDEX", 5000)["params"] == {"ef": 5000}
    assert search_params("HNSW", 10**6)["params"] == {"ef": 32768}
    assert search_params("IVF_FLAT", 10)["params"] == {"nprobe": IVF_NPROBE}


def _indexed(index: MilvusIndex, collection: str, timeout_s: float = 120.0) -> None:
    """Wait until the server's index covers every row (Lite searches every row exactly)."""
    name = milvus_collection_name(collection)
    index.flush(name)
    if not index.is_server:
        return
    deadline = time.monotonic() + timeout_s
    while index.client.describe_index(name, "vector").get("pending_index_rows", 0):
        assert time.monotonic() < deadline, "the server did not build its index in time"
        time.sleep(0.5)
    index.client.release_collection(name)  # searched from the built index from now on
    index.client.load_collection(name)


@pytest.mark.slow  # over a second: see test_slow_markers.py
@pytest.mark.parametrize(
    ("key", "value", "operator"),
    [
        ("page", 10, FilterOperator.LTE),
        ("block_type", "table", FilterOperator.EQ),
    ],
)
def test_a_filtered_search_finds_the_nearest_rows_the_filter_passes(
    index: MilvusIndex, key: str, value: object, operator: FilterOperator
) -> None:
    """A filter passing ten rows or half of them keeps the exact top 10 on the deployment's own
    index. (Milvus 2.3's HNSW lost most of such hits on the realistic library at 20k-100k rows,
    and IVF reading a few lists missed rare rows: benchmarks/dense_scale.py; 4,000 random rows
    are too few to show either.)"""
    vectors = unit_vectors(4000, seed=5)
    rows = rows_for("d", vectors)
    index.ensure_collection("filtered", DIM)
    index.insert("filtered", rows)
    _indexed(index, "filtered")
    limit = int(str(value)) if key == "page" else 0
    passes = np.array([r.page <= limit if key == "page" else r.node_type == "table" for r in rows])
    filters = MetadataFilters(filters=[MetadataFilter(key=key, value=value, operator=operator)])
    recalls = []
    for query in unit_vectors(10, seed=6):
        scores = np.where(passes, vectors @ query, -np.inf)
        exact = {f"d-c{i}" for i in np.argsort(-scores, kind="stable")[:10]}
        found = index.search("filtered", VectorQuery(query, 10, filters))[0]
        recalls.append(len(exact & {chunk_id for chunk_id, _ in found}) / 10)
    assert np.mean(recalls) >= 0.9, recalls


@pytest.mark.server
@pytest.mark.slow  # over a second: see test_slow_markers.py
def test_a_collection_is_searched_with_what_its_own_index_takes(milvus_server_uri: str) -> None:
    """A collection made under one index setting keeps its index, and a process set to another
    still searches it with that index's parameters (an IVF search sent an HNSW breadth, or the
    reverse, would read the wrong lists)."""
    made = MilvusIndex(milvus_server_uri, index_type="ivf_flat")
    other = MilvusIndex(milvus_server_uri, index_type="autoindex")
    try:
        made.ensure_collection("kept", DIM)
        made.insert("kept", rows_for("d", unit_vectors(50, seed=7)))
        name = milvus_collection_name("kept")
        assert vector_index_type(other.client, name) == "IVF_FLAT"
        assert other.search_params(name, 10, filtered=True)["params"] == {"nprobe": IVF_NLIST}
        assert other.search_params(name, 10)["params"] == {"nprobe": IVF_NPROBE}
        assert other.capabilities.index_type == "AUTOINDEX"
        assert vector_index_type(other.client, "missing_collection") is None
    finally:
        drop_every_collection(made)
        made.close()
        other.close()
