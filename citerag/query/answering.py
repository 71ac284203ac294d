"""The question side of the engine: each mode's query engine over a collection, and the answer
it gives (`citerag.query.modes` picks the mode)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters

from citerag.answer.contract import AnswerResult
from citerag.answer.llm_answer import LLMAnswerer
from citerag.answer.number_check import with_number_check
from citerag.answer.synthesizer import answer_from_response
from citerag.plan.limits import checked_question
from citerag.query.answer_filters import request_filters
from citerag.query.cited_query_engine import CitedQueryEngine
from citerag.query.query_factory import QueryFactory
from citerag.query.request import AnswerRequest
from citerag.query.subquestions import CitedSubQuestionQueryEngine
from citerag.retrieve.collection_state import CollectionState
from citerag.store.base import DocStore
from citerag.tools.context import ToolContext
from citerag.tools.registry import build_question_generator, build_tools
from citerag.tools.retriever import FilterScope
from citerag.tools.tree_answer import tree_answer


class Answering:
    """Query engines and answers over the collections. `factory()` gives what every question
    shares (built on first use); `searchable(collection)` the collection's state, or the
    InputError that says how to fill it."""

    def __init__(
        self,
        factory: Callable[[], QueryFactory],
        docstore: DocStore,
        searchable: Callable[[str], CollectionState],
    ) -> None:
        self._factory = factory
        self._docstore = docstore
        self._searchable = searchable

    @property
    def answerer(self) -> LLMAnswerer | None:
        """The configured LLM's answerer (None: extractive answers)."""
        return self._factory().answerer

    def query_engine(
        self, collection: str, top_k: int | None = None, filters: MetadataFilters | None = None
    ) -> CitedQueryEngine:
        """One retrieval over the whole question (its `Response` keeps the sources)."""
        state = self._searchable(collection)  # before any model loads
        return self._factory().query_engine(state, top_k=top_k, filters=filters)

    def subquestion_engine(
        self,
        collection: str,
        top_k: int | None = None,
        filters: MetadataFilters | None = None,
        filter_scopes: Mapping[str, FilterScope | str] | None = None,
    ) -> CitedSubQuestionQueryEngine:
        """Sub-questions routed to the facts, pages, summary and sections tools.
        `filter_scopes` overrides where years and entities filter (`tools.facts`)."""
        state = self._searchable(collection)
        factory = self._factory()
        scopes = {name: FilterScope(scope) for name, scope in (filter_scopes or {}).items()}
        context = ToolContext(factory, state, self._docstore, top_k, filters, scopes)
        generator = build_question_generator(factory.answerer)
        return CitedSubQuestionQueryEngine(build_tools(context), generator, context)

    def retrieval_answer(self, request: AnswerRequest) -> AnswerResult:
        """The hybrid and single modes (a request whose question stands alone)."""
        filters = request_filters(request, self._searchable)
        collection, top_k = request.collection, request.top_k
        engine: BaseQueryEngine = (
            self.subquestion_engine(collection, top_k, filters)
            if request.plan
            else self.query_engine(collection, top_k, filters)
        )
        question = request.question
        response = engine.query(QueryBundle(checked_question(question)))
        return with_number_check(question, answer_from_response(response))  # type: ignore[arg-type]

    def sections_answer(self, request: AnswerRequest) -> AnswerResult:
        """Tree mode: files ranked by the hybrid retriever, `top_k_files` of them, five sections
        each from their stored trees, one cited answer."""
        question = checked_question(request.question)
        state = self._searchable(request.collection)
        context = ToolContext(self._factory(), state, self._docstore)
        return tree_answer(context, question, request.top_k_files)

    def retrieve(
        self, question: str, collection: str, top_k: int | None, filters: MetadataFilters | None
    ) -> list[NodeWithScore]:
        """The reranked nodes a question's answer would cite, without highlights or answer."""
        state = self._searchable(collection)
        factory = self._factory()
        query = QueryBundle(question)
        nodes = factory.retriever(state, filters).retrieve(query)
        reranker = factory.postprocessors(collection, top_k).reranker
        return reranker.postprocess_nodes(nodes, query_bundle=query)
