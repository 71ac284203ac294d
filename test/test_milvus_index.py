"""MilvusIndex against a real Milvus Lite folder in tmp_path and against a real Milvus server.

The contract tests take `index`, parametrized over Milvus Lite and the session's Milvus
standalone server (`milvus_server_uri` in conftest.py, marked `server` and `slow`).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers import MILVUS_BACKENDS

from citerag.errors import BackendUnavailable, ConfigError
from citerag.settings import Settings
from citerag.store.base import PageRange, VectorRow
from citerag.store.factory import open_vector_index
from citerag.store.milvus_index import MilvusIndex, milvus_collection_name, truncate_utf8

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
            node_type="text",
            section="1 Intro",
            label="",
            preview=f"chunk {i} of {doc_id}",
        )
        for i, vector in enumerate(vectors)
    ]


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


def test_an_inserted_vector_finds_itself_first(index: MilvusIndex) -> None:
    vectors = unit_vectors(40)
    index.ensure_collection("main", DIM)
    index.insert("main", rows_for("d1", vectors))
    results = index.search("main", vectors[[3, 17, 29]], top_k=5)
    assert [hits[0][0] for hits in results] == ["d1-c3", "d1-c17", "d1-c29"]
    for hits in results:
        assert hits[0][1] == pytest.approx(1.0, abs=1e-4)
        similarities = [score for _, score in hits]
        assert similarities == sorted(similarities, reverse=True)
        assert len(hits) == 5


def test_page_range_keeps_only_pages_in_range(index: MilvusIndex) -> None:
    vectors = unit_vectors(30, seed=1)
    index.insert("main", rows_for("d1", vectors))  # pages 1..30
    hits = index.search("main", vectors[:1], top_k=30, page_range=PageRange(5, 9))[0]
    assert sorted(int(chunk_id.split("-c")[1]) + 1 for chunk_id, _ in hits) == [5, 6, 7, 8, 9]


def test_doc_filter_keeps_only_the_documents_named(index: MilvusIndex) -> None:
    index.insert("main", rows_for("d1", unit_vectors(10, seed=2)))
    index.insert("main", rows_for("d2", unit_vectors(10, seed=3)))
    index.insert("main", rows_for('d"3', unit_vectors(10, seed=4)))
    query = unit_vectors(1, seed=5)
    only_d2 = index.search("main", query, top_k=30, doc_ids=["d2"])[0]
    assert {chunk_id.split("-c")[0] for chunk_id, _ in only_d2} == {"d2"}
    assert len(only_d2) == 10
    quoted = index.search("main", query, top_k=30, doc_ids=['d"3', "d1"])[0]
    assert {chunk_id.split("-c")[0] for chunk_id, _ in quoted} == {'d"3', "d1"}
    assert index.search("main", query, top_k=30, doc_ids=[]) == [[]]


def test_delete_document_removes_its_rows_and_count_drops(index: MilvusIndex) -> None:
    index.insert("main", rows_for("d1", unit_vectors(12, seed=6)))
    index.insert("main", rows_for("d2", unit_vectors(5, seed=7)))
    assert index.count("main") == 17
    assert index.count("main", "d1") == 12
    assert index.ids_of("main", "d2") == sorted(f"d2-c{i}" for i in range(5))

    index.delete_document("main", "d1")
    assert index.count("main") == 5
    assert index.count("main", "d1") == 0
    assert index.ids_of("main", "d1") == []
    hits = index.search("main", unit_vectors(1, seed=6), top_k=20)[0]
    assert all(chunk_id.startswith("d2-") for chunk_id, _ in hits)


def test_delete_ids_and_rows_of_unknown_documents(index: MilvusIndex) -> None:
    index.insert("main", rows_for("d1", unit_vectors(6, seed=15)))
    index.insert("main", rows_for("stray", unit_vectors(2, seed=16)))
    assert index.doc_ids_except("main", ["d1"]) == ["stray"]
    assert index.doc_ids_except("main", []) == ["d1", "stray"]
    index.delete_ids("main", ["d1-c0", "d1-c5", "stray-c1"])
    assert index.ids_of("main", "d1") == [f"d1-c{i}" for i in range(1, 5)]
    assert index.count("main") == 5
    assert index.doc_ids_except("never made", ["d1"]) == []


def test_describe_shows_fields_with_readable_types(index: MilvusIndex) -> None:
    index.insert("main", rows_for("d1", unit_vectors(3, seed=17)))
    described = index.describe("main")
    types = {f["name"]: f["type"] for f in described["fields"]}
    assert types["id"] == "VARCHAR(128)" and types["page"] == "INT64"
    assert types["vector"] == f"FLOAT_VECTOR(dim={DIM})"
    assert described["rows"] == 3
    assert [i["index_type"] for i in described["indexes"]] == [index.capabilities.index_type]
    sample = index.sample("main", 2)
    assert len(sample) == 2 and {"id", "doc_name", "page", "preview"} <= set(sample[0])
    assert "vector" not in sample[0]
    assert index.describe("never made") == {}


def test_inserting_the_same_rows_twice_does_not_duplicate(index: MilvusIndex) -> None:
    rows = rows_for("d1", unit_vectors(8, seed=8))
    index.insert("main", rows)
    index.insert("main", rows)
    assert index.count("main", "d1") == 8


def test_reopening_the_same_path_keeps_the_data(db_path: Path) -> None:
    vectors = unit_vectors(20, seed=9)
    first = MilvusIndex(str(db_path))
    first.insert("main", rows_for("d1", vectors))
    first.close()
    reopened = MilvusIndex(str(db_path))
    assert reopened.has_collection("main")
    assert reopened.count("main", "d1") == 20
    assert reopened.search("main", vectors[[7]], top_k=1)[0][0][0] == "d1-c7"
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


@pytest.mark.slow  # over a second: see test_slow_markers.py
def test_collections_with_awkward_names_are_kept_apart(index: MilvusIndex) -> None:
    index.insert("Annual Reports 2024", rows_for("a", unit_vectors(3, seed=10)))
    index.insert("Annual_Reports_2024", rows_for("b", unit_vectors(4, seed=11)))
    index.insert("2024-été", rows_for("c", unit_vectors(5, seed=12)))
    assert index.count("Annual Reports 2024") == 3
    assert index.count("Annual_Reports_2024") == 4
    assert index.count("2024-été") == 5
    assert not index.has_collection("never made")
    assert index.count("never made") == 0
    assert index.search("never made", unit_vectors(2), top_k=3) == [[], []]


def test_collection_names_are_sanitized_deterministically() -> None:
    legal = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
    for name in ["main", "Annual Reports 2024", "2024-été", "../x", "a" * 400, ""]:
        sanitized = milvus_collection_name(name)
        assert legal.fullmatch(sanitized), sanitized
        assert len(sanitized) <= 255
        assert milvus_collection_name(name) == sanitized
    assert milvus_collection_name("main") == "c_main"
    assert milvus_collection_name("a-b") != milvus_collection_name("a_b")


def test_long_text_fields_are_truncated_on_character_boundaries(index: MilvusIndex) -> None:
    row = rows_for("d1", unit_vectors(1, seed=13))[0]
    row.preview = "é" * 1000  # 2000 UTF-8 bytes
    row.section = "€" * 1000
    index.insert("main", [row])
    assert index.count("main", "d1") == 1
    assert truncate_utf8("é" * 10, 5) == "éé"
    assert truncate_utf8("abc", 5) == "abc"


def test_a_different_dimension_for_an_existing_collection_is_refused(index: MilvusIndex) -> None:
    index.ensure_collection("main", DIM)
    with pytest.raises(ConfigError, match="32-dimensional"):
        index.ensure_collection("main", DIM * 2)


def test_unreachable_server_raises_backend_unavailable_naming_the_uri() -> None:
    with pytest.raises(BackendUnavailable, match=r"http://127\.0\.0\.1:9"):
        MilvusIndex("http://127.0.0.1:9")


def test_factory_opens_milvus_lite_in_the_storage_folder(tmp_path: Path) -> None:
    settings = Settings(storage_dir=tmp_path / "fresh" / "storage")
    index = open_vector_index(settings)
    try:
        index.insert("main", rows_for("d1", unit_vectors(3)))
        assert index.count("main") == 3
        assert settings.milvus_lite_path.exists()
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
