"""Synthesis across sub-questions: one numbering, repeats merged, one source budget shared
fairly and listed best first, the answerer reading in page order, grouped answer."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from llama_index.core.base.response.schema import Response
from llama_index.core.schema import NodeWithScore

from citerag.answer.synthesizer import CitedSynthesizer, SubAnswer, ToolResult
from citerag.nodes import HIGHLIGHTS, chunk_node
from citerag.plan.question_filters import SubQuestionFilters


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


def synthesize(
    question: str, parts: list[SubAnswer], budget: int = 10, answerer: Any = None
) -> Response:
    """The answer step over the parts, as the sub-question engine calls it."""
    return CitedSynthesizer(answerer, budget).synthesize_parts(question, parts, time.perf_counter())


def part(question: str, nodes: list[NodeWithScore], years: list[str]) -> SubAnswer:
    return SubAnswer(question, "facts", SubQuestionFilters(years=years), ToolResult(nodes, 9))


def test_one_numbering_best_first_with_citations_per_sub_question() -> None:
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
            scored(2, "In 2019 he wrote Bel in Arc.", 0.8),
            scored(1, "In 1996 he was painting in Florence.", 0.4),
        ],
        ["2019"],
    )
    response = synthesize("What happened in 1996 and 2019?", [first, second])
    # each sub-question's best first (by score), then the next; the shared page 1 listed once
    assert [n.node.metadata["page"] for n in response.source_nodes] == [3, 2, 1]
    entries = response.metadata["answer"].sub_questions  # type: ignore[index]
    assert [e["citations"] for e in entries] == [[1, 3], [2, 3]]
    assert entries[0]["filters"] == {"years": ["1996"]} and entries[0]["tool"] == "facts"
    blocks = str(response.response).split("\n\n")
    assert blocks[0].startswith("What happened in 1996?\n")
    assert "Viaweb opened for business in 1996. [1]" in blocks[0]
    assert "In 2019 he wrote Bel in Arc. [2]" in blocks[1]
    assert response.metadata["answer"].num_chunks_retrieved == 18  # type: ignore[index]


def ranking(first_page: int, count: int) -> list[NodeWithScore]:
    return [
        scored(page, f"Fact on page {page}.", 1.0 - (page - first_page) / 100)
        for page in range(first_page, first_page + count)
    ]


def test_the_budget_bounds_the_whole_answer_and_is_shared_fairly() -> None:
    parts = [part("First part?", ranking(1, 10), []), part("Second part?", ranking(101, 10), [])]
    response = synthesize("Both?", parts, budget=10)
    pages = [n.node.metadata["page"] for n in response.source_nodes]
    assert len(pages) == 10
    assert sorted(pages) == [1, 2, 3, 4, 5, 101, 102, 103, 104, 105]  # five best of each
    assert pages[:2] == [1, 101]  # each part's best comes first


def test_a_part_with_few_sources_leaves_its_share_to_the_others() -> None:
    parts = [part("Narrow?", ranking(1, 2), []), part("Broad?", ranking(101, 10), [])]
    response = synthesize("Both?", parts, budget=6)
    pages = sorted(n.node.metadata["page"] for n in response.source_nodes)
    assert pages == [1, 2, 101, 102, 103, 104]


def test_a_single_part_is_cut_to_the_budget_in_rank_order() -> None:
    only = part("What happened?", ranking(1, 8), [])
    response = synthesize("What happened?", [only], budget=3)
    assert [n.node.metadata["page"] for n in response.source_nodes] == [1, 2, 3]


class ReadingAnswerer:
    """Records the order it was given the sources in; cites the first one it read."""

    def __init__(self) -> None:
        self.read: list[tuple[int, int]] = []

    def answer(self, question: str, sources: Any) -> Any:
        self.read = [(s.page_number, s.citation_number) for s in sources]
        first = sources[0].citation_number
        return SimpleNamespace(text=f"It is so [{first}].", model="fake", tokens_used=1)


def test_the_answerer_reads_in_page_order_under_best_first_numbers() -> None:
    answerer = ReadingAnswerer()
    parts = [
        part("Late?", [scored(9, "Late fact.", 0.9)], []),
        part("Early?", [scored(2, "Early fact.", 0.5)], []),
    ]
    response = synthesize("Late and early?", parts, answerer=answerer)
    assert [n.node.metadata["page"] for n in response.source_nodes] == [9, 2]
    assert answerer.read == [(2, 2), (9, 1)]
    assert str(response.response) == "It is so [2]."


def test_a_single_sub_question_keeps_rank_order_and_a_plain_answer() -> None:
    only = part(
        "What happened?", [scored(3, "Late event.", 0.9), scored(1, "Early event.", 0.5)], []
    )
    response = synthesize(
        "What happened?",
        [only],
    )
    assert [n.node.metadata["page"] for n in response.source_nodes] == [3, 1]
    assert "\n\n" not in str(response.response)
    assert response.metadata["answer"].retrieval_method == "hybrid"  # type: ignore[index]


def test_a_failed_sub_question_is_reported_not_dropped() -> None:
    good = part("What happened in 2019?", [scored(2, "In 2019 he wrote Bel in Arc.", 0.8)], [])
    failed = SubAnswer(
        "Show Figure 9", "pages", SubQuestionFilters(labels=["figure:9"]), None, "boom"
    )
    response = synthesize(
        "q",
        [good, failed],
    )
    entries = response.metadata["answer"].sub_questions  # type: ignore[index]
    assert entries[1]["error"] == "boom" and entries[1]["citations"] == []
    assert len(response.source_nodes) == 1
