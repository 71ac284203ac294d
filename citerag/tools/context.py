"""What a tool works in: the collection, the query factory's parts, and what a tool returns.

Kept apart from the tool engine base (`tools.base`) so the answer step (`query.synthesis`), which
the base calls, can read a tool's context and result without importing the base.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import MetadataFilters

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
    notes: dict[str, object] = field(default_factory=dict)  # what the tool resolved, for metadata


def postprocess(
    nodes: list[NodeWithScore], query: QueryBundle, steps: Sequence[BaseNodePostprocessor]
) -> list[NodeWithScore]:
    for step in steps:
        nodes = step.postprocess_nodes(nodes, query_bundle=query)
    return nodes
