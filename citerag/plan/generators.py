"""Sub-question generators as LlamaIndex `BaseQuestionGenerator`s: offline, and LLM with repair.

`LLMQuestionGenerator` trusts one reply; here the reply must validate as `SubQuestionList`
(repaired: code fences, text around the JSON, trailing commas, single quotes, a bare list), is
asked for up to three times, unknown tool names are mapped to a known tool or dropped with a log
line, and after three failures the offline planner answers (one warning says so). `last_method`
tells which planner produced the last plan.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.question_gen.types import BaseQuestionGenerator, SubQuestion, SubQuestionList
from llama_index.core.schema import QueryBundle
from llama_index.core.tools.types import ToolMetadata
from pydantic import ValidationError

from citerag.llm.connection import tokens_used
from citerag.plan.offline import FACTS, PAGES, SECTIONS, SUMMARY, plan_offline
from citerag.text.json_reply import loads_repaired

log = logging.getLogger(__name__)
ATTEMPTS = 3
TOOL_ALIASES = {
    "keyphrase": FACTS,
    "fact": FACTS,
    "search": FACTS,
    "retrieval": FACTS,
    "vector": FACTS,
    "page": PAGES,
    "page_filter": PAGES,
    "figure": PAGES,
    "summarize": SUMMARY,
    "summaries": SUMMARY,
    "section": SECTIONS,
    "tree": SECTIONS,
}
PLAN_PROMPT = """Split the user's question into the sub-questions needed to answer it, and pick \
for each the one tool that answers it. A simple question is one sub-question. Keep the user's \
words (years, names, figure and page references) in each sub-question.

Tools:
{tools}

Reply with JSON only, exactly this shape:
{{"items": [{{"sub_question": "...", "tool_name": "..."}}]}}

Question: {question}"""
REPAIR_PROMPT = (
    "That reply could not be used ({problem}). Reply again with JSON only: "
    '{{"items": [{{"sub_question": "...", "tool_name": "one of {names}"}}]}}'
)


class OfflineQuestionGenerator(BaseQuestionGenerator):
    """The deterministic planner (`plan.offline`), limited to the tools given."""

    last_method = "offline"

    def generate(self, tools: Sequence[ToolMetadata], query: QueryBundle) -> list[SubQuestion]:
        names = {tool.name for tool in tools}
        return [
            SubQuestion(sub_question=p.question, tool_name=p.tool if p.tool in names else FACTS)
            for p in plan_offline(query.query_str)
        ]

    async def agenerate(
        self, tools: Sequence[ToolMetadata], query: QueryBundle
    ) -> list[SubQuestion]:
        return self.generate(tools, query)

    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        return None


class RobustLLMQuestionGenerator(BaseQuestionGenerator):
    def __init__(self, llm: LLM, fallback: BaseQuestionGenerator | None = None) -> None:
        self._llm = llm
        self._fallback = fallback or OfflineQuestionGenerator()
        self.last_method = "llm"
        self.last_errors: list[str] = []
        self.last_tokens = 0  # what planning cost, as the provider reported it

    def generate(self, tools: Sequence[ToolMetadata], query: QueryBundle) -> list[SubQuestion]:
        names = [str(tool.name) for tool in tools]
        messages = [ChatMessage(role=MessageRole.USER, content=_plan_prompt(tools, query))]
        self.last_errors = []
        self.last_tokens = 0
        for _attempt in range(ATTEMPTS):
            reply, problem = self._ask(messages)
            if reply is not None and problem is None:
                planned = map_tools(parse_plan(reply) or [], names)
                if planned:
                    self.last_method = "llm"
                    return planned
                problem = "no sub-question with a known tool"
            self.last_errors.append(problem or "no reply")
            messages += [
                ChatMessage(role=MessageRole.ASSISTANT, content=reply or ""),
                ChatMessage(
                    role=MessageRole.USER,
                    content=REPAIR_PROMPT.format(problem=problem, names=", ".join(names)),
                ),
            ]
        log.warning(
            "the LLM planner failed %d times (%s); using the offline planner",
            ATTEMPTS,
            "; ".join(self.last_errors),
        )
        self.last_method = "offline (LLM failed)"
        return self._fallback.generate(tools, query)

    async def agenerate(
        self, tools: Sequence[ToolMetadata], query: QueryBundle
    ) -> list[SubQuestion]:
        return self.generate(tools, query)

    def _ask(self, messages: list[ChatMessage]) -> tuple[str | None, str | None]:
        try:
            response = self._llm.chat(messages)
        except Exception as error:  # noqa: BLE001 - any provider failure counts as an attempt
            return None, f"{type(error).__name__}: {str(error)[:120]}"
        self.last_tokens += tokens_used(response)
        reply = str(response.message.content or "")
        if parse_plan(reply) is None:
            return reply, "not valid JSON of the asked shape"
        return reply, None

    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        return None


def _plan_prompt(tools: Sequence[ToolMetadata], query: QueryBundle) -> str:
    listed = "\n".join(f"- {tool.name}: {tool.description}" for tool in tools)
    return PLAN_PROMPT.format(tools=listed, question=query.query_str.strip())


def parse_plan(reply: str) -> list[SubQuestion] | None:
    """The sub-questions of a reply, validated as `SubQuestionList`; None when unusable."""
    data = loads_repaired(reply)
    if isinstance(data, list):
        data = {"items": data}
    if not isinstance(data, dict):
        return None
    try:
        items = SubQuestionList.model_validate(data).items
    except ValidationError:
        return None
    return [item for item in items if item.sub_question.strip()] or None


def map_tools(planned: Sequence[SubQuestion], names: Sequence[str]) -> list[SubQuestion]:
    """Known tool names kept, others mapped (alias or close spelling) or dropped, logged."""
    result: list[SubQuestion] = []
    for item in planned:
        tool = tool_for(item.tool_name, names)
        if tool is None:
            log.warning(
                "dropped sub-question %r: unknown tool %r", item.sub_question, item.tool_name
            )
            continue
        if tool != item.tool_name:
            log.info("tool %r mapped to %r", item.tool_name, tool)
        result.append(SubQuestion(sub_question=item.sub_question.strip(), tool_name=tool))
    return result


def tool_for(name: str, names: Sequence[str]) -> str | None:
    if name in names:
        return name
    key = re.sub(r"[\s-]+", "_", name.strip().casefold())
    key = re.sub(r"(_tool|_engine|_query_engine)$", "", key)
    if key in names:
        return key
    if key in TOOL_ALIASES and TOOL_ALIASES[key] in names:
        return TOOL_ALIASES[key]
    close = difflib.get_close_matches(key, list(names), n=1, cutoff=0.75)
    return close[0] if close else None
