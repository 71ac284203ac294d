"""The query path's node postprocessors on hand-built chunk nodes (no model, no store)."""

from __future__ import annotations

import copy
from collections.abc import Sequence

import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from citerag.nodes import HIGHLIGHTS, chunk_node, link_neighbours
from citerag.retrieve.postprocessors import (
    HighlightPostprocessor,
    NeighbourExpansion,
    PageOrderPostprocessor,
    highlights_of,
)
from citerag.retrieve.rerank import BLEND_K, RETRIEVAL_WEIGHT, RerankPostprocessor


def node_from_sentences(
    node_id: str,
    sentences: Sequence[str],
    *,
    page: int = 1,
    start: int = 0,
    doc_name: str = "report.pdf",
    chunk_index: int = 0,
) -> TextNode:
    """A chunk node whose sentence spans are those of the given sentences, joined by a space."""
    spans, offset = [], 0
    for sentence in sentences:
        spans.append((offset, offset + len(sentence)))
        offset += len(sentence) + 1
    return chunk_node(
        node_id=node_id,
        doc_id=f"doc-{doc_name}",
        doc_name=doc_name,
        page=page,
        chunk_index=chunk_index,
        text=" ".join(sentences),
        start=start,
        sentences=spans,
    )


def scored(*nodes: TextNode) -> list[NodeWithScore]:
    return [NodeWithScore(node=n, score=1.0 - i / 10) for i, n in enumerate(nodes)]


def ids(nodes: Sequence[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


# --- HighlightPostprocessor ------------------------------------------------------------------

REVENUE_NODE = [
    "The company was founded in 1998 in Seattle.",
    "Revenue grew to 4.2 billion dollars in fiscal 2023.",
    "The board met four times during the year.",
]


def test_highlights_by_terms_mark_the_sentence_holding_the_question_terms() -> None:
    node = node_from_sentences("n1", REVENUE_NODE)
    question = QueryBundle("How much revenue in fiscal 2023?")

    [result] = HighlightPostprocessor(None).postprocess_nodes(scored(node), query_bundle=question)

    highlights = highlights_of(result.node)  # type: ignore[arg-type]
    assert [h["text"] for h in highlights] == [REVENUE_NODE[1]]
    [highlight] = highlights
    content = result.node.get_content()
    assert content[highlight["startOffset"] : highlight["endOffset"]] == highlight["text"]
    assert highlight["sentence"] == 1
    assert highlight["score"] > 0
    assert result.score == 1.0


def test_highlighting_never_changes_the_input_node() -> None:
    node = node_from_sentences("n1", REVENUE_NODE)
    before = copy.deepcopy(node.metadata)
    inputs = scored(node)

    outputs = HighlightPostprocessor(None).postprocess_nodes(
        inputs, query_bundle=QueryBundle("revenue in fiscal 2023")
    )

    assert node.metadata == before and HIGHLIGHTS not in node.metadata
    assert inputs[0].node is node
    assert outputs[0].node is not node
    assert highlights_of(outputs[0].node)  # type: ignore[arg-type]


def test_highlights_respect_per_node_and_need_a_question() -> None:
    node = node_from_sentences("n1", REVENUE_NODE)
    [none] = HighlightPostprocessor(None, per_node=0).postprocess_nodes(
        scored(node), query_bundle=QueryBundle("revenue")
    )
    assert highlights_of(none.node) == []  # type: ignore[arg-type]
    # Without a question there is nothing to highlight: the nodes pass through.
    inputs = scored(node)
    assert HighlightPostprocessor(None).postprocess_nodes(inputs) == inputs


# --- PageOrderPostprocessor ------------------------------------------------------------------


def test_page_order_sorts_by_document_page_and_offset() -> None:
    b_p1 = node_from_sentences("b-p1", ["B one."], doc_name="b.pdf", page=1)
    a_p2_late = node_from_sentences(
        "a-p2-late", ["A two late."], doc_name="a.pdf", page=2, start=500
    )
    a_p2_early = node_from_sentences(
        "a-p2-early", ["A two early."], doc_name="a.pdf", page=2, start=10
    )
    a_p10 = node_from_sentences("a-p10", ["A ten."], doc_name="a.pdf", page=10)
    a_p1 = node_from_sentences("a-p1", ["A one."], doc_name="a.pdf", page=1, start=300)
    nodes = scored(b_p1, a_p2_late, a_p10, a_p2_early, a_p1)

    ordered = PageOrderPostprocessor().postprocess_nodes(nodes)

    assert ids(ordered) == ["a-p1", "a-p2-early", "a-p2-late", "a-p10", "b-p1"]


def test_page_order_drops_repeated_ids_keeping_the_first() -> None:
    first = node_from_sentences("x", ["Same chunk."], page=3)
    other = node_from_sentences("y", ["Another chunk."], page=1)
    nodes = [
        NodeWithScore(node=first, score=0.9),
        NodeWithScore(node=other, score=0.5),
        NodeWithScore(node=first, score=0.1),
    ]

    ordered = PageOrderPostprocessor().postprocess_nodes(nodes)

    assert ids(ordered) == ["y", "x"]
    assert ordered[1].score == 0.9


# --- NeighbourExpansion ----------------------------------------------------------------------

CHAIN = [
    ["The plan was approved in March.", "Work began soon after.", "Budget was set early."],
    [
        "The team hired three engineers.",
        "They built the parser first.",
        "The total cost of the project was",
    ],
    ["twelve million dollars in the end.", "It shipped in June.", "Users liked it."],
]


@pytest.fixture
def chain() -> list[TextNode]:
    nodes = [
        node_from_sentences(f"c{i}", sentences, page=1, start=i * 200, chunk_index=i)
        for i, sentences in enumerate(CHAIN)
    ]
    link_neighbours(nodes)
    return nodes


def lookup_in(nodes: Sequence[TextNode]) -> tuple[list[list[str]], object]:
    by_id = {n.node_id: n for n in nodes}
    calls: list[list[str]] = []

    def lookup(wanted: Sequence[str]) -> list[TextNode]:
        calls.append(list(wanted))
        return [by_id[i] for i in wanted if i in by_id]

    return calls, lookup


def highlighted(node: TextNode, question: str) -> list[NodeWithScore]:
    return HighlightPostprocessor(None, per_node=1).postprocess_nodes(
        [NodeWithScore(node=node, score=0.8)], query_bundle=QueryBundle(question)
    )


def test_a_highlight_on_the_last_sentence_brings_the_next_chunk(chain: list[TextNode]) -> None:
    nodes = highlighted(chain[1], "What was the total cost of the project?")
    assert highlights_of(nodes[0].node)[0]["sentence"] == 2  # type: ignore[arg-type]
    calls, lookup = lookup_in(chain)

    expanded = NeighbourExpansion(lookup).postprocess_nodes(nodes)  # type: ignore[arg-type]

    assert ids(expanded) == ["c1", "c2"]
    assert calls == [["c2"]]
    assert expanded[1].score == pytest.approx(0.8 * 0.999)
    assert expanded[1].score < expanded[0].score  # type: ignore[operator]


def test_a_highlight_on_the_first_sentence_brings_the_previous_chunk(
    chain: list[TextNode],
) -> None:
    nodes = highlighted(chain[1], "How many engineers did the team hire?")
    assert highlights_of(nodes[0].node)[0]["sentence"] == 0  # type: ignore[arg-type]
    _, lookup = lookup_in(chain)

    assert ids(NeighbourExpansion(lookup).postprocess_nodes(nodes)) == ["c1", "c0"]  # type: ignore[arg-type]


def test_a_highlight_in_the_middle_adds_nothing(chain: list[TextNode]) -> None:
    nodes = highlighted(chain[1], "Which component did they build first, the parser?")
    assert highlights_of(nodes[0].node)[0]["sentence"] == 1  # type: ignore[arg-type]
    calls, lookup = lookup_in(chain)

    expanded = NeighbourExpansion(lookup).postprocess_nodes(nodes)  # type: ignore[arg-type]

    assert ids(expanded) == ["c1"]
    assert calls == []


def test_a_neighbour_already_present_or_beyond_the_limit_is_not_added(
    chain: list[TextNode],
) -> None:
    nodes = highlighted(chain[1], "What was the total cost of the project?")
    _, lookup = lookup_in(chain)
    present = [*nodes, NodeWithScore(node=chain[2], score=0.1)]

    assert ids(NeighbourExpansion(lookup).postprocess_nodes(present)) == ["c1", "c2"]  # type: ignore[arg-type]
    assert ids(NeighbourExpansion(lookup, max_added=0).postprocess_nodes(nodes)) == ["c1"]  # type: ignore[arg-type]


# --- RerankPostprocessor ---------------------------------------------------------------------


class FakeScorer:
    """Scores nodes by a fixed table (what a cross-encoder would have said)."""

    name = "fake"

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.calls = 0

    def score(self, query: QueryBundle, nodes: Sequence[NodeWithScore]) -> list[float]:
        self.calls += 1
        return [self.scores[n.node.node_id] for n in nodes]


def candidates(count: int) -> list[NodeWithScore]:
    return scored(*(node_from_sentences(f"n{i}", [f"Chunk {i}."]) for i in range(count)))


def test_without_a_scorer_the_fused_order_is_kept_and_cut_to_top_n() -> None:
    nodes = candidates(6)
    reranker = RerankPostprocessor(None, top_n=4)

    kept = reranker.postprocess_nodes(nodes, query_bundle=QueryBundle("q"))

    assert reranker.name == "none"
    assert ids(kept) == ["n0", "n1", "n2", "n3"]
    assert [n.score for n in kept] == [n.score for n in nodes[:4]]


def expected_blend(retrieval: list[str], scores: dict[str, float]) -> list[str]:
    by_scorer = sorted(retrieval, key=lambda i: -scores[i])
    blended = {
        node_id: RETRIEVAL_WEIGHT / (BLEND_K + retrieval.index(node_id) + 1)
        + 1.0 / (BLEND_K + by_scorer.index(node_id) + 1)
        for node_id in retrieval
    }
    return sorted(retrieval, key=lambda i: -blended[i])


def test_a_scorer_reorders_by_the_blend_with_retrieval_order() -> None:
    nodes = candidates(10)
    # The scorer puts n1 first and n0 last; the others keep their order.
    table = {f"n{i}": 1.0 - i / 10 for i in range(10)}
    table["n1"], table["n0"] = 5.0, -5.0
    scorer = FakeScorer(table)
    reranker = RerankPostprocessor(scorer, top_n=5)

    kept = reranker.postprocess_nodes(nodes, query_bundle=QueryBundle("q"))

    assert reranker.name == "fake" and scorer.calls == 1
    assert ids(kept) == expected_blend(ids(nodes), table)[:5]
    assert ids(kept)[0] == "n1"  # scorer's first beats retrieval's first, which it ranks last
    scores = [n.score for n in kept]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]


def test_a_scorer_alone_cannot_overturn_a_strong_retrieval_order() -> None:
    nodes = candidates(3)
    table = {"n0": 0.0, "n1": 0.5, "n2": 1.0}  # exactly reversed

    kept = RerankPostprocessor(FakeScorer(table), top_n=3).postprocess_nodes(
        nodes, query_bundle=QueryBundle("q")
    )

    assert ids(kept) == expected_blend(ids(nodes), table) == ["n0", "n1", "n2"]


def test_a_single_candidate_is_not_scored() -> None:
    scorer = FakeScorer({"n0": 1.0})
    kept = RerankPostprocessor(scorer, top_n=3).postprocess_nodes(
        candidates(1), query_bundle=QueryBundle("q")
    )
    assert ids(kept) == ["n0"] and scorer.calls == 0
