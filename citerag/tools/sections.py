"""`sections`: which sections of the documents answer a question, over their section trees.

The hybrid retriever's chunk scores rank each tree's nodes offline (`tools.tree_search`); each
of the best nodes is cited through its best-scored chunk (else its first one).
"""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore, QueryBundle

from citerag.nodes import doc_id_of
from citerag.plan.question_filters import SubQuestionFilters
from citerag.tools.tool_query_engine import ToolQueryEngine, ToolResult, postprocess
from citerag.tools.tree_search import offline_ranking
from citerag.tree.model import DocumentTree, TreeNode

SECTIONS_PER_DOCUMENT = 3


class SectionsQueryEngine(ToolQueryEngine):
    """The sections of each document's tree that match a topic."""

    name = "sections"
    description = (
        "Which sections, chapters or items of the documents discuss a topic, found over each "
        "document's section tree."
    )

    def sources_for(self, query: QueryBundle, filters: SubQuestionFilters) -> ToolResult:
        context = self.context
        retrieved = context.factory.retriever(context.state, context.base_filters).retrieve(query)
        by_doc: dict[str, dict[str, NodeWithScore]] = {}
        for scored in retrieved:
            by_doc.setdefault(doc_id_of(scored.node), {})[scored.node.node_id] = scored
        nodes: list[NodeWithScore] = []
        sections: list[dict[str, object]] = []
        for doc_id, hits in by_doc.items():
            tree = context.tree(doc_id)
            for section, score in _best_sections(tree, query.query_str, hits) if tree else []:
                cited = self._cited_chunk(section, hits)
                if cited is not None:
                    nodes.append(NodeWithScore(node=cited.node, score=score))
                    sections.append(_described(section))
        highlighted = postprocess(nodes, query, context.highlight_only())
        return ToolResult(highlighted, len(retrieved), {"sections": sections})

    def _cited_chunk(
        self, section: TreeNode, hits: dict[str, NodeWithScore]
    ) -> NodeWithScore | None:
        scored = [hits[c] for c in section.chunk_ids if c in hits]
        if scored:
            return max(scored, key=lambda n: n.score or 0.0)
        found = self.context.chunks(section.chunk_ids[:1])
        return NodeWithScore(node=found[0], score=0.0) if found else None


def _best_sections(
    tree: DocumentTree, question: str, hits: dict[str, NodeWithScore]
) -> list[tuple[TreeNode, float]]:
    scores = {chunk_id: float(n.score or 0.0) for chunk_id, n in hits.items()}
    ranked = offline_ranking(tree, question, scores)[:SECTIONS_PER_DOCUMENT]
    found = [(tree.find(node_id), score) for node_id, score in ranked]
    return [(node, score) for node, score in found if node is not None]


def _described(section: TreeNode) -> dict[str, object]:
    return {
        "nodeId": section.node_id,
        "title": section.title,
        "pages": [section.start_index, section.end_index],
    }
