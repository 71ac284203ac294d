"""The contract of `Scorer` (citerag.retrieve.rerank): every rerank scorer keeps it.

Subclass `ScorerContract` and give the class a `scorer` fixture able to score the nodes of
`candidates()` (a scorer that reads stored sentence vectors gets them from the fixture); a
scorer that needs the question's embedding overrides the `question` fixture to carry it.
"""

from __future__ import annotations

import math

import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from citerag.nodes import chunk_node
from citerag.retrieve.rerank import Scorer

QUESTION = "How much did streaming revenue grow in 2020?"
TEXTS = [
    "The board met four times and approved the audit committee charter.",
    "Streaming revenue grew 24% in 2020 to $25.0 billion as paid memberships rose.",
    "Our offices in Los Gatos are leased until 2030.",
]
RELEVANT = 1  # the index in TEXTS of the passage that answers QUESTION


def candidate(index: int, text: str) -> TextNode:
    return chunk_node(
        node_id=f"c{index}",
        doc_id="d",
        doc_name="d.pdf",
        page=index + 1,
        chunk_index=index,
        text=text,
        start=0,
        sentences=[(0, len(text))],
    )


def candidates() -> list[NodeWithScore]:
    return [NodeWithScore(node=candidate(i, t), score=0.0) for i, t in enumerate(TEXTS)]


class ScorerContract:
    @pytest.fixture
    def question(self) -> QueryBundle:
        return QueryBundle(QUESTION)

    def test_one_finite_score_per_node(self, scorer: Scorer, question: QueryBundle) -> None:
        scores = scorer.score(question, candidates())
        assert len(scores) == len(TEXTS)
        assert all(isinstance(s, float) and math.isfinite(s) for s in scores)

    def test_the_passage_about_the_question_scores_highest(
        self, scorer: Scorer, question: QueryBundle
    ) -> None:
        scores = scorer.score(question, candidates())
        assert max(range(len(scores)), key=scores.__getitem__) == RELEVANT

    def test_scores_follow_their_nodes_when_the_order_changes(
        self, scorer: Scorer, question: QueryBundle
    ) -> None:
        nodes = candidates()
        forward = scorer.score(question, nodes)
        backward = scorer.score(question, nodes[::-1])
        for again, first in zip(backward, forward[::-1], strict=True):
            assert math.isclose(again, first, rel_tol=1e-4, abs_tol=1e-5)

    def test_no_nodes_no_scores(self, scorer: Scorer, question: QueryBundle) -> None:
        assert scorer.score(question, []) == []

    def test_the_scorer_has_a_name(self, scorer: Scorer) -> None:
        assert isinstance(scorer.name, str) and scorer.name
