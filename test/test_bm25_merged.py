"""Searching many documents through one merged segment, with documents added, replaced and
removed since the merge, ranks and scores exactly as an index built fresh over the documents
that are there now."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from citerag.store import bm25_files
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.keywords import KeywordEntry, KeywordQuery

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
    _results(index)  # merges what is there now
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
