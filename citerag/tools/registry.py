"""The tools as LlamaIndex `QueryEngineTool`s, and the sub-question engine over them."""

from __future__ import annotations

from llama_index.core.question_gen.types import BaseQuestionGenerator
from llama_index.core.tools import QueryEngineTool

from citerag.llm.llm_chat import LLMChat
from citerag.plan.generators import OfflineQuestionGenerator, RobustLLMQuestionGenerator
from citerag.tools.facts import FactsQueryEngine
from citerag.tools.pages import PagesQueryEngine
from citerag.tools.sections import SectionsQueryEngine
from citerag.tools.summary import SummaryQueryEngine
from citerag.tools.tool_query_engine import ToolContext, ToolQueryEngine

TOOL_ENGINES: tuple[type[ToolQueryEngine], ...] = (
    FactsQueryEngine,
    PagesQueryEngine,
    SummaryQueryEngine,
    SectionsQueryEngine,
)


def build_tools(context: ToolContext) -> list[QueryEngineTool]:
    """`facts`, `pages`, `summary` and `sections` over one collection."""
    return [
        QueryEngineTool.from_defaults(
            query_engine=engine(context), name=engine.name, description=engine.description
        )
        for engine in TOOL_ENGINES
    ]


def build_question_generator(answerer: LLMChat | None) -> BaseQuestionGenerator:
    """The LLM planner (with the offline one as its last resort) when an LLM is configured."""
    if answerer is None:
        return OfflineQuestionGenerator()
    return RobustLLMQuestionGenerator(answerer.llm)
