"""`facts`: hybrid retrieval, reranked and highlighted, with the sub-question's own filters.

Where each filter applies was measured (benchmarks/results/subquestions.md): years restrict
every ranking (on the essay's year questions every cited page then mentions the year, against
a third without; Netflix page recall@10 rises a little); entities are not a filter, since on
the vector search (the seed's way) they cost the Netflix questions 12 points of page recall and
changed nothing on the essay: the retriever weighs them as soft evidence instead
(`citerag.retrieve.evidence`, measured in benchmarks/results/kinds.md).
"""

from __future__ import annotations

from llama_index.core.schema import QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters

from citerag.plan.question_filters import SubQuestionFilters, metadata_filters
from citerag.tools.retriever import FilterScope, ListFilters
from citerag.tools.tool_query_engine import ToolQueryEngine, ToolResult, postprocess

FILTER_SCOPES: dict[str, FilterScope] = {
    "years": FilterScope.EVERY_RANKING,
    "entities": FilterScope.NOWHERE,
}


class FactsQueryEngine(ToolQueryEngine):
    """Hybrid retrieval over passages with the sub-question's own filters, scoped per field
    (`FILTER_SCOPES`)."""

    name = "facts"
    description = (
        "Facts from the documents: hybrid keyword and vector search over passages, for any "
        "question about what the documents say (people, events, numbers, definitions)."
    )

    def scoped_filters(self, filters: SubQuestionFilters) -> ListFilters:
        """The vector-only filters and those on every ranking, from the sub-question's own."""
        scopes = {**FILTER_SCOPES, **self.context.filter_scopes}

        def on(scope: FilterScope) -> MetadataFilters | None:
            return metadata_filters(
                filters,
                use_years=scopes.get("years") == scope,
                use_entities=scopes.get("entities") == scope,
            )

        return ListFilters(vector=on(FilterScope.VECTOR_ONLY), hard=on(FilterScope.EVERY_RANKING))

    def sources_for(self, query: QueryBundle, filters: SubQuestionFilters) -> ToolResult:
        context = self.context
        retriever = context.factory.list_filtered_retriever(
            context.state, context.base_filters, self.scoped_filters(filters)
        )
        retrieved = retriever.retrieve(query)
        nodes = postprocess(retrieved, query, context.postprocessors())
        notes: dict[str, object] = {
            f"{kind}FilterChunks": n for kind, n in retriever.matched.items()
        }
        return ToolResult(nodes, len(retrieved), notes)
