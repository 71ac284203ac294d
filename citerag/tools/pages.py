"""`pages`: explicit pages and ranges, and figure/table/equation/section references resolved to
their pages through what ingest stored.

A figure, table or equation label resolves to the chunks whose `labels` hold it (its caption or
tagged equation); a section, item or chapter to the section-tree node whose heading carries that
number, and so to the node's pages. Those chunks come first; the rest are the best hybrid hits
on the resolved pages. A reference that resolves to nothing falls back to the whole collection
and says so in the notes.

A page number is the page printed with it where a document prints its numbers (the chunks'
`page_label`), searched first; the sheet of that number is searched after it when the two
differ. A page named by its place ("the cover", "the last page") is a sheet. A reference
narrows and ranks first but does not starve the answer: when the referenced pages hold fewer
chunks than the budget, the rest comes from ordinary retrieval over the same documents.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from citerag.enrich.fields import LABELS
from citerag.nodes import BLOCK_TYPE, DOC_ID, LABELLED, PAGE, PAGE_LABEL
from citerag.plan.question_filters import SubQuestionFilters
from citerag.retrieve.collection_state import CollectionState
from citerag.retrieve.filters import page_filters
from citerag.retrieve.place import Place
from citerag.store.base import PageRange
from citerag.tools.tool_query_engine import ToolQueryEngine, ToolResult, postprocess
from citerag.tree.patterns import numbering

MAX_ANCHORS = 4


@dataclass(frozen=True)
class Span:
    doc_id: str | None
    first: int
    last: int
    after: bool = False  # a sheet searched after the page printed with its number


class PagesQueryEngine(ToolQueryEngine):
    """The pages a sub-question names, or the pages its figure, table, equation, section or
    item references resolve to."""

    name = "pages"
    description = (
        "Given pages or page ranges, or a figure, table, equation, section or item reference "
        "(Figure 4.3, Eq. (3), Table 1, Section 2.1, Item 7), answers from those pages."
    )

    def sources_for(self, query: QueryBundle, filters: SubQuestionFilters) -> ToolResult:
        anchors = self.label_chunks(filters.labels)
        spans = self.spans(filters, anchors)
        notes: dict[str, object] = {
            "resolvedPages": sorted({(s.first, s.last) for s in spans}),
            "labelChunks": len(anchors),
        }
        printed = sorted({(s.first, s.last) for s in spans if s.doc_id and not s.after})
        if any(s.after for s in spans):
            notes["printedPages"] = printed
        if not spans:
            notes["unresolved"] = True
            spans = [Span(None, 1, 10**6)]
        first = [s for s in spans if not s.after]
        candidates = self._in_spans(query, first, exclude=set(anchors))
        anchor_nodes = self._anchor_nodes(anchors, candidates, query)
        top_k = max(self.context.budget - len(anchor_nodes), 0)
        others = [c for c in candidates if c.node.node_id not in anchors]
        ranked = postprocess(others, query, self.context.postprocessors())[:top_k]
        seen = {n.node.node_id for n in [*anchor_nodes, *ranked]}
        later = [s for s in spans if s.after]
        for more in (lambda: self._in_spans(query, later, seen), lambda: self._fill(query, spans)):
            if len(ranked) >= top_k:
                break
            found = [c for c in more() if c.node.node_id not in seen]
            added = postprocess(found, query, self.context.postprocessors())
            added = [n for n in added if n.node.node_id not in seen][: top_k - len(ranked)]
            seen.update(n.node.node_id for n in added)
            ranked += _ranked_below(added, [*anchor_nodes, *ranked])
        return ToolResult(anchor_nodes + ranked, len(candidates) + len(anchor_nodes), notes)

    def _fill(self, query: QueryBundle, spans: list[Span]) -> list[NodeWithScore]:
        """Ordinary retrieval over the referenced documents (one when the spans name one)."""
        docs = {s.doc_id for s in spans}
        scope = None
        if len(docs) == 1 and None not in docs:
            scope = MetadataFilters(
                filters=[MetadataFilter(key=DOC_ID, value=docs.pop(), operator=FilterOperator.EQ)]
            )
        base = self.context.base_filters
        filters = _with_base(scope, base) if scope is not None else base
        return self.context.factory.retriever(self.context.state, filters).retrieve(query)

    def label_chunks(self, labels: list[str]) -> list[str]:
        """Chunk ids that define the labels (caption, tagged equation), in label order."""
        found: dict[str, None] = {}
        for wanted in labels:
            found.update(dict.fromkeys(defining_chunks(self.context.state, wanted)))
        return list(found)[:MAX_ANCHORS]

    def spans(self, filters: SubQuestionFilters, anchors: list[str]) -> list[Span]:
        places = self.context.state.places
        spans = self._number_spans(filters.pages) + self._sheet_spans(filters.sheets)
        for chunk_id in anchors:
            page = int(places[chunk_id][PAGE])
            spans.append(Span(str(places[chunk_id][DOC_ID]), page, page))
        spans.extend(self._section_spans(filters.sections))
        return list(dict.fromkeys(spans))

    def _number_spans(self, pages: list[PageRange]) -> list[Span]:
        """Each page number as the pages printed with it, then as the sheet where that differs."""
        printed = _printed_sheets(self.context.state.places.values()) if pages else {}
        spans: list[Span] = []
        for wanted in pages:
            found = [
                Span(doc_id, sheet, sheet)
                for doc_id, labels in printed.items()
                for number in range(wanted.first, min(wanted.last, wanted.first + 200) + 1)
                for sheet in labels.get(str(number), ())
            ]
            same = all((s.first, s.last) == (wanted.first, wanted.last) for s in found)
            spans += found
            spans.append(Span(None, wanted.first, wanted.last, after=bool(found) and not same))
        return spans

    def _sheet_spans(self, sheets: list[PageRange]) -> list[Span]:
        """Sheets by place; negative ones count from each document's last sheet."""
        if not any(s.first < 0 for s in sheets):
            return [Span(None, s.first, s.last) for s in sheets]
        last_sheet: dict[str, int] = {}
        for place in self.context.state.places.values():
            doc_id = str(place[DOC_ID])
            last_sheet[doc_id] = max(last_sheet.get(doc_id, 0), int(place[PAGE]))
        spans: list[Span] = []
        for wanted in sheets:
            if wanted.first > 0:
                spans.append(Span(None, wanted.first, wanted.last))
                continue
            for doc_id, last in last_sheet.items():
                sheet = last + 1 + wanted.first
                if sheet >= 1:
                    spans.append(Span(doc_id, sheet, sheet))
        return spans

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


def defining_chunks(state: CollectionState, wanted: str) -> list[str]:
    """The chunks that define label `wanted` ("figure:3"), asked of the docstore's value table:
    those whose `labels` hold it (a caption or tagged equation inside the chunk's text, written
    case-folded by enrichment), and a figure's caption chunk or its description node
    (`enrich.figure_descriptions`), by block type and label. What a figure shows (its
    description node) comes first, then the snapshot's order."""
    kind, _, label = wanted.partition(":")
    named = state.carriers(LABELS, [wanted])
    by_type = state.carriers(LABELLED, [f"{kind}:{label}", f"{kind}{_DESCRIBED}:{label}"])
    chunk_ids = set().union(*named.values(), *by_type.values())
    places = state.places

    def order(chunk_id: str) -> tuple[bool, str, int]:
        place = places[chunk_id]
        described = str(place.get(BLOCK_TYPE)).endswith(_DESCRIBED)
        return not described, place.doc_id, list(state.docs[place.doc_id].places).index(chunk_id)

    return sorted(chunk_ids, key=order)


def _ranked_below(nodes: list[NodeWithScore], before: list[NodeWithScore]) -> list[NodeWithScore]:
    """`nodes` scored below every node of `before`, in their order: the answer lists sources
    by score, and what was found on the referenced pages comes first."""
    if not before:
        return nodes
    floor = min(n.score or 0.0 for n in before)
    return [
        NodeWithScore(node=n.node, score=min(n.score or 0.0, floor) - 1e-6 * (i + 1))
        for i, n in enumerate(nodes)
    ]


def _printed_sheets(places: Iterable[Place]) -> dict[str, dict[str, tuple[int, ...]]]:
    """Per document that prints its page numbers: each printed number's sheets."""
    found: dict[str, dict[str, set[int]]] = {}
    for place in places:
        label = place.get(PAGE_LABEL)
        if label:
            pages = found.setdefault(str(place[DOC_ID]), {}).setdefault(str(label), set())
            pages.add(int(place[PAGE]))
    return {
        doc_id: {label: tuple(sorted(sheets)) for label, sheets in labels.items()}
        for doc_id, labels in found.items()
    }


def _with_base(filters: MetadataFilters, base: MetadataFilters | None) -> MetadataFilters:
    if base is None or not base.filters:
        return filters
    if base.condition in (None, FilterCondition.AND):
        return MetadataFilters(filters=[*filters.filters, *base.filters])
    return MetadataFilters(filters=[*filters.filters, base])
