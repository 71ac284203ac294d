"""The sub-question query engine: plan, run each sub-question on its tool with its own filters,
synthesize one cited answer.

LlamaIndex's `SubQuestionQueryEngine` drops a failed sub-question silently and answers from the
sub-answers' text, so its final answer cannot cite source chunks; this engine keeps its parts
(`QueryEngineTool`s, a `BaseQuestionGenerator`) and numbers the chunks themselves. A failed
sub-question is logged and reported in `metadata.subQuestions` with its error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import RESPONSE_TYPE
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.question_gen.types import BaseQuestionGenerator, SubQuestion
from llama_index.core.schema import QueryBundle
from llama_index.core.tools import QueryEngineTool

from citerag.answer.synthesizer import SubAnswer
from citerag.errors import InputError
from citerag.plan.limits import checked_question
from citerag.plan.subjects import with_subjects
from citerag.retrieve.routing import answering
from citerag.tools.tool_query_engine import ToolContext, ToolQueryEngine

log = logging.getLogger(__name__)
MAX_SUB_QUESTIONS = 6


class CitedSubQuestionQueryEngine(BaseQueryEngine):
    def __init__(
        self,
        tools: Sequence[QueryEngineTool],
        question_gen: BaseQuestionGenerator,
        context: ToolContext,
    ) -> None:
        super().__init__(callback_manager=None)
        self._tools = {str(tool.metadata.name): tool for tool in tools}
        self._question_gen = question_gen
        self._context = context

    @property
    def tools(self) -> list[QueryEngineTool]:
        return list(self._tools.values())

    def plan(self, question: str) -> list[SubQuestion]:
        """The planner's sub-questions (at most MAX_SUB_QUESTIONS), pronouns that point back
        given their subject (`plan.subjects`); the question itself when nothing was planned."""
        metadata = [tool.metadata for tool in self._tools.values()]
        planned = self._question_gen.generate(metadata, QueryBundle(question))[:MAX_SUB_QUESTIONS]
        if not planned:
            return [SubQuestion(sub_question=question, tool_name="facts")]
        texts = with_subjects([item.sub_question for item in planned])
        return [
            SubQuestion(sub_question=text, tool_name=item.tool_name)
            for text, item in zip(texts, planned, strict=True)
        ]

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        started = time.perf_counter()
        question = checked_question(query_bundle.query_str)
        planned = self.plan(question)
        vectors = self._embed([item.sub_question for item in planned])
        with answering(question):
            parts = [self._run(item, vector) for item, vector in zip(planned, vectors, strict=True)]
        planner = str(getattr(self._question_gen, "last_method", "offline"))
        response = self._context.answer(question, parts, started, planner)
        metadata = (response.metadata or {}).get("answer")
        if metadata is not None:  # the plan's tokens count too
            metadata.tokens_used += int(getattr(self._question_gen, "last_tokens", 0))
        return response

    def _embed(self, questions: list[str]) -> list[list[float] | None]:
        """Every sub-question's vector in one batch (one model call, not one per question)."""
        if len(questions) < 2:
            return [None] * len(questions)
        model = self._context.factory.embed_model
        return list(model.get_text_embedding_batch(questions))

    def _run(self, item: SubQuestion, vector: list[float] | None = None) -> SubAnswer:
        engine = self._engine(item.tool_name)
        filters = engine.filters_for(item.sub_question)
        try:
            query = QueryBundle(item.sub_question, embedding=vector)
            result = engine.sources_for(query, filters)
        except InputError:
            raise
        except Exception as error:  # noqa: BLE001 - one failed part is reported, not fatal
            log.warning(
                "sub-question %r on %s failed: %s", item.sub_question, item.tool_name, error
            )
            return SubAnswer(item.sub_question, item.tool_name, filters, None, str(error))
        return SubAnswer(item.sub_question, item.tool_name, filters, result)

    def _engine(self, name: str) -> ToolQueryEngine:
        tool = self._tools.get(name) or self._tools["facts"]
        engine = tool.query_engine
        assert isinstance(engine, ToolQueryEngine)
        return engine

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        return self._query(query_bundle)

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}
