"""`summary`: a document, a section or pages summarised.

Offline the summary is extractive: one source per section in scope (its first chunk), whose
highlights are the sentences closest to the section's title and stored summary, in page order.
With an LLM the same sources go to the answerer, which writes the summary. Scope: the sections
or pages the question names, else every document's top sections (or evenly spaced chunks when a
document has no tree).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from llama_index.core.schema import NodeWithScore, QueryBundle

from citerag.nodes import DOC_ID, PAGE, PAGE_LABEL
from citerag.plan.question_filters import SubQuestionFilters
from citerag.retrieve.place import Place
from citerag.tools.tool_query_engine import ToolQueryEngine, ToolResult, postprocess
from citerag.tree.model import DocumentTree, TreeNode
from citerag.tree.patterns import numbering


class SummaryQueryEngine(ToolQueryEngine):
    """Evenly spaced passages of a document, its named sections or pages, for an overview."""

    name = "summary"
    description = (
        "Summaries and overviews: the main points of a whole document, of a section (Item 7, "
        "Section 2) or of pages."
    )

    def sources_for(self, query: QueryBundle, filters: SubQuestionFilters) -> ToolResult:
        limit = self.context.budget
        picks = self._picks(filters, limit)
        nodes: list[NodeWithScore] = []
        for rank, (chunk_id, focus) in enumerate(picks):
            found = self.context.chunks([chunk_id])
            if not found:
                continue
            scored = NodeWithScore(node=found[0], score=1.0 / (rank + 1))
            nodes.extend(postprocess([scored], QueryBundle(focus), self.context.highlight_only()))
        notes = {"scope": _scope(filters), "sections": len(picks)}
        return ToolResult(nodes, len(picks), notes)

    def _picks(self, filters: SubQuestionFilters, limit: int) -> list[tuple[str, str]]:
        """(chunk id, what its highlights should be close to) per section or page in scope,
        within the caller's own filters (e.g. --pages)."""
        scoped = self._scoped(filters, limit)
        kept = self.context.within_base([chunk_id for chunk_id, _ in scoped])
        picks = [p for p in scoped if p[0] in kept]
        return picks or self._spread(lambda place: True, limit)

    def _scoped(self, filters: SubQuestionFilters, limit: int) -> list[tuple[str, str]]:
        if filters.pages:
            wanted = {p for s in filters.pages for p in range(s.first, s.last + 1)}
            return self._spread(_on_pages(wanted, self.context.state.places.values()), limit)
        picks: list[tuple[str, str]] = []
        for doc_id in self.context.doc_ids():
            tree = self.context.tree(doc_id)
            sections = _sections(tree, filters.sections) if tree else []
            if not sections and not filters.sections:
                picks.extend(self._spread(_of_document(doc_id), limit))
                continue
            picks.extend(_first_chunks(sections[:limit]))
        return picks[:limit]

    def _spread(self, keep: Callable[[Place], bool], limit: int) -> list[tuple[str, str]]:
        """Evenly spaced chunks among those kept, in reading order."""
        kept = [cid for cid, place in self.context.state.places.items() if keep(place)]
        allowed = self.context.within_base(kept)
        ids = [cid for cid in kept if cid in allowed]
        if len(ids) > limit:
            step = len(ids) / limit
            ids = [ids[int(i * step)] for i in range(limit)]
        return [(cid, "main point overview summary") for cid in ids]


def _on_pages(wanted: set[int], places: Iterable[Place]) -> Callable[[Place], bool]:
    """On the pages printed with those numbers where a document prints its page numbers (as
    the `pages` tool reads them), else on the sheets of those numbers."""
    labelled = {str(place[DOC_ID]) for place in places if place.get(PAGE_LABEL)}
    printed = {str(n) for n in wanted}

    def keep(place: Place) -> bool:
        if str(place[DOC_ID]) in labelled:
            return str(place.get(PAGE_LABEL) or "") in printed
        return int(place[PAGE]) in wanted

    return keep


def _of_document(doc_id: str) -> Callable[[Place], bool]:
    return lambda place: place[DOC_ID] == doc_id


def _sections(tree: DocumentTree, wanted: Sequence[str]) -> list[TreeNode]:
    """The named sections, else the top sections (the children of a lone root)."""
    if wanted:
        found: list[TreeNode] = []
        for node in tree.walk():
            number = numbering(node.title)
            key = f"section:{number.key}" if number and number.kind == "decimal" else ""
            if number and not key:
                key = number.key.replace(" ", ":")
            if key in wanted:
                found.extend(node.walk())
        return found
    top = list(tree.structure)
    while len(top) == 1 and top[0].nodes:
        top = [top[0], *top[0].nodes]
    return top


def _first_chunks(sections: Sequence[TreeNode]) -> list[tuple[str, str]]:
    picks: list[tuple[str, str]] = []
    for section in sections:
        chunk_ids = next((n.chunk_ids for n in section.walk() if n.chunk_ids), [])
        if chunk_ids:
            picks.append((chunk_ids[0], f"{section.title}. {section.summary}"))
    return list(dict((c, f) for c, f in picks).items())


def _scope(filters: SubQuestionFilters) -> str:
    if filters.pages:
        return "pages"
    return "sections" if filters.sections else "documents"
