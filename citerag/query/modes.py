"""How a question is answered, by mode: the one dispatch behind `Engine.answer`, which the CLI
(`query --mode`), the HTTP API (`mode`) and the MCP tools reach with an `AnswerRequest`.

- `hybrid`: sub-questions planned and routed to the facts/pages/summary/sections tools.
- `single`: one retrieval over the whole question.
- `tree`: the section-tree tool (`citerag.tools.tree_answer`) over the best files.

All three compose their answer with the same synthesizer (`citerag.answer.synthesizer`).
"""

from __future__ import annotations

from typing import Protocol

from citerag.answer.contract import AnswerResult
from citerag.llm.llm_chat import LLMChat
from citerag.query.conversation import condense_turn
from citerag.query.request import ALIASES, MODES, AnswerRequest, Mode

__all__ = ["ALIASES", "MODES", "AnswerRequest", "Mode", "ModeSteps", "answer_by_mode"]


class ModeSteps(Protocol):
    """What each mode runs on the engine, given a request whose question stands alone."""

    @property
    def answerer(self) -> LLMChat | None: ...

    def retrieval_answer(self, request: AnswerRequest) -> AnswerResult: ...

    def sections_answer(self, request: AnswerRequest) -> AnswerResult: ...


def answer_by_mode(steps: ModeSteps, request: AnswerRequest) -> AnswerResult:
    """The answer contract for `request`, the way its mode answers it; with earlier turns, the
    question condensed from them first, reported in the metadata
    (`citerag.query.conversation`)."""
    if not request.history:
        return _dispatch(steps, request)
    condensed = condense_turn(steps.answerer, request.history, request.question)
    result = _dispatch(steps, request.asking(condensed.question))
    return condensed.reported_in(result)


def _dispatch(steps: ModeSteps, request: AnswerRequest) -> AnswerResult:
    if request.mode is Mode.TREE:
        return steps.sections_answer(request)
    return steps.retrieval_answer(request)
