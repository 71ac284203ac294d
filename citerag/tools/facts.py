"""`facts`: hybrid retrieval, reranked and highlighted, with the sub-question's own filters."""

from __future__ import annotations

from llama_index.core.schema import QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters

from citerag.plan.filters import SubQuestionFilters, metadata_filters
from citerag.tools.base import ToolEngine, ToolResult, postprocess

FILTER_SCOPE = "vector"  # chosen by measurement: benchmarks/results/subquestions.md


class FactsEngine(ToolEngine):
    name = "facts"
    description = (
        "Facts from the documents: hybrid keyword and vector search over passages, for any "
        "question about what the documents say (people, events, numbers, definitions)."
    )
    scope = FILTER_SCOPE

    def list_filters(self, filters: SubQuestionFilters) -> MetadataFilters | None:
        fields = self.context.filter_fields
        return metadata_filters(
            filters, use_years="years" in fields, use_entities="entities" in fields
        )

    def sources_for(self, query: QueryBundle, filters: SubQuestionFilters) -> ToolResult:
        context = self.context
        retriever = context.factory.list_filtered_retriever(
            context.state, context.base_filters, self.list_filters(filters), self.scope
        )
        retrieved = retriever.retrieve(query)
        nodes = postprocess(retrieved, query, context.postprocessors())
        notes = {} if retriever.matched is None else {"filteredChunks": retriever.matched}
        return ToolResult(nodes, len(retrieved), notes)
