"""`pages`: explicit pages and ranges, and figure/table/equation/section references resolved to
their pages through what ingest stored.

A figure, table or equation label resolves to the chunks whose `labels` hold it (its caption or
tagged equation); a section, item or chapter to the section-tree node whose heading carries that
number, and so to the node's pages. Those chunks come first; the rest are the best hybrid hits
on the resolved pages. A reference that resolves to nothing falls back to the whole collection
and says so in the notes.
"""

from __future__ import annotations

from dataclasses import dataclass

from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import FilterCondition, MetadataFilters

from citerag.enrich.fields import LABELS
from citerag.nodes import BLOCK_TYPE, DOC_ID, LABEL, PAGE
from citerag.plan.question_filters import SubQuestionFilters
from citerag.retrieve.filters import page_filters
from citerag.tools.tool_query_engine import ToolQueryEngine, ToolResult, postprocess
from citerag.tree.patterns import numbering

MAX_ANCHORS = 4


@dataclass(frozen=True)
class Span:
    doc_id: str | None
    first: int
    last: int


class PagesQueryEngine(ToolQueryEngine):
    """Given pages or page ranges, or a figure, table, equation, section or item reference
    (Figure 4.3, Eq. (3), Table 1, Section 2.1, Item 7), answers from those pages."""

    name = "pages"

    def sources_for(self, query: QueryBundle, filters: SubQuestionFilters) -> ToolResult:
        anchors = self.label_chunks(filters.labels)
        spans = self.spans(filters, anchors)
        notes: dict[str, object] = {
            "resolvedPages": sorted({(s.first, s.last) for s in spans}),
            "labelChunks": len(anchors),
        }
        if not spans:
            notes["unresolved"] = True
            spans = [Span(None, 1, 10**6)]
        candidates = self._in_spans(query, spans, exclude=set(anchors))
        anchor_nodes = self._anchor_nodes(anchors, candidates, query)
        top_k = self.context.budget - len(anchor_nodes)
        others = [c for c in candidates if c.node.node_id not in anchors]
        ranked = postprocess(others, query, self.context.postprocessors())[: max(top_k, 0)]
        return ToolResult(anchor_nodes + ranked, len(candidates) + len(anchor_nodes), notes)

    def label_chunks(self, labels: list[str]) -> list[str]:
        """Chunk ids that define the labels (caption, tagged equation), in label order."""
        found: dict[str, None] = {}
        places = self.context.state.places
        for wanted in labels:
            defining = [chunk_id for chunk_id, place in places.items() if _defines(place, wanted)]
            # what a figure shows (its description node) before its caption
            defining.sort(key=lambda c: not str(places[c].get(BLOCK_TYPE)).endswith(_DESCRIBED))
            for chunk_id in defining:
                found.setdefault(chunk_id, None)
        return list(found)[:MAX_ANCHORS]

    def spans(self, filters: SubQuestionFilters, anchors: list[str]) -> list[Span]:
        places = self.context.state.places
        spans = [Span(None, s.first, s.last) for s in filters.pages]
        for chunk_id in anchors:
            page = int(places[chunk_id][PAGE])
            spans.append(Span(str(places[chunk_id][DOC_ID]), page, page))
        spans.extend(self._section_spans(filters.sections))
        return list(dict.fromkeys(spans))

    def _section_spans(self, sections: list[str]) -> list[Span]:
        spans: list[Span] = []
        for doc_id in self.context.doc_ids() if sections else []:
            tree = self.context.tree(doc_id)
            if tree is None:
                continue
            for node in tree.walk():
                found = numbering(node.title)
                key = found.key.replace(" ", ":") if found else ""
                if found and found.kind == "decimal":
                    key = f"section:{found.key}"
                if key in sections:
                    spans.append(Span(doc_id, node.start_index, node.end_index))
        return spans

    def _in_spans(
        self, query: QueryBundle, spans: list[Span], exclude: set[str]
    ) -> list[NodeWithScore]:
        best: dict[str, NodeWithScore] = {}
        for span in spans:
            filters = _with_base(
                page_filters(span.first, span.last, span.doc_id), self.context.base_filters
            )
            retriever = self.context.factory.retriever(self.context.state, filters)
            for scored in retriever.retrieve(query):
                known = best.get(scored.node.node_id)
                if known is None or (scored.score or 0) > (known.score or 0):
                    best[scored.node.node_id] = scored
        ranked = sorted(best.values(), key=lambda n: -(n.score or 0.0))
        return [n for n in ranked if n.node.node_id not in exclude] + [
            n for n in ranked if n.node.node_id in exclude
        ]

    def _anchor_nodes(
        self, anchors: list[str], candidates: list[NodeWithScore], query: QueryBundle
    ) -> list[NodeWithScore]:
        if not anchors:
            return []
        top = max((c.score or 0.0 for c in candidates), default=0.0) + 1.0
        nodes = [NodeWithScore(node=n, score=top) for n in self.context.chunks(anchors)]
        return postprocess(nodes, query, self.context.highlight_only())


_DESCRIBED = "_description"  # the block type of a figure's description node: "figure_description"


def _defines(place: dict[str, object], wanted: str) -> bool:
    stored = place.get(LABELS) or []
    if isinstance(stored, list) and wanted in stored:
        return True
    kind, _, label = wanted.partition(":")
    # a figure's caption chunk, or its description node (`enrich.figure_descriptions`)
    defining = (kind, f"{kind}{_DESCRIBED}")
    return place.get(BLOCK_TYPE) in defining and str(place.get(LABEL) or "").casefold() == label


def _with_base(filters: MetadataFilters, base: MetadataFilters | None) -> MetadataFilters:
    if base is None or not base.filters:
        return filters
    if base.condition in (None, FilterCondition.AND):
        return MetadataFilters(filters=[*filters.filters, *base.filters])
    return MetadataFilters(filters=[*filters.filters, base])
