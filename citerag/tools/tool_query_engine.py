"""The base of every tool's query engine.

A tool is a LlamaIndex query engine (so a `QueryEngineTool` can hold it) that also answers
`filters_for(question)` and `sources_for(query, filters)`: the sub-question engine uses those
two to run the tool's retrieval with the sub-question's own filters and to report them, and to
number every tool's sources once (`Response.source_nodes` of a single tool call are numbered
on their own). A tool gathers sources; the answer step (`answer.synthesizer`) composes above it.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import RESPONSE_TYPE, Response
from llama_index.core.schema import NodeWithScore, QueryBundle

from citerag.answer.contract import AnswerMetadata
from citerag.answer.synthesizer import SubAnswer
from citerag.plan.limits import checked_question
from citerag.plan.question_filters import SubQuestionFilters, filters_for
from citerag.tools.context import ToolContext, ToolResult, postprocess

__all__ = ["ToolContext", "ToolQueryEngine", "ToolResult", "empty_response", "postprocess"]


class ToolQueryEngine(BaseQueryEngine):
    """A tool's query engine; subclasses implement `sources_for` and declare `name` and
    `description`."""

    name: ClassVar[str] = "tool"
    # What the LLM planner reads to route sub-questions to the tool: editing it changes
    # routing, so it is declared apart from the docstring, which is free to change.
    description: ClassVar[str] = ""

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        if not cls.description:
            raise TypeError(f"{cls.__name__} declares no `description` for the planner.")

    def __init__(self, context: ToolContext) -> None:
        super().__init__(callback_manager=None)
        self.context = context

    def filters_for(self, question: str) -> SubQuestionFilters:
        return filters_for(question, self.context.entity_mentions)

    def sources_for(self, query: QueryBundle, filters: SubQuestionFilters) -> ToolResult:
        raise NotImplementedError

    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.sources_for(query_bundle, self.filters_for(query_bundle.query_str)).nodes

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        started = time.perf_counter()
        question = checked_question(query_bundle.query_str)
        filters = self.filters_for(question)
        result = self.sources_for(QueryBundle(question), filters)
        part = SubAnswer(question, self.name, filters, result)
        return self.context.answer(question, [part], started)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        return self._query(query_bundle)

    def _get_prompt_modules(self) -> dict[str, Any]:
        return {}


def empty_response(metadata: AnswerMetadata, text: str) -> Response:
    return Response(response=text, source_nodes=[], metadata={"answer": metadata})
