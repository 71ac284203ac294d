"""The bm25s-files keyword index keeps the keyword-index contract, and its files are per document,
plain arrays and JSON, and never half-written."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from citerag.settings import Settings
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.factory import open_keyword_index
from citerag.store.keywords import KeywordEntry, KeywordQuery
from citerag.testing.keyword_index import COLLECTION, D1, D2, KeywordIndexContract, ids, with_two


class TestBM25Files(KeywordIndexContract):
    @pytest.fixture
    def keyword_index(self, tmp_path: Path) -> Iterator[BM25FilesIndex]:
        index = BM25FilesIndex(tmp_path / "keywords")
        yield index
        index.close()


def files_of(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


def test_adding_or_removing_a_document_leaves_the_others_files_alone(tmp_path: Path) -> None:
    index = BM25FilesIndex(tmp_path)
    index.add_document(COLLECTION, "d1", D1)
    before = files_of(tmp_path / COLLECTION / "d1")
    index.add_document(COLLECTION, "d2", D2)
    index.remove_document(COLLECTION, "d2")
    index.add_document(COLLECTION, "d3", D2)
    assert files_of(tmp_path / COLLECTION / "d1") == before
    assert sorted(p.name for p in (tmp_path / COLLECTION).iterdir()) == ["d1", "d3"]


def test_segments_hold_only_npy_arrays_and_json(tmp_path: Path) -> None:
    with_two(BM25FilesIndex(tmp_path))
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and {p.suffix for p in files} == {".npy", ".json"}
    for path in files:
        if path.suffix == ".npy":
            np.load(path, allow_pickle=False)
        else:
            json.loads(path.read_text(encoding="utf-8"))


def test_a_writer_killed_mid_write_leaves_nothing_visible(tmp_path: Path) -> None:
    with_two(BM25FilesIndex(tmp_path))
    dead_pid = 2**22 + 1  # above the kernel's pid_max: no process has it
    half = tmp_path / COLLECTION / f".d3.tmp-{dead_pid}"
    half.mkdir()
    (half / "chunk.terms.npy").write_bytes(b"\x93NUMPY half")
    reader = BM25FilesIndex(tmp_path)
    assert reader.doc_ids(COLLECTION) == {"d1", "d2"}
    assert ids(reader.search(COLLECTION, KeywordQuery("chunk", "piracy", 5))) == ["d1-c0"]
    reader.add_document(COLLECTION, "d4", [KeywordEntry("d4-c0", "chunk", "Zebra.")])
    assert not half.exists(), "the next writer removes a dead writer's staging copy"


def test_another_process_sees_a_document_through_doc_ids(tmp_path: Path) -> None:
    first, second = BM25FilesIndex(tmp_path), BM25FilesIndex(tmp_path)
    first.add_document(COLLECTION, "d1", D1)
    assert second.doc_ids(COLLECTION) == {"d1"}
    first.add_document(COLLECTION, "d2", D2)
    first.remove_document(COLLECTION, "d1")
    assert second.doc_ids(COLLECTION) == {"d2"}
    assert second.search(COLLECTION, KeywordQuery("chunk", "revenue", 5)) == first.search(
        COLLECTION, KeywordQuery("chunk", "revenue", 5)
    )


def test_names_that_are_not_plain_folder_names_are_refused(tmp_path: Path) -> None:
    index = BM25FilesIndex(tmp_path)
    with pytest.raises(ValueError, match="folder"):
        index.add_document(COLLECTION, "../escape", D1)
    assert not any(p.name == "escape" for p in tmp_path.parent.iterdir())


def test_the_factory_opens_bm25s_files_in_the_storage_folder(tmp_path: Path) -> None:
    settings = Settings(storage_dir=tmp_path / "storage")
    index = open_keyword_index(settings.storage, None)
    assert isinstance(index, BM25FilesIndex)
    assert index.root == settings.storage.storage_dir / "keywords"
    assert os.fspath(index.root).startswith(os.fspath(tmp_path))
