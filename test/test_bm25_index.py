"""BM25 ranks like the reference implementation, persists without pickle and fails soft."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from citerag.store.bm25_index import BM25Index, tokenize

K1 = 1.5  # the default of both bm25s and rank_bm25

SUBJECTS = [
    "The company", "Netflix", "Our streaming service", "The board of directors", "Management",
    "The auditor", "Revenue from members", "Operating income", "The content library",
    "International expansion",
]
VERBS = ["increased", "reported", "reviewed", "reduced", "announced", "described", "expected"]
OBJECTS = [
    "subscription revenue in the fourth quarter", "content amortization costs",
    "free cash flow and capital expenditures", "the risk factors of piracy", "membership growth",
    "foreign exchange losses on euro debt", "marketing spend across regions",
    "the stock repurchase program", "advertising revenue", "deferred tax assets",
    "streaming content obligations", "price increases in Canada",
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


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], list[str]]:
    ids, texts = build_corpus()
    assert len(ids) >= 50
    return ids, texts


def test_robertson_ranks_like_rank_bm25_okapi(corpus: tuple[list[str], list[str]]) -> None:
    ids, texts = corpus
    index = BM25Index(method="robertson")
    index.build(ids, texts)
    oracle = BM25Okapi([tokenize(t) for t in texts], k1=K1, b=0.75, epsilon=0)
    for query in QUERIES:
        expected = np.asarray(oracle.get_scores(tokenize(query)))
        got = index.search(query, top_k=10)
        assert got, f"no result for {query!r}"
        # Ties make the order among equal scores arbitrary, so compare the score sequence and
        # check that every returned id really has the score it is ranked with.
        expected_top = np.sort(expected[expected > 0])[::-1][:10]
        got_scores = np.array([score for _, score in got]) * (K1 + 1)
        np.testing.assert_allclose(got_scores, expected_top, rtol=1e-5, err_msg=query)
        for chunk_id, score in got:
            oracle_score = expected[ids.index(chunk_id)]
            assert oracle_score == pytest.approx(score * (K1 + 1), rel=1e-5), (query, chunk_id)


def test_results_are_positive_best_first_and_limited_to_top_k(
    corpus: tuple[list[str], list[str]],
) -> None:
    index = BM25Index()
    index.build(*corpus)
    results = index.search("streaming revenue", top_k=5)
    scores = [score for _, score in results]
    assert len(results) == 5
    assert all(score > 0 for score in scores)
    assert scores == sorted(scores, reverse=True)


def test_a_document_that_matches_best_comes_first() -> None:
    index = BM25Index()
    index.build(
        ["a", "b", "c"],
        ["Costs fell in Europe.", "Piracy risk factors are described here.", "Revenue grew."],
    )
    assert index.search("What are the piracy risks?", top_k=3)[0][0] == "b"
    assert index.search("revenues", top_k=3) == index.search("revenue", top_k=3)
    assert [chunk_id for chunk_id, _ in index.search("revenues", top_k=3)] == ["c"]


def test_allowed_ids_restrict_the_results(corpus: tuple[list[str], list[str]]) -> None:
    ids, texts = corpus
    index = BM25Index()
    index.build(ids, texts)
    everything = [chunk_id for chunk_id, _ in index.search("revenue", top_k=len(ids))]
    allowed = set(everything[-3:]) | {"not-an-id"}
    restricted = index.search("revenue", top_k=10, allowed_ids=allowed)
    assert [chunk_id for chunk_id, _ in restricted] == everything[-3:]
    assert index.search("revenue", top_k=10, allowed_ids=set()) == []


def test_empty_corpus_and_unknown_words_give_empty_results(tmp_path: Path) -> None:
    empty = BM25Index()
    empty.build([], [])
    assert empty.search("revenue", top_k=5) == []
    empty.save(tmp_path / "empty")
    assert BM25Index.load(tmp_path / "empty").search("revenue", top_k=5) == []

    index = BM25Index()
    index.build(["a"], ["Revenue grew."])
    assert index.search("zebra", top_k=5) == []
    assert index.search("the of and", top_k=5) == []
    assert index.search("", top_k=5) == []


def test_save_and_load_give_identical_results(
    corpus: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    index = BM25Index(method="robertson")
    index.build(*corpus)
    folder = tmp_path / "bm25"
    index.save(folder)
    loaded = BM25Index.load(folder)
    assert loaded.method == "robertson"
    for query in QUERIES:
        assert loaded.search(query, top_k=10) == index.search(query, top_k=10)


def test_saved_index_holds_no_pickle(corpus: tuple[list[str], list[str]], tmp_path: Path) -> None:
    index = BM25Index()
    index.build(*corpus)
    folder = tmp_path / "bm25"
    index.save(folder)
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert not [p for p in files if p.suffix in {".pkl", ".pickle"}]
    arrays = [p for p in files if p.suffix == ".npy"]
    assert arrays
    for path in arrays:
        np.load(path, allow_pickle=False)
    for path in files:
        if path.suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))
        else:
            assert path.suffix == ".npy", path


def test_saving_again_replaces_the_old_index_and_leaves_no_temporary_folder(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "bm25"
    first = BM25Index()
    first.build(["old"], ["Revenue grew."])
    first.save(folder)
    second = BM25Index()
    second.build(["new"], ["Revenue fell."])
    second.save(folder)
    assert BM25Index.load(folder).search("revenue", top_k=5)[0][0] == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["bm25"]


def test_tokenize_lowercases_drops_stopwords_and_folds_plurals() -> None:
    assert tokenize("The Revenues of the Companies grew 2,427,077") == [
        "revenue", "company", "grew", "2427077"
    ]


def test_a_number_is_one_token_however_its_thousands_are_written() -> None:
    assert tokenize("4,585,289 and 4585289 and 3.5") == ["4585289", "4585289", "3.5"]


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="okapi"):
        BM25Index(method="okapi")
