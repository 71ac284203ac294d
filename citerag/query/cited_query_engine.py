"""The query path as a LlamaIndex query engine: retrieve → postprocess → cited answer.

`CitedQueryEngine.query()` returns a LlamaIndex `Response` whose `source_nodes` carry their
highlights; `answer_from_response` turns it into the answer contract. It is LlamaIndex's
`RetrieverQueryEngine` shape (retriever, node postprocessors, response synthesizer) with the
project's synthesizer (`answer.synthesizer.CitedSynthesizer`: extractive offline, `[N]`
citations), and it reports how many candidates the retriever found before postprocessing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import RESPONSE_TYPE
from llama_index.core.callbacks import CallbackManager
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from citerag.answer.synthesizer import CitedSynthesizer, answer_from_response
from citerag.plan.limits import checked_question
from citerag.retrieve.rerank import RerankPostprocessor

__all__ = ["CitedQueryEngine", "answer_from_response"]


class CitedQueryEngine(BaseQueryEngine):
    def __init__(
        self,
        retriever: BaseRetriever,
        postprocessors: Sequence[BaseNodePostprocessor] = (),
        synthesizer: CitedSynthesizer | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        self._retriever = retriever
        self._postprocessors = list(postprocessors)
        self._synthesizer = synthesizer or CitedSynthesizer()

    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._postprocess(self._retriever.retrieve(query_bundle), query_bundle)

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        started = time.perf_counter()
        query_bundle.query_str = checked_question(query_bundle.query_str)
        retrieved = self._retriever.retrieve(query_bundle)
        nodes = self._postprocess(retrieved, query_bundle)
        return self._synthesizer.synthesize(
            query_bundle, nodes, retrieved=len(retrieved), started=started, reranked=self._reranks()
        )

    def _reranks(self) -> bool:
        return any(
            isinstance(p, RerankPostprocessor) and p.name != "none" for p in self._postprocessors
        )

    def _postprocess(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle
    ) -> list[NodeWithScore]:
        for postprocessor in self._postprocessors:
            nodes = postprocessor.postprocess_nodes(nodes, query_bundle=query_bundle)
        return nodes

    def _get_prompt_modules(self) -> dict[str, Any]:
        return {}

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        return self._query(query_bundle)
