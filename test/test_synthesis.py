"""Synthesis across sub-questions: one numbering, repeats merged, page order, grouped answer."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from llama_index.core.schema import NodeWithScore

from citerag.nodes import HIGHLIGHTS, chunk_node
from citerag.plan.filters import SubQuestionFilters
from citerag.query.synthesis import SubAnswer, synthesize
from citerag.tools.base import ToolResult


def scored(page: int, sentence: str, score: float) -> NodeWithScore:
    text = f"{sentence} Other words follow here."
    node = chunk_node(
        node_id=f"c{page}",
        doc_id="d",
        doc_name="d.pdf",
        page=page,
        chunk_index=page,
        text=text,
        start=0,
        sentences=[(0, len(sentence)), (len(sentence) + 1, len(text))],
    )
    node.metadata[HIGHLIGHTS] = [
        {
            "text": sentence,
            "startOffset": 0,
            "endOffset": len(sentence),
            "score": score,
            "sentence": 1,
        }
    ]
    return NodeWithScore(node=node, score=score)


class FakeContext:
    """What synthesis reads of a ToolContext: the answerer and the postprocessors."""

    factory = SimpleNamespace(answerer=None)
    state = SimpleNamespace(places={})
    base_filters = None

    def chunks(self, ids: Any) -> list[Any]:
        return []

    def postprocessors(self) -> list[Any]:
        return []

    def highlight_only(self) -> list[Any]:
        return []


def part(question: str, nodes: list[NodeWithScore], years: list[str]) -> SubAnswer:
    return SubAnswer(question, "facts", SubQuestionFilters(years=years), ToolResult(nodes, 9))


def test_one_numbering_in_page_order_with_citations_per_sub_question() -> None:
    first = part(
        "What happened in 1996?",
        [
            scored(3, "Viaweb opened for business in 1996.", 0.9),
            scored(1, "In 1996 he was painting in Florence.", 0.5),
        ],
        ["1996"],
    )
    second = part(
        "What happened in 2019?",
        [
            scored(1, "In 1996 he was painting in Florence.", 0.4),
            scored(2, "In 2019 he wrote Bel in Arc.", 0.8),
        ],
        ["2019"],
    )
    response = synthesize(
        "What happened in 1996 and 2019?", [first, second], FakeContext(), time.perf_counter()
    )  # type: ignore[arg-type]
    assert [n.node.metadata["page"] for n in response.source_nodes] == [1, 2, 3]
    entries = response.metadata["answer"].sub_questions  # type: ignore[index]
    assert [e["citations"] for e in entries] == [[1, 3], [1, 2]]
    assert entries[0]["filters"] == {"years": ["1996"]} and entries[0]["tool"] == "facts"
    blocks = str(response.response).split("\n\n")
    assert blocks[0].startswith("What happened in 1996?\n")
    assert "Viaweb opened for business in 1996. [3]" in blocks[0]
    assert "In 2019 he wrote Bel in Arc. [2]" in blocks[1]
    assert response.metadata["answer"].num_chunks_retrieved == 18  # type: ignore[index]


def test_a_single_sub_question_keeps_rank_order_and_a_plain_answer() -> None:
    only = part(
        "What happened?", [scored(3, "Late event.", 0.9), scored(1, "Early event.", 0.5)], []
    )
    response = synthesize("What happened?", [only], FakeContext(), time.perf_counter())  # type: ignore[arg-type]
    assert [n.node.metadata["page"] for n in response.source_nodes] == [3, 1]
    assert "\n\n" not in str(response.response)
    assert response.metadata["answer"].retrieval_method == "hybrid"  # type: ignore[index]


def test_a_failed_sub_question_is_reported_not_dropped() -> None:
    good = part("What happened in 2019?", [scored(2, "In 2019 he wrote Bel in Arc.", 0.8)], [])
    failed = SubAnswer(
        "Show Figure 9", "pages", SubQuestionFilters(labels=["figure:9"]), None, "boom"
    )
    response = synthesize("q", [good, failed], FakeContext(), time.perf_counter())  # type: ignore[arg-type]
    entries = response.metadata["answer"].sub_questions  # type: ignore[index]
    assert entries[1]["error"] == "boom" and entries[1]["citations"] == []
    assert len(response.source_nodes) == 1
