"""The bm25s-files keyword index scores exactly like a bm25s index over the same entries (Lucene
IDF, the same tokens), although its entries are split into per-document segments."""

from __future__ import annotations

import itertools
from pathlib import Path

import bm25s
import numpy as np
import pytest

from citerag.store import bm25_files
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.keywords import KeywordEntry, KeywordQuery
from citerag.text.tokens import tokenize

SUBJECTS = [
    "The company",
    "Netflix",
    "Our streaming service",
    "The board of directors",
    "Management",
    "The auditor",
    "Revenue from members",
    "Operating income",
    "The content library",
    "International expansion",
]
VERBS = ["increased", "reported", "reviewed", "reduced", "announced", "described", "expected"]
OBJECTS = [
    "subscription revenue in the fourth quarter",
    "content amortization costs",
    "free cash flow and capital expenditures",
    "the risk factors of piracy",
    "membership growth",
    "foreign exchange losses on euro debt",
    "marketing spend across regions",
    "the stock repurchase program",
    "advertising revenue",
    "deferred tax assets",
    "streaming content obligations",
    "price increases in Canada",
]
QUERIES = [
    "streaming revenue",
    "content amortization costs",
    "free cash flow",
    "foreign exchange losses euro",
    "board reviewed stock repurchase",
    "membership growth in Canada",
    "advertising",
    "netflix reported revenue",
]


def build_corpus() -> tuple[list[str], list[str]]:
    triples = itertools.product(SUBJECTS, VERBS, OBJECTS)
    texts = []
    for n, (subject, verb, obj) in enumerate(itertools.islice(triples, 0, None, 7)):
        also = f" It also {VERBS[n % len(VERBS)]} {OBJECTS[(n * 5) % len(OBJECTS)]}."
        extra = also if n % 3 else ""
        texts.append(f"{subject} {verb} {obj}.{extra}")
    return [f"chunk-{i:03d}" for i in range(len(texts))], texts


DOCS = 7  # the corpus is split into this many documents of unequal size


@pytest.fixture(params=[bm25_files.MAX_LOOSE, 0], ids=["one-by-one", "merged"])
def merging(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Documents searched one by one (fewer than MAX_LOOSE), or all through the merge on disk."""
    monkeypatch.setattr(bm25_files, "MAX_LOOSE", request.param)


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], list[str]]:
    ids, texts = build_corpus()
    assert len(ids) >= 50
    return ids, texts


def split_index(root: Path, ids: list[str], texts: list[str]) -> BM25FilesIndex:
    """The corpus in per-document segments, documents named in corpus order."""
    index = BM25FilesIndex(root)
    bounds = [0, 3, 4, 15, 16, 30, 44, len(ids)]
    for doc in range(DOCS):
        part = range(bounds[doc], bounds[doc + 1])
        entries = [KeywordEntry(ids[i], "chunk", texts[i]) for i in part]
        entries += [KeywordEntry(f"page-{i:03d}", "page", texts[i]) for i in part]
        index.add_document("c", f"doc{doc}", entries)
    index.search("c", KeywordQuery("chunk", "revenue", 1))  # merged when due
    assert index.wait_for_merges(60)
    return index


def oracle(texts: list[str]) -> bm25s.BM25:
    reference = bm25s.BM25(method="lucene")
    reference.index([tokenize(t) for t in texts], show_progress=False)
    return reference


def oracle_ranking(reference: bm25s.BM25, ids: list[str], query: str) -> list[tuple[str, float]]:
    """The old single-index search: positive scores, best first, ties in corpus order."""
    token_ids = reference.get_tokens_ids(tokenize(query))
    if not token_ids:
        return []
    scores = np.asarray(reference.get_scores_from_ids(token_ids), dtype=np.float64)
    order = np.argsort(-scores, kind="stable")
    return [(ids[i], float(scores[i])) for i in order if scores[i] > 0]


QUERIES += ["revenue revenue streaming", "the", "zebra", "2,427,077 revenues"]


@pytest.mark.parametrize("kind", ["chunk", "page"])
def test_segments_score_and_rank_exactly_like_one_bm25s_index(
    corpus: tuple[list[str], list[str]], tmp_path: Path, kind: str, merging: None
) -> None:
    ids, texts = corpus
    index = split_index(tmp_path, ids, texts)
    reference = oracle(texts)
    names = ids if kind == "chunk" else [f"page-{i:03d}" for i in range(len(ids))]
    for query in QUERIES:
        expected = oracle_ranking(reference, names, query)
        got = index.search("c", KeywordQuery(kind, query, top_k=len(ids)))  # type: ignore[arg-type]
        assert [i for i, _ in got] == [i for i, _ in expected], query
        np.testing.assert_allclose(
            [s for _, s in got], [s for _, s in expected], rtol=0, atol=1e-6, err_msg=query
        )


def test_removing_a_document_scores_like_a_bm25s_index_without_it(
    corpus: tuple[list[str], list[str]], tmp_path: Path, merging: None
) -> None:
    ids, texts = corpus
    index = split_index(tmp_path, ids, texts)
    index.remove_document("c", "doc2")  # entries 4..14
    kept = [i for i in range(len(ids)) if not 4 <= i < 15]
    reference = oracle([texts[i] for i in kept])
    for query in QUERIES:
        expected = oracle_ranking(reference, [ids[i] for i in kept], query)
        got = index.search("c", KeywordQuery("chunk", query, top_k=len(ids)))
        assert [i for i, _ in got] == [i for i, _ in expected], query
        np.testing.assert_allclose([s for _, s in got], [s for _, s in expected], atol=1e-6)


def test_a_reopened_index_gives_identical_results(
    corpus: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    index = split_index(tmp_path, *corpus)
    reopened = BM25FilesIndex(tmp_path)
    for query in QUERIES:
        assert reopened.search("c", KeywordQuery("chunk", query, 10)) == index.search(
            "c", KeywordQuery("chunk", query, 10)
        )


def test_a_document_that_matches_best_comes_first(tmp_path: Path) -> None:
    index = BM25FilesIndex(tmp_path)
    texts = ["Costs fell in Europe.", "Piracy risk factors are described here.", "Revenue grew."]
    index.add_document(
        "c", "d", [KeywordEntry(i, "chunk", t) for i, t in zip("abc", texts, strict=True)]
    )
    assert index.search("c", KeywordQuery("chunk", "What are the piracy risks?", 3))[0][0] == "b"
    assert index.search("c", KeywordQuery("chunk", "revenues", 3)) == index.search(
        "c", KeywordQuery("chunk", "revenue", 3)
    )
    assert [i for i, _ in index.search("c", KeywordQuery("chunk", "revenues", 3))] == ["c"]


def test_tokenize_lowercases_drops_stopwords_and_folds_plurals() -> None:
    assert tokenize("The Revenues of the Companies grew 2,427,077") == [
        "revenue",
        "company",
        "grew",
        "2427077",
    ]


def test_a_number_is_one_token_however_its_thousands_are_written() -> None:
    assert tokenize("4,585,289 and 4585289 and 3.5") == ["4585289", "4585289", "3.5"]
