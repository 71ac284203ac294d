"""A due merge of the keyword index runs beside the searches, never inside one: a search while it
runs answers at once with the hits and scores the merge will give, changes made meanwhile are
all there once it is published, two indexes on one folder merge one at a time and agree, and a
merge cut off (the index closed, the process gone) leaves the index as it was, usable."""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from helpers import python_child
from test_bm25_merged import _direct, _entries, _searches, _stored

from citerag.store import bm25_files
from citerag.store.atomic_dirs import retire
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.bm25_merged import MERGED, Version, folder_version
from citerag.store.bm25_segment import Segment
from citerag.store.keywords import KeywordQuery

Parts = Iterable[tuple[str, Version, dict[str, Segment]]]


class SlowMerge:
    """`write_merged` held after its first document until `release` is set: the merge is under
    way (its staging folder written to) for as long as a test needs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started, self.release, self.finished = (threading.Event() for _ in range(3))
        self.calls = 0
        real = bm25_files.write_merged

        def slow(folder: Path, parts: Parts) -> object:
            self.calls += 1
            try:
                return real(folder, self._held(parts))
            finally:
                self.finished.set()

        monkeypatch.setattr(bm25_files, "write_merged", slow)

    def _held(self, parts: Parts) -> Iterator[tuple[str, Version, dict[str, Segment]]]:
        for n, part in enumerate(parts):
            yield part
            if n == 0:
                self.started.set()
                assert self.release.wait(60), "the test never let the merge go on"


def _all_equal_to_stored(index: BM25FilesIndex, root: Path) -> None:
    """Every search answers exactly as the stored segments scored all at once."""
    stored = _stored(root)
    for kind, query, among in _searches(index):
        want = _direct(stored[kind], query, 12, among)
        assert index.search("c", KeywordQuery(kind, query, 12, among)) == want, (kind, query)


def _filled(
    root: Path, count: int, rng: random.Random, monkeypatch: pytest.MonkeyPatch
) -> BM25FilesIndex:
    """An index of `count` documents, every one merged (MAX_LOOSE 3 again after)."""
    monkeypatch.setattr(bm25_files, "MAX_LOOSE", 0)  # merged again while any is not
    index = BM25FilesIndex(root)
    for i in range(count):
        index.add_document("c", f"d{i:03d}", _entries(f"d{i:03d}", rng))
    assert index.wait_for_merges(60)
    monkeypatch.setattr(bm25_files, "MAX_LOOSE", 3)
    assert (root / "c" / MERGED).is_dir()
    return index


@pytest.fixture(autouse=True)
def _few_loose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25_files, "MAX_LOOSE", 3)


def test_a_search_while_a_merge_is_due_answers_at_once_as_the_merge_will(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(21)
    index = _filled(tmp_path, 30, rng, monkeypatch)
    first = folder_version(tmp_path / "c" / MERGED)
    slow = SlowMerge(monkeypatch)
    for i in range(30, 36):  # more than MAX_LOOSE added: the writer starts a merge
        index.add_document("c", f"d{i:03d}", _entries(f"d{i:03d}", rng))
    assert slow.started.wait(60)
    query = KeywordQuery("chunk", "revenue growth", 15)
    during = index.search("c", query)
    during_all = [index.search("c", KeywordQuery(k, q, 12, a)) for k, q, a in _searches(index)]
    assert not slow.finished.is_set(), "every search above answered while the merge ran"
    assert folder_version(tmp_path / "c" / MERGED) == first
    slow.release.set()
    assert index.wait_for_merges(60)
    assert folder_version(tmp_path / "c" / MERGED) != first, "the new merge is published"
    assert during and index.search("c", query) == during
    after_all = [index.search("c", KeywordQuery(k, q, 12, a)) for k, q, a in _searches(index)]
    assert during_all == after_all, "the same hits and scores before and after the merge"
    _all_equal_to_stored(index, tmp_path)
    assert slow.calls == 1


def test_documents_added_replaced_and_removed_during_a_merge_are_all_there_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(22)
    index = _filled(tmp_path, 30, rng, monkeypatch)
    slow = SlowMerge(monkeypatch)
    for i in range(30, 35):  # a merge starts at the fourth
        index.add_document("c", f"d{i:03d}", _entries(f"d{i:03d}", rng))
    assert slow.started.wait(60)  # d000 merged; the others not read yet
    index.add_document("c", "d000", _entries("d000", rng))  # replaced after it was merged
    index.add_document("c", "d020", _entries("d020", rng))  # replaced before it is merged
    index.remove_document("c", "d001")  # removed after the merge listed it
    index.remove_document("c", "d031")  # removed: loose before the merge
    for i in range(40, 46):  # new: more than MAX_LOOSE again, so a second merge follows
        index.add_document("c", f"d{i:03d}", _entries(f"d{i:03d}", rng))
    _all_equal_to_stored(index, tmp_path)  # while the first merge is still held
    assert not slow.finished.is_set()
    slow.release.set()
    assert index.wait_for_merges(60)
    assert slow.calls == 2, "the changes made meanwhile called for one more merge"
    assert index.doc_ids("c") == {f"d{i:03d}" for i in [*range(35), *range(40, 46)]} - {
        "d001",
        "d031",
    }
    _all_equal_to_stored(index, tmp_path)
    _all_equal_to_stored(BM25FilesIndex(tmp_path), tmp_path)  # and a fresh process


def test_two_indexes_on_one_folder_merge_one_at_a_time_and_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two `BM25FilesIndex` on one folder stand in for two processes (the merge lock is held
    per open file, so they exclude each other as processes do)."""
    rng = random.Random(23)
    first = _filled(tmp_path, 30, rng, monkeypatch)
    slow = SlowMerge(monkeypatch)
    for i in range(30, 36):
        first.add_document("c", f"d{i:03d}", _entries(f"d{i:03d}", rng))
    assert slow.started.wait(60)
    second = BM25FilesIndex(tmp_path)
    second.doc_ids("c")
    second.search("c", KeywordQuery("chunk", "revenue", 5))  # due here too: waits for the lock
    assert not second.wait_for_merges(0.3), "the second merger waits while the first runs"
    staging = [p.name for p in (tmp_path / "c").iterdir() if p.name.startswith(f".{MERGED}.")]
    assert staging == [f".{MERGED}.tmp-{os.getpid()}"], "one merge under way"
    first.add_document("c", "d050", _entries("d050", rng))  # a change while it runs
    second.doc_ids("c")
    slow.release.set()
    assert first.wait_for_merges(60) and second.wait_for_merges(60)
    assert slow.calls == 1, "the second took the first's merge instead of writing its own"
    _all_equal_to_stored(first, tmp_path)
    _all_equal_to_stored(second, tmp_path)


def test_documents_another_process_removes_during_a_merge_are_left_out_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(26)
    index = _filled(tmp_path, 30, rng, monkeypatch)
    slow = SlowMerge(monkeypatch)
    for i in range(30, 35):  # a merge of d000 to d033 starts at the fourth
        index.add_document("c", f"d{i:03d}", _entries(f"d{i:03d}", rng))
    assert slow.started.wait(60)
    for i in range(31, 35):  # gone, as another process removes, before the merge reads them
        retire(tmp_path / "c" / f"d{i:03d}")
    slow.release.set()
    assert index.wait_for_merges(60)
    assert slow.calls == 1, "what the merge found gone is gone for the index too: no new merge"
    assert index.doc_ids("c") == {f"d{i:03d}" for i in range(31)}
    _all_equal_to_stored(index, tmp_path)


def test_closing_during_a_merge_leaves_the_previous_merge_and_no_staging_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(24)
    index = _filled(tmp_path, 30, rng, monkeypatch)
    first = folder_version(tmp_path / "c" / MERGED)
    slow = SlowMerge(monkeypatch)
    for i in range(30, 36):
        index.add_document("c", f"d{i:03d}", _entries(f"d{i:03d}", rng))
    assert slow.started.wait(60)
    closing = threading.Thread(target=index.close)
    closing.start()
    closing.join(0.5)
    assert closing.is_alive(), "close waits for the merge to stop"
    slow.release.set()
    closing.join(60)
    assert not closing.is_alive()
    assert folder_version(tmp_path / "c" / MERGED) == first
    assert not [p for p in (tmp_path / "c").iterdir() if p.name.startswith(f".{MERGED}.")]
    _all_equal_to_stored(BM25FilesIndex(tmp_path), tmp_path)


CHILD = """
import sys, threading
from pathlib import Path
from citerag.store import bm25_files
from citerag.store.atomic_dirs import retire
from citerag.store.keywords import KeywordEntry

bm25_files.MAX_LOOSE = 3
real = bm25_files.write_merged

def held(parts):
    for n, part in enumerate(parts):
        yield part
        if n == 5:
            print("merging", flush=True)
            threading.Event().wait()  # until the process is gone

bm25_files.write_merged = lambda folder, parts: real(folder, held(parts))
index = bm25_files.BM25FilesIndex(Path(sys.argv[1]))
for i in range(30, 36):  # a merge starts at the fourth
    text = " ".join(["revenue", "growth", "cash", "flow"][: i % 4 + 1])
    index.add_document("c", f"d{i:03d}", [KeywordEntry(f"d{i:03d}-chunk0", "chunk", text)])
sys.stdin.readline()
"""


@pytest.mark.slow  # seconds: a second Python process
def test_a_process_gone_mid_merge_leaves_the_index_usable_and_its_staging_removed_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _filled(tmp_path, 30, random.Random(25), monkeypatch)
    first = folder_version(tmp_path / "c" / MERGED)
    child = python_child(CHILD, str(tmp_path))
    assert child.stdin is not None and child.stdout is not None
    assert child.stdout.readline().strip() == "merging"
    staging = tmp_path / "c" / f".{MERGED}.tmp-{child.pid}"
    assert any(staging.iterdir()), "the child's merge was half-way"
    child.stdin.close()  # its main thread ends; the merging daemon thread dies with it
    assert child.wait(timeout=60) == 0
    assert staging.exists() and folder_version(tmp_path / "c" / MERGED) == first
    reader = BM25FilesIndex(tmp_path)
    _all_equal_to_stored(reader, tmp_path)  # the lock was let go: this one merges
    assert reader.wait_for_merges(60)
    assert folder_version(tmp_path / "c" / MERGED) != first
    assert not staging.exists(), "the next merge removed the dead one's staging folder"
    _all_equal_to_stored(reader, tmp_path)
