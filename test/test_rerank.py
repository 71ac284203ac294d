from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from citerag.embed.embedder import Embedder, default_model_path
from citerag.nodes import chunk_node
from citerag.retrieve.rerank import (
    BestSentenceScorer,
    ColbertScorer,
    MaxSimScorer,
    RerankPostprocessor,
    find_colbert_checkpoint,
)
from citerag.testing.rerank import QUESTION, TEXTS, ScorerContract


def chunk(chunk_id: str, text: str) -> TextNode:
    return chunk_node(
        node_id=chunk_id,
        doc_id="d",
        doc_name="d.pdf",
        page=1,
        chunk_index=0,
        text=text,
        start=0,
        sentences=[(0, len(text))],
    )


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def question(text: str, vector: np.ndarray) -> QueryBundle:
    return QueryBundle(query_str=text, embedding=[float(v) for v in vector])


def ids(nodes: Sequence[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def test_no_reranker_keeps_the_retrieval_order() -> None:
    candidates = [NodeWithScore(node=chunk(str(i), "t"), score=1.0 / (i + 1)) for i in range(5)]
    reranker = RerankPostprocessor(None, top_n=3)
    kept = reranker.postprocess_nodes(candidates, query_bundle=question("q", unit(1, 0)))
    assert ids(kept) == ["0", "1", "2"]


def test_best_sentence_lifts_a_strong_match_but_blends_with_retrieval_order() -> None:
    candidates = [NodeWithScore(node=chunk(str(i), "t"), score=0.0) for i in range(6)]
    vectors = {str(i): unit(0.1, 1).reshape(1, -1) for i in range(6)}
    vectors["3"] = unit(1, 0).reshape(1, -1)  # the only sentence that matches the question
    asked: list[list[str]] = []

    def sentence_vectors(chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        asked.append(list(chunk_ids))
        return {i: vectors[i] for i in chunk_ids if i in vectors}

    reranker = RerankPostprocessor(BestSentenceScorer(sentence_vectors), top_n=6)
    order = ids(reranker.postprocess_nodes(candidates, query_bundle=question("q", unit(1, 0))))
    assert asked == [[str(i) for i in range(6)]]
    assert order.index("3") < 3, "the matching chunk should move up"
    assert order[0] == "0", "one reranker vote does not beat the retrieval's first place"
    assert sorted(order) == [str(i) for i in range(6)]


@pytest.mark.slow
def test_maxsim_on_minilm_tokens_prefers_the_passage_about_the_question() -> None:
    reranker = RerankPostprocessor(MaxSimScorer(Embedder()), top_n=3)
    texts = [
        "The quarterly report lists revenue by segment and operating expenses.",
        "Bananas are rich in potassium and grow in tropical climates.",
        "The first programs were written on an IBM 1401 with punched cards.",
    ]
    candidates = [NodeWithScore(node=chunk(str(i), t), score=0.0) for i, t in enumerate(texts)]
    query = question("What computer did he first program on?", unit(1, 0))
    order = ids(reranker.postprocess_nodes(candidates, query_bundle=query))
    assert order.index("2") < order.index("1")


# The blend documented in citerag/retrieve/rerank.py, written out again here: the retrieval
# order counts twice, 2 / (60 + i + 1) for the candidate at 0-based position i, plus
# 1 / (60 + rank) for its 1-based rank by the scorer's score.
def blended_order(retrieval: Sequence[str], scores: Sequence[float]) -> list[tuple[str, float]]:
    by_score = sorted(range(len(retrieval)), key=lambda i: -scores[i])
    rank = {index: position + 1 for position, index in enumerate(by_score)}
    blended = {
        retrieval[i]: 2.0 / (60 + i + 1) + 1.0 / (60 + rank[i]) for i in range(len(retrieval))
    }
    return sorted(blended.items(), key=lambda item: -item[1])


PASSAGES = [
    "The first programs were written on an IBM 1401 with punched cards in a basement.",
    "Bananas are rich in potassium and grow in tropical climates.",
    "Revenue by segment rose in the fourth quarter, driven by streaming subscriptions.",
    "The painter studied at the Accademia in Florence for a year.",
    "Lisp macros let programs write programs.",
    "Viaweb was sold to Yahoo in 1998.",
]


@pytest.mark.slow
def test_colbert_scorer_scores_through_colbert_ai_and_the_blend_reorders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "torch_extensions"))
    import torch

    from citerag.retrieve.rerank import ColbertScorer

    # A BERT backbone folder (the bundled MiniLM, no download) is a valid colbert-ai checkpoint
    # whose projection is untrained: the scores come from the real ColBERT code path but mean
    # nothing, so the test checks what the reranker does with them, not which passage wins.
    torch.manual_seed(0)
    scorer = ColbertScorer(str(default_model_path()))
    query = question("What computer did the author first program on?", unit(1, 0))
    nodes = {str(i): chunk(str(i), text) for i, text in enumerate(PASSAGES)}

    first = scorer.score(query, [NodeWithScore(node=n, score=0.0) for n in nodes.values()])
    assert len(first) == len(nodes)
    assert all(np.isfinite(first))
    assert len({round(s, 6) for s in first}) == len(first), f"scores do not differ: {first}"

    # A retrieval order the scorer disagrees with: its last choice first, its first choice
    # second, so a working reranker must lift the second candidate over the first.
    by_score = [key for _, key in sorted(zip(first, nodes, strict=True), reverse=True)]
    retrieval = [by_score[-1], by_score[0], *by_score[1:-1]]
    candidates = [
        NodeWithScore(node=nodes[key], score=1.0 - i / 10) for i, key in enumerate(retrieval)
    ]
    scores = scorer.score(query, candidates)
    expected = blended_order(retrieval, scores)
    assert [key for key, _ in expected] != retrieval, "the blend should change this order"
    assert expected[0][0] == by_score[0]

    kept = RerankPostprocessor(scorer, top_n=4).postprocess_nodes(candidates, query_bundle=query)

    assert ids(kept) == [key for key, _ in expected][:4]
    assert [n.score for n in kept] == pytest.approx([score for _, score in expected][:4])

    unchanged = RerankPostprocessor(None, top_n=len(candidates)).postprocess_nodes(
        candidates, query_bundle=query
    )
    assert ids(unchanged) == retrieval
    assert [n.score for n in unchanged] == [n.score for n in candidates]


def test_colbert_checkpoint_lookup_explains_what_is_missing(tmp_path: Path) -> None:
    found, reason = find_colbert_checkpoint(str(tmp_path / "nope"))
    assert found is None and "COLBERT_CHECKPOINT" in reason
    found, reason = find_colbert_checkpoint(str(tmp_path))
    assert found == str(tmp_path)


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    return Embedder()


@pytest.mark.slow  # loads MiniLM
class TestMaxSimScorerContract(ScorerContract):
    @pytest.fixture
    def scorer(self, minilm: Embedder) -> MaxSimScorer:
        return MaxSimScorer(minilm)


@pytest.mark.slow  # loads MiniLM
class TestBestSentenceScorerContract(ScorerContract):
    @pytest.fixture
    def question(self, minilm: Embedder) -> QueryBundle:
        return QueryBundle(QUESTION, embedding=[float(v) for v in minilm.embed([QUESTION])[0]])

    @pytest.fixture
    def scorer(self, minilm: Embedder) -> BestSentenceScorer:
        stored = {f"c{i}": minilm.embed([text]) for i, text in enumerate(TEXTS)}
        return BestSentenceScorer(lambda ids: {i: stored[i] for i in ids if i in stored})


class TestColbertScorerContract(ScorerContract):
    @pytest.fixture
    def scorer(self) -> ColbertScorer:
        checkpoint, reason = find_colbert_checkpoint("")
        if checkpoint is None:
            pytest.skip(f"ColBERT needs trained weights: {reason}")
        return ColbertScorer(checkpoint)
