"""Node postprocessors of the query path: highlights, neighbour expansion, page order.

Each is a LlamaIndex `BaseNodePostprocessor`, so it runs in any LlamaIndex query engine. Nodes
that gain metadata are copied first: a node from the docstore is never changed in place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import (
    BaseNode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    TextNode,
)
from pydantic import Field, PrivateAttr

from citerag.nodes import (
    HIGHLIGHTS,
    NodeHighlight,
    doc_name_of,
    neighbour_id,
    page_of,
    sentences_of,
    start_of,
)
from citerag.retrieve.highlights import select_highlights
from citerag.retrieve.rerank import RerankPostprocessor, query_vector_of

SentenceVectors = Callable[[Sequence[str]], Mapping[str, np.ndarray]]
NodeLookup = Callable[[Sequence[str]], Sequence[TextNode]]


def highlights_of(node: BaseNode) -> list[NodeHighlight]:
    """The highlights a `HighlightPostprocessor` put on the node (text, offsets, score)."""
    return list(node.metadata.get(HIGHLIGHTS, []))


class HighlightPostprocessor(BaseNodePostprocessor):
    """Marks on each node the sentences that best answer the question.

    `content[startOffset:endOffset] == text` for each, `content` being the node's text.
    """

    per_node: int = Field(default=3, ge=0)
    _sentence_vectors: SentenceVectors | None = PrivateAttr(default=None)

    def __init__(
        self, sentence_vectors: SentenceVectors | None = None, per_node: int = 3, **kwargs: Any
    ) -> None:
        super().__init__(**{**kwargs, "per_node": per_node})
        self._sentence_vectors = sentence_vectors

    @classmethod
    def class_name(cls) -> str:
        return "CiteragHighlights"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            return nodes
        query_vector = query_vector_of(query_bundle)
        vectors = (
            self._sentence_vectors([n.node.node_id for n in nodes])
            if (self._sentence_vectors and query_vector is not None)
            else {}
        )
        result = []
        for scored in nodes:
            node = scored.node
            chosen = select_highlights(
                query_bundle.query_str,
                node.get_content(),
                sentences_of(node),
                vectors.get(node.node_id),
                query_vector,
                k=self.per_node,
            )
            highlights: list[NodeHighlight] = [
                {
                    "text": h.highlight.text,
                    "startOffset": h.highlight.startOffset,
                    "endOffset": h.highlight.endOffset,
                    "score": round(float(h.score), 4),
                    "sentence": h.sentence_index,
                }
                for h in chosen
            ]
            # A shallow copy with its own metadata: the caller's node stays as it was, without
            # deep-copying its sentence spans and boxes on every question.
            marked = node.model_copy(update={"metadata": {**node.metadata, HIGHLIGHTS: highlights}})
            result.append(NodeWithScore(node=marked, score=scored.score))
        return result


class NeighbourExpansion(BaseNodePostprocessor):
    """Adds the previous or next chunk of a node whose best highlight sits at its edge.

    The added neighbour follows the node it completes, scored just below it. Run it after the
    `HighlightPostprocessor` (it reads the highlights) and before highlighting the additions.
    """

    max_added: int = Field(default=3, ge=0)
    _lookup: NodeLookup | None = PrivateAttr(default=None)

    def __init__(self, lookup: NodeLookup, max_added: int = 3, **kwargs: Any) -> None:
        super().__init__(**{**kwargs, "max_added": max_added})
        self._lookup = lookup

    @classmethod
    def class_name(cls) -> str:
        return "CiteragNeighbourExpansion"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        present = {n.node.node_id for n in nodes}
        wanted: dict[str, str] = {}  # neighbour id -> id of the node it completes
        for scored in nodes:
            neighbour = _edge_neighbour(scored.node)
            if neighbour and neighbour not in present and len(wanted) < self.max_added:
                wanted.setdefault(neighbour, scored.node.node_id)
        if not wanted or self._lookup is None:
            return nodes
        found = {n.node_id: n for n in self._lookup(list(wanted))}
        result: list[NodeWithScore] = []
        for scored in nodes:
            result.append(scored)
            for neighbour, owner in wanted.items():
                if owner == scored.node.node_id and neighbour in found:
                    score = (scored.score or 0.0) * 0.999
                    result.append(NodeWithScore(node=found[neighbour], score=score))
        return result


def _edge_neighbour(node: BaseNode) -> str | None:
    highlights = highlights_of(node)
    spans = sentences_of(node)
    if not highlights or not spans:
        return None
    best = max(highlights, key=lambda h: h.get("score", 0.0))
    if best.get("sentence") == 0:
        return neighbour_id(node, NodeRelationship.PREVIOUS)
    if best.get("sentence") == len(spans) - 1:
        return neighbour_id(node, NodeRelationship.NEXT)
    return None


class PageOrderPostprocessor(BaseNodePostprocessor):
    """Puts nodes in reading order (document, page, offset) and drops repeated ids."""

    @classmethod
    def class_name(cls) -> str:
        return "CiteragPageOrder"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        unique = list({n.node.node_id: n for n in reversed(nodes)}.values())
        return sorted(unique, key=_reading_position)


def _reading_position(scored: NodeWithScore) -> tuple[str, int, int]:
    node = scored.node
    start = start_of(node) if isinstance(node, TextNode) else 0
    return doc_name_of(node), page_of(node), start


@dataclass(frozen=True)
class SourcePostprocessors:
    """What a question's candidates pass through, in this order: the reranker (which also cuts
    them to the answer's budget), then the highlighter."""

    reranker: RerankPostprocessor
    highlighter: HighlightPostprocessor

    @property
    def steps(self) -> list[BaseNodePostprocessor]:
        return [self.reranker, self.highlighter]

    @property
    def reranks(self) -> bool:
        """True when a scorer reorders the candidates (not only a cut to the budget)."""
        return self.reranker.name != "none"
