"""The answer step as a LlamaIndex response synthesizer: sources in, one cited answer out.

Tools and retrievers gather sources; `CitedSynthesizer` composes above them. One numbering over
every sub-question's sources, repeats merged, at most the answer's budget of sources (`--top-k`)
shared fairly between sub-questions and listed best first (`answer.budget`).

Offline the extractive answer is grouped per sub-question; with an LLM one call sees every source
in reading order (document, page) under its citation number (text, page and section only:
enrichment lists and boxes never reach the prompt) and the list of sub-questions.
`metadata.subQuestions` lists each sub-question with its tool, filters, notes and the [N] it
produced. LlamaIndex's own synthesizers need an LLM and number no citations, hence this one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from llama_index.core.base.response.schema import Response
from llama_index.core.llms import MockLLM
from llama_index.core.response_synthesizers.base import BaseSynthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType, TextNode

from citerag.answer.budget import fair_share
from citerag.answer.citations import normalize_citations
from citerag.answer.compose import extractive_from_nodes
from citerag.answer.contract import (
    AnswerMetadata,
    AnswerResult,
    Source,
    in_reading_order,
    sources_from_nodes,
)
from citerag.answer.llm_answer import LLMResult
from citerag.answer.prompts import ContextSource
from citerag.nodes import ROUTED_BY
from citerag.plan.question_filters import SubQuestionFilters

EXTRACTIVE_MODEL = "extractive (no LLM configured)"
DEFAULT_BUDGET = 10


class Answerer(Protocol):
    """Writes a cited answer from numbered sources (`answer.llm_answer.LLMAnswerer`)."""

    def answer(self, question: str, sources: Sequence[ContextSource]) -> LLMResult: ...


@dataclass
class ToolResult:
    """What a tool returns: its sources, its candidates before reranking, and what it resolved
    (reported in the metadata)."""

    nodes: list[NodeWithScore]
    retrieved: int
    notes: dict[str, Any] = field(default_factory=dict)


@dataclass
class SubAnswer:
    """A sub-question, the tool it went to, its filters and what the tool returned."""

    question: str
    tool: str
    filters: SubQuestionFilters
    result: ToolResult | None
    error: str = ""

    @property
    def nodes(self) -> list[NodeWithScore]:
        return self.result.nodes if self.result else []


class CitedSynthesizer(BaseSynthesizer):
    """One cited answer from sources: by the answerer (an LLM) when one is given, extractive
    (the sources' table answer or best highlighted sentences) otherwise."""

    def __init__(
        self,
        answerer: Answerer | None = None,
        budget: int = DEFAULT_BUDGET,
        reranked: bool = False,
        planner: str = "offline",
    ) -> None:
        # The answerer writes the answer, not BaseSynthesizer's LLM; MockLLM keeps LlamaIndex
        # from resolving its default (a hosted model) when none is configured.
        super().__init__(llm=MockLLM())
        self._answerer = answerer
        self._budget = budget
        self._reranked = reranked
        self._planner = planner

    def synthesize(
        self,
        query: QueryType,
        nodes: list[NodeWithScore],
        additional_source_nodes: Sequence[NodeWithScore] | None = None,
        **response_kwargs: Any,
    ) -> Response:
        """The answer from one ranking's sources as given (no budget, no sub-questions).
        `retrieved`: the candidates before postprocessing; `started`: perf_counter at the
        question's start; `reranked`: whether a scorer reordered them (default: as built);
        `retrieval_method`: what found the sources (default "hybrid"; tree mode: "tree")."""
        question = query.query_str if isinstance(query, QueryBundle) else str(query)
        started = float(response_kwargs.get("started", time.perf_counter()))
        retrieved = int(response_kwargs.get("retrieved", len(nodes)))
        text, model, tokens = self._compose(question, nodes)
        metadata = AnswerMetadata(
            processing_time_ms=_elapsed_ms(started),
            model=model,
            tokens_used=tokens,
            retrieval_method=str(response_kwargs.get("retrieval_method", "hybrid")),
            num_chunks_retrieved=retrieved,
            reranked=bool(response_kwargs.get("reranked", self._reranked)) and retrieved > 1,
            document_routing=routed_by(nodes),
        )
        return Response(response=text, source_nodes=nodes, metadata={"answer": metadata})

    def synthesize_parts(
        self, question: str, parts: Sequence[SubAnswer], started: float
    ) -> Response:
        """One answer over every sub-question's sources, within the budget."""
        merged = fair_share([part.nodes for part in parts], self._budget)
        numbers = citation_numbers(parts, merged)
        text, model, tokens = self._compose_parts(question, parts, merged, numbers)
        metadata = AnswerMetadata(
            processing_time_ms=_elapsed_ms(started),
            model=model,
            tokens_used=tokens,
            retrieval_method=_method(parts),
            num_chunks_retrieved=sum(p.result.retrieved for p in parts if p.result),
            reranked=self._reranked,
            sub_questions=[_entry(p, numbers[i], self._planner) for i, p in enumerate(parts)],
            document_routing=routed_by(merged),
        )
        return Response(response=text, source_nodes=merged, metadata={"answer": metadata})

    def get_response(
        self, query_str: str, text_chunks: Sequence[str], **response_kwargs: Any
    ) -> str:
        """The answer text from plain text chunks, numbered in the order given."""
        nodes = [NodeWithScore(node=TextNode(text=text), score=1.0) for text in text_chunks]
        return self._compose(query_str, nodes)[0]

    async def aget_response(
        self, query_str: str, text_chunks: Sequence[str], **response_kwargs: Any
    ) -> str:
        return self.get_response(query_str, text_chunks, **response_kwargs)

    def _get_prompts(self) -> dict[str, Any]:
        return {}

    def _update_prompts(self, prompts: dict[str, Any]) -> None:
        return None

    def _compose(self, question: str, nodes: Sequence[NodeWithScore]) -> tuple[str, str, int]:
        sources = sources_from_nodes(nodes)
        if self._answerer is not None and sources:
            return self._llm_answer(question, sources)
        numbered = [(s.citation_number, n) for s, n in zip(sources, nodes, strict=True)]
        return extractive_from_nodes(question, numbered), EXTRACTIVE_MODEL, 0

    def _compose_parts(
        self,
        question: str,
        parts: Sequence[SubAnswer],
        merged: Sequence[NodeWithScore],
        numbers: Sequence[Sequence[int]],
    ) -> tuple[str, str, int]:
        sources = sources_from_nodes(merged)
        if self._answerer is not None and sources:
            return self._llm_answer(_llm_question(question, parts), sources)
        if len(parts) == 1:
            return _extractive(parts[0].question, merged, numbers[0]), EXTRACTIVE_MODEL, 0
        blocks = [
            f"{part.question}\n{_extractive(part.question, merged, numbers[i])}"
            for i, part in enumerate(parts)
        ]
        return "\n\n".join(blocks), EXTRACTIVE_MODEL, 0

    def _llm_answer(self, question: str, sources: Sequence[Source]) -> tuple[str, str, int]:
        assert self._answerer is not None
        result = self._answerer.answer(question, in_reading_order(sources))
        return normalize_citations(result.text, sources), result.model, result.tokens_used


def answer_from_response(response: Response) -> AnswerResult:
    """The answer contract of a response this synthesizer made."""
    metadata = (response.metadata or {}).get("answer") or AnswerMetadata()
    return AnswerResult(
        answer=str(response.response or ""),
        sources=sources_from_nodes(response.source_nodes),
        metadata=metadata,
    )


def citation_numbers(
    parts: Sequence[SubAnswer], merged: Sequence[NodeWithScore]
) -> list[list[int]]:
    """Each sub-question's citation numbers among the sources kept."""
    number = {scored.node.node_id: i for i, scored in enumerate(merged, start=1)}
    return [
        sorted({number[n.node.node_id] for n in part.nodes if n.node.node_id in number})
        for part in parts
    ]


def routed_by(nodes: Sequence[NodeWithScore]) -> list[str]:
    """Why retrieval searched the sources' documents first, each reason once, in source order
    (`citerag.retrieve.routing`)."""
    reasons = (str(n.node.metadata.get(ROUTED_BY, "")) for n in nodes)
    return list(dict.fromkeys(r for r in reasons if r))


def _elapsed_ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def _extractive(question: str, merged: Sequence[NodeWithScore], numbers: Sequence[int]) -> str:
    """The numbered sources' table answer or best highlighted sentences."""
    return extractive_from_nodes(question, [(number, merged[number - 1]) for number in numbers])


def _llm_question(question: str, parts: Sequence[SubAnswer]) -> str:
    if len(parts) < 2:
        return question
    listed = "\n".join(f"{i}. {p.question}" for i, p in enumerate(parts, start=1))
    return f"{question}\n\nAnswer each part in turn:\n{listed}"


def _method(parts: Sequence[SubAnswer]) -> str:
    tools = {p.tool for p in parts}
    return "hybrid" if tools == {"facts"} and len(parts) == 1 else "sub-questions"


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
