"""What a tool works in: the collection, the query factory's parts, and how a tool's sources
are postprocessed and handed to the answer step (`answer.synthesizer`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.response.schema import Response
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import MetadataFilters

from citerag.answer.llm_answer import LLMAnswerer
from citerag.answer.synthesizer import CitedSynthesizer, SubAnswer, ToolResult
from citerag.enrich.fields import ENTITIES
from citerag.retrieve.collection_state import CollectionState
from citerag.retrieve.hybrid import HybridRetriever
from citerag.retrieve.postprocessors import NeighbourExpansion, SourcePostprocessors
from citerag.settings import Settings
from citerag.store.base import DocStore
from citerag.tools.retriever import FilterScope, ListFilteredRetriever, ListFilters
from citerag.tree.model import DocumentTree

__all__ = ["QueryParts", "ToolContext", "ToolResult", "postprocess"]


class QueryParts(Protocol):
    """What tools take from the query factory (`citerag.query.query_factory.QueryFactory`)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def answerer(self) -> LLMAnswerer | None: ...

    @property
    def embed_model(self) -> BaseEmbedding: ...

    def retriever(
        self, state: CollectionState, filters: MetadataFilters | None = None
    ) -> HybridRetriever: ...

    def list_filtered_retriever(
        self, state: CollectionState, filters: MetadataFilters | None, list_filters: ListFilters
    ) -> ListFilteredRetriever: ...

    def postprocessors(self, collection: str, top_k: int | None) -> SourcePostprocessors: ...


@dataclass
class ToolContext:
    """One collection, the factory that builds retrievers and postprocessors, and options."""

    factory: QueryParts
    state: CollectionState
    docstore: DocStore
    top_k: int | None = None
    base_filters: MetadataFilters | None = None  # the caller's own (e.g. --pages), on every tool
    filter_scopes: dict[str, FilterScope] = field(
        default_factory=dict
    )  # overrides facts.FILTER_SCOPES
    _trees: dict[str, DocumentTree | None] = field(default_factory=dict)

    @property
    def collection(self) -> str:
        return self.state.name

    def entity_mentions(self, text: str) -> list[str]:
        """The stored entity values `text` names (`CollectionState.mentions`)."""
        return self.state.mentions(ENTITIES, text)

    @property
    def answerer(self) -> LLMAnswerer | None:
        return self.factory.answerer

    def doc_ids(self) -> list[str]:
        return list(dict.fromkeys(str(p["doc_id"]) for p in self.state.places.values()))

    def within_base(self, chunk_ids: Collection[str]) -> set[str]:
        """Those of `chunk_ids` (chunks of the snapshot) that the caller's own filters keep."""
        base = self.base_filters
        if base is None or not base.filters:
            return set(chunk_ids)
        return self.state.matching(base, chunk_ids)

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
        return int(self.top_k or self.factory.settings.retrieval.rerank_top_n)

    def postprocessors(self) -> list[BaseNodePostprocessor]:
        """The reranker, then the highlighter."""
        return self._source_postprocessors().steps

    def highlight_only(self) -> list[BaseNodePostprocessor]:
        """The highlighter without the reranker (for sources a tool chose itself)."""
        return [self._source_postprocessors().highlighter]

    def synthesizer(self, planner: str = "offline") -> CitedSynthesizer:
        """The answer step over this context's sources, within its budget."""
        reranked = self._source_postprocessors().reranks
        return CitedSynthesizer(self.answerer, self.budget, reranked, planner)

    def with_neighbours(self, part: SubAnswer) -> list[NodeWithScore]:
        """The part's nodes with edge neighbours added (highlighted for the part's question),
        unless a hard filter holds the part to chunks that carry a value (a neighbour need not
        carry it)."""
        nodes = part.nodes
        if part.result is not None and part.result.notes.get("hardFilterChunks"):
            return nodes
        expanded = NeighbourExpansion(self.chunks).postprocess_nodes(nodes)
        present = {n.node.node_id for n in nodes}
        places = self.state.places
        allowed = self.within_base({n.node.node_id for n in expanded if n.node.node_id in places})
        expanded = [n for n in expanded if n.node.node_id in present or n.node.node_id in allowed]
        added = [n for n in expanded if n.node.node_id not in present]
        if not added:
            return nodes
        query = QueryBundle(part.question)
        highlighted = {n.node.node_id: n for n in postprocess(added, query, self.highlight_only())}
        return [highlighted.get(n.node.node_id, n) for n in expanded]

    def answer(
        self, question: str, parts: Sequence[SubAnswer], started: float, planner: str = "offline"
    ) -> Response:
        """One cited answer over the parts' sources, neighbours added first."""
        for part in parts:
            if part.result is not None:
                part.result.nodes = self.with_neighbours(part)
        return self.synthesizer(planner).synthesize_parts(question, parts, started)

    def _source_postprocessors(self) -> SourcePostprocessors:
        return self.factory.postprocessors(self.collection, self.top_k)


def postprocess(
    nodes: list[NodeWithScore], query: QueryBundle, steps: Sequence[BaseNodePostprocessor]
) -> list[NodeWithScore]:
    for step in steps:
        nodes = step.postprocess_nodes(nodes, query_bundle=query)
    return nodes
