"""Keyword search inside Milvus (its BM25 function) on Milvus Lite in a temporary folder, and
its refusal on a Milvus 2.3 server (`milvus_server_uri` in conftest.py, marked `server`)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import bm25s
import pytest

from citerag.errors import BackendUnavailable, ConfigError
from citerag.settings import Settings
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.factory import open_keyword_index
from citerag.store.keywords import KeywordEntry, KeywordQuery
from citerag.store.milvus_index import MilvusIndex
from citerag.store.milvus_keywords import MilvusKeywordIndex
from citerag.testing.keyword_index import KeywordIndexContract
from citerag.text.tokens import tokenize

NETFLIX = [
    KeywordEntry("n1", "chunk", "Netflix streaming revenues grew to 24,996,056 thousand dollars."),
    KeywordEntry("n2", "chunk", "Paid memberships increased in every region during the year."),
    KeywordEntry("n3", "chunk", "The company repurchased no shares of its common stock."),
    KeywordEntry("np1", "page", "Streaming revenues and paid memberships by region."),
]
MICROSOFT = [
    KeywordEntry("m1", "chunk", "Microsoft cloud revenue increased 34% driven by Azure."),
    KeywordEntry("m2", "chunk", "Operating income grew on higher revenue from Office products."),
    KeywordEntry("mp1", "page", "Azure and other cloud services revenue grew 50%."),
]


@pytest.fixture
def milvus(tmp_path: Path) -> Iterator[MilvusIndex]:
    index = MilvusIndex(str(tmp_path / "storage" / "milvus.db"))
    yield index
    index.close()


@pytest.fixture
def keywords(milvus: MilvusIndex) -> MilvusKeywordIndex:
    index = MilvusKeywordIndex(milvus)
    index.add_document("reports", "netflix", NETFLIX)
    index.add_document("reports", "microsoft", MICROSOFT)
    return index


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [chunk_id for chunk_id, _ in hits]


class TestMilvusKeywords(KeywordIndexContract):
    @pytest.fixture
    def keyword_index(self, milvus: MilvusIndex) -> MilvusKeywordIndex:
        return MilvusKeywordIndex(milvus)


def test_ties_go_by_document_id_then_place(milvus: MilvusIndex) -> None:
    index = MilvusKeywordIndex(milvus)
    same = "Streaming revenue"
    index.add_document("ties", "b", [KeywordEntry(f"b{i}", "chunk", same) for i in (1, 2)])
    index.add_document("ties", "a", [KeywordEntry(f"a{i}", "chunk", same) for i in (2, 1)])
    hits = index.search("ties", KeywordQuery("chunk", "revenue", 4))
    assert ids(hits) == ["a2", "a1", "b1", "b2"]


def test_the_factory_opens_milvus_bm25_when_asked_and_bm25s_on_lite_for_auto(
    milvus: MilvusIndex, tmp_path: Path
) -> None:
    settings = Settings(storage_dir=tmp_path / "storage", keyword_backend="milvus")
    assert isinstance(open_keyword_index(settings.storage, milvus), MilvusKeywordIndex)
    auto = Settings(storage_dir=tmp_path / "storage", keyword_backend="auto")
    assert isinstance(open_keyword_index(auto.storage, milvus), BM25FilesIndex)
    with pytest.raises(ConfigError, match="keyword_backend"):
        open_keyword_index(settings.storage, None)


def test_search_finds_chunks_of_the_kind_asked_best_first(keywords: MilvusKeywordIndex) -> None:
    hits = keywords.search("reports", KeywordQuery("chunk", "Azure cloud revenue", 10))
    assert ids(hits)[0] == "m1"
    assert set(ids(hits)) <= {"n1", "n2", "n3", "m1", "m2"}
    assert all(score > 0 for _, score in hits)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    pages = keywords.search("reports", KeywordQuery("page", "Azure cloud revenue", 10))
    assert ids(pages)[0] == "mp1"


def test_plurals_stop_words_and_thousands_separators_match(keywords: MilvusKeywordIndex) -> None:
    assert ids(keywords.search("reports", KeywordQuery("chunk", "membership", 10))) == ["n2"]
    assert ids(keywords.search("reports", KeywordQuery("chunk", "24996056", 10))) == ["n1"]
    assert keywords.search("reports", KeywordQuery("chunk", "the of and", 10)) == []


def test_allowed_ids_restrict_results(keywords: MilvusKeywordIndex) -> None:
    hits = keywords.search(
        "reports", KeywordQuery("chunk", "revenue", 10, allowed_ids={"n1", "m2", "mp1"})
    )
    assert set(ids(hits)) == {"n1", "m2"}
    assert keywords.search("reports", KeywordQuery("chunk", "revenue", 10, allowed_ids=set())) == []


def test_many_allowed_ids_are_checked_on_the_best_matches(
    keywords: MilvusKeywordIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("citerag.store.milvus_keywords.MAX_FILTER_IDS", 1)
    hits = keywords.search(
        "reports", KeywordQuery("chunk", "revenue grew", 2, allowed_ids={"n1", "m1", "m2"})
    )
    expected = keywords.search("reports", KeywordQuery("chunk", "revenue grew", 10))
    assert hits == [hit for hit in expected if hit[0] in {"n1", "m1", "m2"}][:2]


def test_allowed_ids_outside_the_best_matches_are_still_found(
    keywords: MilvusKeywordIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    for constant in ("MAX_FILTER_IDS", "FETCH_MIN"):
        monkeypatch.setattr(f"citerag.store.milvus_keywords.{constant}", 0)
    monkeypatch.setattr("citerag.store.milvus_keywords.FETCH_FACTOR", 1)
    monkeypatch.setattr("citerag.store.milvus_keywords.FILTER_SLICE", 1)
    best = keywords.search("reports", KeywordQuery("chunk", "revenue", 1))
    others = {"n1", "m1", "m2"} - set(ids(best))
    hits = keywords.search("reports", KeywordQuery("chunk", "revenue", 1, allowed_ids=others))
    assert len(hits) == 1 and hits[0][0] in others


def test_top_k_limits_results(keywords: MilvusKeywordIndex) -> None:
    assert len(keywords.search("reports", KeywordQuery("chunk", "revenue", 1))) == 1
    assert keywords.search("reports", KeywordQuery("chunk", "revenue", 0)) == []


def test_remove_document_and_doc_ids(keywords: MilvusKeywordIndex) -> None:
    assert keywords.doc_ids("reports") == {"netflix", "microsoft"}
    keywords.remove_document("reports", "netflix")
    assert keywords.doc_ids("reports") == {"microsoft"}
    hits = keywords.search("reports", KeywordQuery("chunk", "revenue", 10))
    assert set(ids(hits)) == {"m1", "m2"}


def test_adding_a_document_again_replaces_its_rows(keywords: MilvusKeywordIndex) -> None:
    keywords.add_document("reports", "netflix", [KeywordEntry("n9", "chunk", "DVD revenue")])
    hits = keywords.search("reports", KeywordQuery("chunk", "revenue", 10))
    assert "n9" in ids(hits) and not {"n1", "n2", "n3"} & set(ids(hits))


def test_collections_are_apart_and_drop_removes_one(keywords: MilvusKeywordIndex) -> None:
    keywords.add_document("other", "essay", [KeywordEntry("e1", "chunk", "painting revenue")])
    assert keywords.doc_ids("other") == {"essay"}
    keywords.drop_collection("reports")
    assert keywords.doc_ids("reports") == set()
    assert keywords.search("reports", KeywordQuery("chunk", "revenue", 10)) == []
    assert ids(keywords.search("other", KeywordQuery("chunk", "revenue", 10))) == ["e1"]


@pytest.mark.slow  # a second Milvus Lite open: over a second
def test_the_index_reopens_with_its_data(tmp_path: Path) -> None:
    path = str(tmp_path / "milvus.db")
    first = MilvusIndex(path)
    MilvusKeywordIndex(first).add_document("reports", "microsoft", MICROSOFT)
    first.close()
    second = MilvusIndex(path)
    try:
        hits = MilvusKeywordIndex(second).search("reports", KeywordQuery("chunk", "Azure", 10))
        assert ids(hits) == ["m1"]
    finally:
        second.close()


def random_corpus(size: int, seed: int = 7) -> list[str]:
    """Sentences over a small vocabulary with repeats, so term frequencies and lengths vary."""
    words = [
        "revenue",
        "cloud",
        "azure",
        "stream",
        "member",
        "region",
        "share",
        "income",
        "office",
        "growth",
    ]
    rng = random.Random(seed)
    return [" ".join(rng.choices(words, k=rng.randint(3, 25))) for _ in range(size)]


def test_ranking_matches_bm25s_over_the_same_tokens(milvus: MilvusIndex) -> None:
    """One document is one segment, so Milvus's statistics are the corpus's own: its BM25 (k1
    1.5, b 0.75, Lucene IDF) must rank as bm25s's `lucene` method does."""
    texts = random_corpus(80)
    keywords = MilvusKeywordIndex(milvus)
    entries = [KeywordEntry(f"c{i}", "chunk", text) for i, text in enumerate(texts)]
    keywords.add_document("oracle", "doc", entries)
    oracle = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    oracle.index([tokenize(text) for text in texts], show_progress=False)
    for query in ("azure growth", "member region share", "office"):
        expected = oracle.get_scores(tokenize(query))
        hits = keywords.search("oracle", KeywordQuery("chunk", query, 10))
        ranked = sorted(range(len(texts)), key=lambda i: -expected[i])[:10]
        assert ids(hits)[:5] == [f"c{i}" for i in ranked[:5]]
        # Milvus keeps the (k1 + 1) factor that bm25s's lucene variant drops.
        for chunk_id, score in hits:
            assert score == pytest.approx(expected[int(chunk_id[1:])] * 2.5, rel=1e-4)


@pytest.mark.server
@pytest.mark.slow
def test_a_milvus_2_3_server_is_refused_in_one_sentence(
    milvus_server_uri: str, tmp_path: Path
) -> None:
    index = MilvusIndex(milvus_server_uri)
    try:
        with pytest.raises(BackendUnavailable, match="no BM25 function") as raised:
            MilvusKeywordIndex(index)
        assert milvus_server_uri in str(raised.value)
        assert str(raised.value).count(". ") == 0
        settings = Settings(storage_dir=tmp_path, keyword_backend="auto")
        assert isinstance(open_keyword_index(settings.storage, index), BM25FilesIndex)
    finally:
        index.close()
