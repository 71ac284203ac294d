"""Lite's page copy is kept in its folder between processes (`store/lite_page_files.py`): the
next index loads it without reading Lite's rows and finds what Lite finds; a write not followed
by a close leaves no stored copy, and a damaged copy or one Lite's row count contradicts is
read from Lite instead, never searched."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from citerag.store.base import PageRow
from citerag.store.lite_page_files import pages_folder
from citerag.store.lite_pages import ExactPageCache
from citerag.store.milvus_index import MilvusIndex
from citerag.store.milvus_lite import lite_users

DIM = 8
QUERIES = np.random.default_rng(9).standard_normal((4, DIM)).astype(np.float32)
SOME = {f"{d}-page{n:05d}" for d in "abcd" for n in range(1, 121, 3)}


def rows(doc_id: str, count: int, seed: int) -> list[PageRow]:
    vectors = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    return [
        PageRow(f"{doc_id}-page{n:05d}", doc_id, n, vectors[n - 1]) for n in range(1, count + 1)
    ]


def opened(uri: str) -> tuple[MilvusIndex, list[str]]:
    """An index on `uri` and the collections it reads back from Lite's rows."""
    index = MilvusIndex(uri)
    assert isinstance(index.pages, ExactPageCache)
    reads: list[str] = []
    read_rows = index._page_rows.stored_rows
    index.pages._read_rows = lambda c: reads.append(c) or read_rows(c)  # type: ignore[attr-defined]
    return index, reads


def agree(index: MilvusIndex) -> None:
    """The copy's hits are Lite's own FLAT search's, unrestricted and among some pages, and
    its counts and documents are Lite's."""
    lite = index._page_rows
    assert index.pages.doc_ids("c") == lite.doc_ids("c")
    for doc_id in (None, "a", "b", "d"):
        assert index.pages.count("c", doc_id) == lite.count("c", doc_id)
    for among in (None, SOME):
        for query in QUERIES:
            held = index.pages.search("c", query, 7, among)
            flat = index._page_rows.search("c", query, 7, among)
            assert [p for p, _ in held] == [p for p, _ in flat]
            assert np.allclose([s for _, s in held], [s for _, s in flat], atol=1e-4)


def stored(uri: str) -> Path:
    return pages_folder(uri) / "c_c_pg"


@pytest.fixture
def uri(tmp_path: Path) -> str:
    """A Lite folder whose collection "c" holds 300 pages of three documents, written by an
    index that closed without searching (as an ingest does)."""
    path = str(tmp_path / "milvus.db")
    index, reads = opened(path)
    for n, doc_id in enumerate("abc"):
        index.pages.insert("c", rows(doc_id, 100, seed=n))
    index.close()
    assert reads == [] and (stored(path) / "matrix.npy").is_file()
    return path


def test_the_next_index_loads_the_copy_without_reading_lite(uri: str) -> None:
    index, reads = opened(uri)
    agree(index)
    index.pages.insert("c", rows("d", 120, seed=7))  # a writer loads the stored copy too
    index.delete_document("c", "b")
    index.pages.insert("c", rows("a", 30, seed=8))  # pages of "a" embedded again
    agree(index)
    index.close()
    index, more = opened(uri)
    agree(index)
    assert not any(p.startswith("b-") for p, _ in index.pages.search("c", QUERIES[0], 400, None))
    index.close()
    assert reads == more == []


def test_a_write_not_followed_by_a_close_leaves_lite_to_be_read(uri: str) -> None:
    killed, _ = opened(uri)
    agree(killed)
    killed.delete_document("c", "a")
    killed.pages.insert("c", rows("b", 50, seed=11))  # Lite's count of rows stays 300 - 100
    assert not stored(uri).exists()  # removed before Lite changed
    # `killed` is left open, as a process killed here never closes it; Lite serves the same
    # folder to the next index in this process.
    index, reads = opened(uri)
    agree(index)
    assert reads == ["c"]
    assert (stored(uri) / "matrix.npy").is_file()  # stored again from the rows read
    index.close()
    killed.client.close()  # and Lite's server stops, without `killed`'s copy being stored
    lite_users.release(uri)


def damage_matrix(folder: Path) -> None:
    path = folder / "matrix.npy"
    path.write_bytes(path.read_bytes()[:-100])


def shorten_ids(folder: Path) -> None:
    np.save(folder / "ids.npy", np.load(folder / "ids.npy")[:-1])


def change_a_vector(folder: Path) -> None:
    matrix = np.load(folder / "matrix.npy")
    matrix[5] = -matrix[5]
    np.save(folder / "matrix.npy", matrix)


def garble_meta(folder: Path) -> None:
    (folder / "meta.json").write_text('{"format": 1, "rows": ')


@pytest.mark.parametrize("damage", [damage_matrix, shorten_ids, change_a_vector, garble_meta])
def test_a_damaged_copy_is_read_from_lite(
    uri: str, damage: Callable[[Path], None], caplog: pytest.LogCaptureFixture
) -> None:
    damage(stored(uri))
    index, reads = opened(uri)
    with caplog.at_level(logging.WARNING):
        agree(index)
    assert reads == ["c"]
    assert "cannot be used" in caplog.text
    index.close()
    index, reads = opened(uri)  # and stored whole again
    agree(index)
    index.close()
    assert reads == []


def forget_lite_files(folder: Path) -> None:
    """As a set stored where Lite's files were not found: Lite's row count decides."""
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "lite_files": None}))


@pytest.mark.parametrize(
    ("written", "known_by", "seen"),
    [
        (rows("d", 5, seed=3), "files", "d-page00003"),
        (rows("a", 5, seed=4), "files", "a-page00003"),  # the same count: pages embedded again
        (rows("d", 5, seed=3), "count", "d-page00003"),
    ],
)
def test_lite_written_without_the_copy_is_read_again(
    uri: str, written: list[PageRow], known_by: str, seen: str, caplog: pytest.LogCaptureFixture
) -> None:
    if known_by == "count":
        forget_lite_files(stored(uri))
    older, _ = opened(uri)
    older._page_rows.insert("c", written)  # as code that keeps no copy writes
    older.close()
    assert stored(uri).exists()
    index, reads = opened(uri)
    with caplog.at_level(logging.WARNING):
        agree(index)
        found = index.pages.search("c", written[2].vector, 1, None)
    assert reads == ["c"] and found[0][0] == seen
    assert ("305 rows, stored 300" if known_by == "count" else "its files differ") in caplog.text
    index.close()


KILLED_AFTER = """
import os, signal, sys
import numpy as np
from citerag.store.base import PageRow
from citerag.store.milvus_index import MilvusIndex
index = MilvusIndex(sys.argv[1])
index.pages.search("c", np.ones(8, np.float32), 3, None)
if sys.argv[2] == "write":
    index.delete_document("c", "a")
    vectors = np.random.default_rng(5).standard_normal((20, 8)).astype(np.float32)
    index.pages.insert("c", [PageRow(f"b-page{n:05d}", "b", n, vectors[n]) for n in range(1, 20)])
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.slow
def test_a_process_killed_after_searching_or_writing(uri: str) -> None:
    for step, stays in (("search", True), ("write", False)):
        killed = subprocess.run(
            [sys.executable, "-c", KILLED_AFTER, uri, step],
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
            capture_output=True,
            timeout=120,
        )
        assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
        assert stored(uri).exists() == stays
        index, reads = opened(uri)
        agree(index)
        assert reads == ([] if stays else ["c"])
        assert index.pages.count("c", "a") == (100 if stays else 0)
        index.close()
