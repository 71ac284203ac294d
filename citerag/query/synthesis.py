"""One answer from every sub-question's sources: one citation numbering, sources deduplicated,
neighbours added where a highlight sits at a chunk edge, at most the answer's budget of sources
(`--top-k`) shared fairly between sub-questions and listed best first (`query.budget`).

Offline the extractive answer is grouped per sub-question; with an LLM one call sees every source
in reading order (document, page) under its citation number (text, page and section only:
enrichment lists and boxes never reach the prompt) and the list of sub-questions.
`metadata.subQuestions` lists each sub-question with its tool, filters, notes and the [N] it
produced.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.base.response.schema import Response
from llama_index.core.schema import NodeWithScore, QueryBundle

from citerag.answer.citations import normalize_citations
from citerag.answer.compose import extractive_from_nodes
from citerag.answer.contract import AnswerMetadata, in_reading_order, sources_from_nodes
from citerag.plan.filters import SubQuestionFilters
from citerag.query.budget import fair_share
from citerag.retrieve.filters import matches
from citerag.retrieve.postprocessors import NeighbourExpansion
from citerag.retrieve.rerank import RerankPostprocessor
from citerag.tools.context import ToolContext, ToolResult, postprocess

EXTRACTIVE_MODEL = "extractive (no LLM configured)"


@dataclass
class SubAnswer:
    question: str
    tool: str
    filters: SubQuestionFilters
    result: ToolResult | None
    error: str = ""

    @property
    def nodes(self) -> list[NodeWithScore]:
        return self.result.nodes if self.result else []


def synthesize(
    question: str,
    parts: Sequence[SubAnswer],
    context: ToolContext,
    started: float,
    planner: str = "offline",
) -> Response:
    for part in parts:
        if part.result is not None:
            part.result.nodes = _with_neighbours(part, context)
    merged = merge_nodes(parts, context.budget)
    numbers = citation_numbers(parts, merged)
    text, model, tokens = _compose(question, parts, merged, numbers, context.factory.answerer)
    metadata = AnswerMetadata(
        processing_time_ms=round((time.perf_counter() - started) * 1000),
        model=model,
        tokens_used=tokens,
        retrieval_method=_method(parts),
        num_chunks_retrieved=sum(p.result.retrieved for p in parts if p.result),
        reranked=_reranked(context),
        sub_questions=[_entry(p, numbers[i], planner) for i, p in enumerate(parts)],
    )
    return Response(response=text, source_nodes=merged, metadata={"answer": metadata})


def merge_nodes(parts: Sequence[SubAnswer], budget: int) -> list[NodeWithScore]:
    """At most `budget` sources over every sub-question, shared fairly, best first."""
    return fair_share([part.nodes for part in parts], budget)


def citation_numbers(
    parts: Sequence[SubAnswer], merged: Sequence[NodeWithScore]
) -> list[list[int]]:
    """Each sub-question's citation numbers among the sources kept."""
    number = {scored.node.node_id: i for i, scored in enumerate(merged, start=1)}
    return [
        sorted({number[n.node.node_id] for n in part.nodes if n.node.node_id in number})
        for part in parts
    ]


def _with_neighbours(part: SubAnswer, context: ToolContext) -> list[NodeWithScore]:
    """The part's nodes with edge neighbours added, unless a hard filter holds the part to
    chunks that carry a value (a neighbour need not carry it)."""
    nodes = part.nodes
    if part.result is not None and part.result.notes.get("hardFilterChunks"):
        return nodes
    expanded = NeighbourExpansion(context.chunks).postprocess_nodes(nodes)
    present = {n.node.node_id for n in nodes}
    places = context.state.places
    allowed = {
        n.node.node_id
        for n in expanded
        if n.node.node_id in places and matches(places[n.node.node_id], context.base_filters)
    }
    expanded = [n for n in expanded if n.node.node_id in present or n.node.node_id in allowed]
    added = [n for n in expanded if n.node.node_id not in present]
    if not added:
        return nodes
    query = QueryBundle(part.question)
    highlighted = {n.node.node_id: n for n in postprocess(added, query, context.highlight_only())}
    return [highlighted.get(n.node.node_id, n) for n in expanded]


def _compose(
    question: str,
    parts: Sequence[SubAnswer],
    merged: Sequence[NodeWithScore],
    numbers: Sequence[Sequence[int]],
    answerer: Any | None,
) -> tuple[str, str, int]:
    sources = sources_from_nodes(merged)
    if answerer is not None and sources:
        result = answerer.answer(_llm_question(question, parts), in_reading_order(sources))
        return normalize_citations(result.text, sources), result.model, result.tokens_used
    if len(parts) == 1:
        return _extractive(parts[0].question, merged, numbers[0]), EXTRACTIVE_MODEL, 0
    blocks = [
        f"{part.question}\n{_extractive(part.question, merged, numbers[i])}"
        for i, part in enumerate(parts)
    ]
    return "\n\n".join(blocks), EXTRACTIVE_MODEL, 0


def _extractive(question: str, merged: Sequence[NodeWithScore], numbers: Sequence[int]) -> str:
    """The numbered sources' table answer or best highlighted sentences (as `CitedQueryEngine`)."""
    return extractive_from_nodes(question, [(number, merged[number - 1]) for number in numbers])


def _llm_question(question: str, parts: Sequence[SubAnswer]) -> str:
    if len(parts) < 2:
        return question
    listed = "\n".join(f"{i}. {p.question}" for i, p in enumerate(parts, start=1))
    return f"{question}\n\nAnswer each part in turn:\n{listed}"


def _method(parts: Sequence[SubAnswer]) -> str:
    tools = {p.tool for p in parts}
    return "hybrid" if tools == {"facts"} and len(parts) == 1 else "sub-questions"


def _reranked(context: ToolContext) -> bool:
    return any(
        isinstance(p, RerankPostprocessor) and p.name != "none" for p in context.postprocessors()
    )


def _entry(part: SubAnswer, numbers: Sequence[int], planner: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "question": part.question,
        "tool": part.tool,
        "filters": part.filters.to_dict(),
        "citations": list(numbers),
        "planner": planner,
    }
    if part.result is not None and part.result.notes:
        entry["notes"] = part.result.notes
    if part.error:
        entry["error"] = part.error
    return entry
