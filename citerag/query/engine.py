"""The query path as a LlamaIndex query engine: retrieve → postprocess → cited answer.

`CitedQueryEngine.query()` returns a LlamaIndex `Response` whose `source_nodes` carry their
highlights; `answer_from_response` turns it into the answer contract. LlamaIndex's
`RetrieverQueryEngine` answers through a response synthesizer that needs an LLM and numbers no
citations, so this engine composes the same parts with an extractive path and `[N]` citations.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import RESPONSE_TYPE, Response
from llama_index.core.callbacks import CallbackManager
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from citerag.answer.citations import normalize_citations
from citerag.answer.compose import extractive_from_nodes
from citerag.answer.contract import (
    AnswerMetadata,
    AnswerResult,
    Source,
    in_reading_order,
    sources_from_nodes,
)
from citerag.query.limits import checked_question
from citerag.retrieve.rerank import RerankPostprocessor

EXTRACTIVE_MODEL = "extractive (no LLM configured)"


class CitedQueryEngine(BaseQueryEngine):
    def __init__(
        self,
        retriever: BaseRetriever,
        postprocessors: Sequence[BaseNodePostprocessor] = (),
        answerer: Any | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        self._retriever = retriever
        self._postprocessors = list(postprocessors)
        self._answerer = answerer

    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        nodes = self._retriever.retrieve(query_bundle)
        for postprocessor in self._postprocessors:
            nodes = postprocessor.postprocess_nodes(nodes, query_bundle=query_bundle)
        return nodes

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        started = time.perf_counter()
        query_bundle.query_str = checked_question(query_bundle.query_str)
        retrieved = self._retriever.retrieve(query_bundle)
        nodes = retrieved
        for postprocessor in self._postprocessors:
            nodes = postprocessor.postprocess_nodes(nodes, query_bundle=query_bundle)
        sources = sources_from_nodes(nodes)
        text, model, tokens = self._compose(query_bundle.query_str, sources, nodes)
        metadata = AnswerMetadata(
            processing_time_ms=round((time.perf_counter() - started) * 1000),
            model=model,
            tokens_used=tokens,
            retrieval_method="hybrid",
            num_chunks_retrieved=len(retrieved),
            reranked=self._reranked(len(retrieved)),
        )
        return Response(response=text, source_nodes=nodes, metadata={"answer": metadata})

    def _get_prompt_modules(self) -> dict[str, Any]:
        return {}

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        return self._query(query_bundle)

    def _reranked(self, candidates: int) -> bool:
        return candidates > 1 and any(
            isinstance(p, RerankPostprocessor) and p.name != "none" for p in self._postprocessors
        )

    def _compose(
        self, question: str, sources: Sequence[Source], nodes: Sequence[NodeWithScore]
    ) -> tuple[str, str, int]:
        if self._answerer is not None and sources:
            result = self._answerer.answer(question, in_reading_order(sources))
            return normalize_citations(result.text, sources), result.model, result.tokens_used
        numbered = [(s.citation_number, n) for s, n in zip(sources, nodes, strict=True)]
        return extractive_from_nodes(question, numbered), EXTRACTIVE_MODEL, 0


def answer_from_response(response: Response) -> AnswerResult:
    """The answer contract of a `CitedQueryEngine` response."""
    metadata = (response.metadata or {}).get("answer") or AnswerMetadata()
    return AnswerResult(
        answer=str(response.response or ""),
        sources=sources_from_nodes(response.source_nodes),
        metadata=metadata,
    )
