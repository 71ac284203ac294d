"""Searching many documents through one merged segment (on disk, memory-mapped), with documents
added, replaced and removed since the merge, ranks and scores exactly as the stored segments
scored all at once, in this process and in another; the merge stays out of the heap."""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from helpers import python_child

from citerag.store import bm25_files, bm25_merge_writer, bm25_merged
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.bm25_merged import MERGED, folder_version, read_document
from citerag.store.bm25_segment import Segment, hashes_of, lucene_idf
from citerag.store.keywords import KINDS, KeywordEntry, KeywordKind, KeywordQuery
from citerag.text.tokens import tokenize

WORDS = [
    "revenue",
    "growth",
    "streaming",
    "members",
    "cash",
    "flow",
    "operating",
    "income",
    "margin",
    "content",
    "debt",
]
QUERIES = ["revenue growth", "cash flow operating", "members content", "debt margin income"]


def _entries(doc: str, rng: random.Random) -> list[KeywordEntry]:
    return [
        KeywordEntry(f"{doc}-{kind}{i}", kind, " ".join(rng.choices(WORDS, k=rng.randint(3, 12))))
        for kind in ("chunk", "page")
        for i in range(rng.randint(1, 5))
    ]


def _results(index: BM25FilesIndex) -> list[list[tuple[str, float]]]:
    return [
        index.search("c", KeywordQuery(kind, query, 15, allowed))
        for kind in ("chunk", "page")
        for query in QUERIES
        for allowed in (None, {f"d{i:03d}-chunk0" for i in range(0, 90, 3)})
    ]


def test_merged_search_equals_a_fresh_index_after_adds_replaces_and_removes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25_files, "MAX_LOOSE", 5)
    rng = random.Random(3)
    docs = {f"d{i:03d}": _entries(f"d{i:03d}", rng) for i in range(60)}
    index = BM25FilesIndex(tmp_path / "a")
    for doc, entries in docs.items():
        index.add_document("c", doc, entries)
    _results(index)  # a merge of what is there now starts
    assert index.wait_for_merges(60)
    for step in range(12):  # fewer changes than a re-merge needs, then more
        doc = f"d{rng.randrange(90):03d}"
        if doc in docs and step % 3 == 0:
            index.remove_document("c", doc)
            del docs[doc]
        else:
            docs[doc] = _entries(doc, rng)  # new, or a new version of a merged document
            index.add_document("c", doc, docs[doc])
        fresh = BM25FilesIndex(tmp_path / f"fresh{step}")
        for name in sorted(docs, key=lambda _: rng.random()):  # any order of adding
            fresh.add_document("c", name, docs[name])
        got, want = _results(index), _results(fresh)
        assert [[i for i, _ in r] for r in got] == [[i for i, _ in r] for r in want]
        for g, w in zip(got, want, strict=True):
            assert [s for _, s in g] == [s for _, s in w]


def _stored(root: Path) -> dict[str, Segment]:
    """Every document's segments as stored, all of them in memory at once and concatenated in
    document-id order (what the index held before its merge was kept on disk)."""
    folder = root / "c"
    docs = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
    kinds = [read_document(folder / d)[1] for d in docs]
    return {kind: Segment.concat([k[kind] for k in kinds]) for kind in KINDS}


def _direct(
    whole: Segment, text: str, top_k: int, allowed: set[str] | None
) -> list[tuple[str, float]]:
    """The search scored straight from those segments."""
    unique, order = np.unique(hashes_of(tokenize(text)), return_inverse=True)
    if not len(whole) or not len(unique):
        return []
    columns = whole.columns(unique)
    idf = lucene_idf(whole.doc_freqs(columns), len(whole))
    average = np.float64(whole.total_length / len(whole))
    scores = whole.scores(columns, order.reshape(-1), idf, average)
    ranked = sorted(
        (-float(score), row)  # rows are in document-id order, then in place: the tie order
        for row, score in enumerate(scores)
        if score > 0 and (allowed is None or whole.ids[row] in allowed)
    )
    return [(whole.ids[row], -score) for score, row in ranked[:top_k]]


def _searches(index: BM25FilesIndex) -> list[tuple[KeywordKind, str, set[str] | None]]:
    allowed = {f"d{i:03d}-{kind}{j}" for i in range(0, 90, 4) for kind in KINDS for j in (0, 2)}
    return [
        (kind, query, among)
        for kind in KINDS
        for query in [*QUERIES, "revenue", "debt debt cash"]
        for among in (None, allowed)
    ]


@pytest.mark.slow  # seconds: many merges written, or a second Python process
def test_every_search_equals_the_segments_scored_directly_through_merges_and_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer and a second index on the same folder (another process: it sees changes through
    `doc_ids`) answer exactly as the stored segments scored all at once, hits and scores, while
    documents are added, replaced and removed before and after merges written to disk."""
    monkeypatch.setattr(bm25_files, "MAX_LOOSE", 4)
    monkeypatch.setattr(bm25_merge_writer, "SPILL", 2048)  # merges spill postings to files
    rng = random.Random(11)
    writer = BM25FilesIndex(tmp_path)
    for i in range(40):
        writer.add_document("c", f"d{i:03d}", _entries(f"d{i:03d}", rng))
    reader = BM25FilesIndex(tmp_path, cache_mib=0.002)  # a few segments at most
    merges = set()
    for step in range(30):
        doc = f"d{rng.randrange(90):03d}"
        if step % 4 == 0:
            writer.remove_document("c", doc)
        else:
            writer.add_document("c", doc, _entries(doc, rng))
        if step % 3 == 0:
            reader.doc_ids("c")
            stored = _stored(tmp_path)
            for kind, query, among in _searches(writer):
                want = _direct(stored[kind], query, 12, among)
                assert writer.search("c", KeywordQuery(kind, query, 12, among)) == want
                assert reader.search("c", KeywordQuery(kind, query, 12, among)) == want
            assert reader.cached_bytes <= 0.002 * 2**20
            assert writer.wait_for_merges(60) and reader.wait_for_merges(60)
        merges.add(folder_version(tmp_path / "c" / MERGED))
    assert len(merges) > 3, "the changes forced several merges"


CHILD = f"""
import json, sys
from pathlib import Path
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.keywords import KeywordQuery
index = BM25FilesIndex(Path(sys.argv[1]))
for line in sys.stdin:
    if line.strip() == "sync":
        index.doc_ids("c")
    kinds = ("chunk", "page")
    hits = [index.search("c", KeywordQuery(k, q, 10)) for k in kinds for q in {QUERIES!r}]
    print(json.dumps(hits), flush=True)
"""


def _hits(index: BM25FilesIndex) -> list[list[list[object]]]:
    found = [index.search("c", KeywordQuery(k, q, 10)) for k in KINDS for q in QUERIES]
    return [[[i, s] for i, s in hits] for hits in found]


@pytest.mark.slow  # seconds: many merges written, or a second Python process
def test_a_process_keeps_its_mapped_merge_while_another_merges_and_then_takes_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25_files, "MAX_LOOSE", 3)  # this process; the child keeps 32
    rng = random.Random(5)
    writer = BM25FilesIndex(tmp_path)
    for i in range(30):
        writer.add_document("c", f"d{i:03d}", _entries(f"d{i:03d}", rng))
    before = _hits(writer)  # a merge starts
    assert writer.wait_for_merges(60)
    assert _hits(writer) == before, "the same hits and scores from the merge"
    first = folder_version(tmp_path / "c" / MERGED)
    child = python_child(CHILD, str(tmp_path))
    assert child.stdin is not None and child.stdout is not None

    def ask(line: str) -> object:
        child.stdin.write(line + "\n")  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]
        return json.loads(child.stdout.readline())  # type: ignore[union-attr]

    try:
        assert ask("search") == before  # the child maps the merge this process wrote
        for i in range(30, 36):  # more than this process's MAX_LOOSE: merged again
            writer.add_document("c", f"d{i:03d}", _entries(f"d{i:03d}", rng))
        writer.add_document("c", "d004", _entries("d004", rng))  # a merged one replaced
        writer.remove_document("c", "d007")
        after = _hits(writer)
        assert writer.wait_for_merges(60)
        second = folder_version(tmp_path / "c" / MERGED)
        assert second != first and not any(p.name.endswith(".old") for p in tmp_path.iterdir())
        assert ask("search") == before, "the old merge, gone from disk, still answers"
        assert ask("sync") == after, "the child takes in the changes"
        assert folder_version(tmp_path / "c" / MERGED) == second, "and the newer merge"
    finally:
        child.stdin.close()
        child.wait(timeout=60)


@pytest.mark.slow  # seconds: many merges written, or a second Python process
def test_an_opened_collection_keeps_its_postings_out_of_the_heap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25_files, "MAX_LOOSE", 0)  # every document merged
    rng = random.Random(2)
    vocabulary = [f"term{i}" for i in range(3000)]
    writer = BM25FilesIndex(tmp_path)
    for d in range(40):
        entries = [
            KeywordEntry(f"d{d:03d}-c{i}", "chunk", " ".join(rng.choices(vocabulary, k=40)))
            for i in range(150)
        ]
        writer.add_document("c", f"d{d:03d}", entries)
    writer.search("c", KeywordQuery("chunk", "term1", 5))  # a merge starts
    assert writer.wait_for_merges(60)
    on_disk = sum(p.stat().st_size for p in (tmp_path / "c" / MERGED).iterdir())
    tracemalloc.start()
    reader = BM25FilesIndex(tmp_path, cache_mib=0.1)
    reader.doc_ids("c")
    for i in range(0, 3000, 60):
        assert reader.search("c", KeywordQuery("chunk", f"term{i} term{i + 1}", 10))
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert on_disk > 800_000
    assert held < on_disk / 10, f"{held} bytes held for {on_disk} bytes of merged segment"


def test_ids_whose_hashes_collide_are_still_told_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merged segment matches allowed ids by hash first; were every hash the same, the hits
    would still be exactly those among the allowed ids."""

    def one_hash(ids: object) -> np.ndarray:
        return np.zeros(len(list(ids)), dtype=np.uint64)  # type: ignore[call-overload]

    monkeypatch.setattr(bm25_merged, "id_hashes", one_hash)
    monkeypatch.setattr(bm25_merge_writer, "id_hashes", one_hash)
    monkeypatch.setattr(bm25_files, "MAX_LOOSE", 0)  # everything merged
    rng = random.Random(4)
    index = BM25FilesIndex(tmp_path)
    for i in range(20):
        index.add_document("c", f"d{i:03d}", _entries(f"d{i:03d}", rng))
    stored = _stored(tmp_path)
    index.search("c", KeywordQuery("chunk", "revenue", 5))  # a merge starts
    assert index.wait_for_merges(60)
    for kind, query, among in _searches(index):
        assert index.search("c", KeywordQuery(kind, query, 5, among)) == _direct(
            stored[kind], query, 5, among
        )
