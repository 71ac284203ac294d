"""What every tool shares: the collection, the query factory's parts, and the tool engine base.

A tool is a LlamaIndex query engine (so a `QueryEngineTool` can hold it) that also answers
`filters_for(question)` and `sources_for(query, filters)`: the sub-question engine uses those
two to run the tool's retrieval with the sub-question's own filters and to report them, and to
number every tool's sources once (`Response.source_nodes` of a single tool call are numbered
on their own).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import RESPONSE_TYPE, Response
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import MetadataFilters

from citerag.answer.contract import AnswerMetadata
from citerag.plan.filters import SubQuestionFilters, filters_for
from citerag.query.engine import checked_question
from citerag.retrieve.collection_state import CollectionState
from citerag.store.base import DocStore
from citerag.tree.model import DocumentTree


@dataclass
class ToolContext:
    """One collection, the factory that builds retrievers and postprocessors, and options."""

    factory: Any  # citerag.query.factory.QueryFactory
    state: CollectionState
    docstore: DocStore
    top_k: int | None = None
    base_filters: MetadataFilters | None = None  # the caller's own (e.g. --pages), on every tool
    filter_scopes: dict[str, str] = field(default_factory=dict)  # overrides facts.FILTER_SCOPES
    _trees: dict[str, DocumentTree | None] = field(default_factory=dict)

    @property
    def collection(self) -> str:
        return self.state.name

    @property
    def known_entities(self) -> tuple[str, ...]:
        """The `distinct()` of stored entity values over the collection."""
        return self.state.known_entities

    def doc_ids(self) -> list[str]:
        return list(dict.fromkeys(str(p["doc_id"]) for p in self.state.places.values()))

    def tree(self, doc_id: str) -> DocumentTree | None:
        if doc_id not in self._trees:
            data = self.docstore.get_tree(self.collection, doc_id)
            self._trees[doc_id] = DocumentTree.from_record(data) if data else None
        return self._trees[doc_id]

    def chunks(self, chunk_ids: Sequence[str]) -> list[TextNode]:
        return self.docstore.get_chunks(self.collection, list(chunk_ids))

    @property
    def budget(self) -> int:
        """The most sources an answer may carry: `top_k`, else the configured default."""
        return int(self.top_k or self.factory.settings.rerank_top_n)

    def postprocessors(self) -> list[BaseNodePostprocessor]:
        return list(self.factory.postprocessors(self.collection, self.top_k))

    def highlight_only(self) -> list[BaseNodePostprocessor]:
        """The highlighter without the reranker (for sources a tool chose itself)."""
        return self.postprocessors()[1:]


@dataclass
class ToolResult:
    nodes: list[NodeWithScore]
    retrieved: int  # candidates before reranking
    notes: dict[str, Any] = field(default_factory=dict)  # what the tool resolved, for metadata


class ToolEngine(BaseQueryEngine):
    """A tool's query engine; subclasses implement `sources_for`."""

    name = "tool"
    description = ""

    def __init__(self, context: ToolContext) -> None:
        super().__init__(callback_manager=None)
        self.context = context

    def filters_for(self, question: str) -> SubQuestionFilters:
        return filters_for(question, self.context.known_entities)

    def sources_for(self, query: QueryBundle, filters: SubQuestionFilters) -> ToolResult:
        raise NotImplementedError

    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.sources_for(query_bundle, self.filters_for(query_bundle.query_str)).nodes

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        from citerag.query.synthesis import SubAnswer, synthesize

        started = time.perf_counter()
        question = checked_question(query_bundle.query_str)
        filters = self.filters_for(question)
        result = self.sources_for(QueryBundle(question), filters)
        part = SubAnswer(question, self.name, filters, result)
        return synthesize(question, [part], self.context, started)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        return self._query(query_bundle)

    def _get_prompt_modules(self) -> dict[str, Any]:
        return {}


def postprocess(
    nodes: list[NodeWithScore], query: QueryBundle, steps: Sequence[BaseNodePostprocessor]
) -> list[NodeWithScore]:
    for step in steps:
        nodes = step.postprocess_nodes(nodes, query_bundle=query)
    return nodes


def empty_response(metadata: AnswerMetadata, text: str) -> Response:
    return Response(response=text, source_nodes=[], metadata={"answer": metadata})
