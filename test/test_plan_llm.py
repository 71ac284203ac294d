"""The LLM planner against a loopback OpenAI-compatible server: real client code, scripted replies.

Valid sub-questions are used as given; broken JSON is repaired; three unusable replies fall back
to the offline planner with one warning; unknown tool names are mapped or dropped.
"""

from __future__ import annotations

import json
import logging
from typing import cast

import pytest
from fake_openai_server import ScriptedReply, running_server
from llama_index.core.schema import QueryBundle
from llama_index.core.tools.types import ToolMetadata

from citerag.llm.connection import build_llm
from citerag.plan.generators import RobustLLMQuestionGenerator, parse_plan, tool_for
from citerag.settings import Settings
from citerag.tools.registry import TOOL_ENGINES, build_tools
from citerag.tools.tool_query_engine import ToolContext, ToolQueryEngine

TOOLS = [
    ToolMetadata(name=name, description=f"the {name} tool")
    for name in ("facts", "pages", "summary", "sections")
]
SEED = "What did the author do in 1980, in 1996 and in 2019?"


def plan_with(replies: list[str], question: str = SEED) -> tuple[list[tuple[str, str]], str, int]:
    with running_server([ScriptedReply(r) for r in replies]) as server:
        settings = Settings(
            llm_provider="openai_like", llm_model="fake", llm_base_url=server.base_url
        )
        llm = build_llm(settings.llm)
        assert llm is not None
        generator = RobustLLMQuestionGenerator(llm)
        plan = generator.generate(TOOLS, QueryBundle(question))
    pairs = [(p.sub_question, p.tool_name) for p in plan]
    return pairs, generator.last_method, len(server.requests)


def items(*pairs: tuple[str, str]) -> str:
    return json.dumps({"items": [{"sub_question": q, "tool_name": t} for q, t in pairs]})


def test_valid_sub_questions_are_used_and_the_prompt_lists_the_tools() -> None:
    reply = items(("What did the author do in 1980?", "facts"), ("Describe Figure 1", "pages"))
    with running_server([ScriptedReply(reply)]) as server:
        settings = Settings(
            llm_provider="openai_like", llm_model="fake", llm_base_url=server.base_url
        )
        llm = build_llm(settings.llm)
        assert llm is not None
        plan = RobustLLMQuestionGenerator(llm).generate(TOOLS, QueryBundle(SEED))
    assert [(p.sub_question, p.tool_name) for p in plan] == [
        ("What did the author do in 1980?", "facts"),
        ("Describe Figure 1", "pages"),
    ]
    prompt = server.requests[0]["messages"][-1]["content"]
    assert SEED in prompt and "- pages: the pages tool" in prompt


def test_planning_tokens_are_counted() -> None:
    reply = ScriptedReply(
        items(("Who founded YC?", "facts")), prompt_tokens=50, completion_tokens=7
    )
    with running_server([reply]) as server:
        settings = Settings(
            llm_provider="openai_like", llm_model="fake", llm_base_url=server.base_url
        )
        llm = build_llm(settings.llm)
        assert llm is not None
        generator = RobustLLMQuestionGenerator(llm)
        generator.generate(TOOLS, QueryBundle("Who founded YC?"))
    assert generator.last_tokens == 57


def test_broken_json_is_repaired_without_asking_again() -> None:
    broken = (
        "Sure! Here is the plan:\n```json\n{'items': [{'sub_question': 'What did he do in 1996?', "
        "'tool_name': 'facts'},]}\n```"
    )
    pairs, method, requests = plan_with([broken])
    assert pairs == [("What did he do in 1996?", "facts")]
    assert (method, requests) == ("llm", 1)


def test_an_unusable_reply_is_asked_again() -> None:
    pairs, method, requests = plan_with(["no idea", items(("Who founded YC?", "facts"))])
    assert pairs == [("Who founded YC?", "facts")]
    assert (method, requests) == ("llm", 2)


def test_three_failures_fall_back_to_the_offline_planner_with_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="citerag.plan.generators"):
        pairs, method, requests = plan_with(["not json", "{broken", '{"items": "nope"}'])
    assert requests == 3
    assert method == "offline (LLM failed)"
    assert [t for _, t in pairs] == ["facts", "facts", "facts"]
    assert pairs[1][0] == "What did the author do in 1996?"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "failed 3 times" in warnings[0].getMessage()


def test_unknown_tool_names_are_mapped_or_dropped(caplog: pytest.LogCaptureFixture) -> None:
    reply = items(
        ("What did he do in 1980?", "keyphrase_tool"),
        ("Show page 3", "page_filter_tool"),
        ("Summarize it", "Summary"),
        ("What is the weather?", "weather_api"),
    )
    with caplog.at_level(logging.WARNING, logger="citerag.plan.generators"):
        pairs, method, _ = plan_with([reply])
    assert pairs == [
        ("What did he do in 1980?", "facts"),
        ("Show page 3", "pages"),
        ("Summarize it", "summary"),
    ]
    assert method == "llm"
    assert any("weather_api" in r.getMessage() for r in caplog.records)


def test_only_unknown_tools_count_as_a_failed_attempt() -> None:
    pairs, method, requests = plan_with(
        [items(("x?", "weather")), items(("What did he do in 2019?", "facts"))]
    )
    assert pairs == [("What did he do in 2019?", "facts")] and requests == 2 and method == "llm"


def test_parse_and_tool_names() -> None:
    assert parse_plan('[{"sub_question": "a?", "tool_name": "facts"}]') is not None
    assert parse_plan('{"items": [{"question": "a?"}]}') is None
    assert tool_for("sections_tool", ["facts", "sections"]) == "sections"
    assert tool_for("fcats", ["facts", "pages"]) == "facts"
    assert tool_for("calculator", ["facts", "pages"]) is None


def test_json_is_found_behind_prose_brackets_fences_and_trailing_commas() -> None:
    from citerag.text.json_reply import loads_repaired

    assert loads_repaired('Sure [see below]: {"node_list": ["0001",],}') == {"node_list": ["0001"]}
    assert loads_repaired("```json\n[{'tool': 'facts'}]\n```") == [{"tool": "facts"}]
    assert loads_repaired("no json here") is None


def test_the_planner_reads_each_tools_declared_description_not_its_docstring() -> None:
    """Routing depends on the descriptions, so they are declared fields: a docstring can be
    reworded without moving a question to another tool, and a tool without one is refused."""
    tools = build_tools(cast(ToolContext, None))  # the engines only keep their context
    assert [tool.metadata.name for tool in tools] == ["facts", "pages", "summary", "sections"]
    for tool, engine in zip(tools, TOOL_ENGINES, strict=True):
        assert tool.metadata.description == engine.description
        assert engine.description not in " ".join((engine.__doc__ or "").split())
    with pytest.raises(TypeError, match="declares no `description` for the planner"):

        class Undescribed(ToolQueryEngine):
            name = "undescribed"
