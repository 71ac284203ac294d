"""The answerer that asks the configured LLM for a cited answer.

The answerer returns the model's text as it came; mapping its citation markers onto the sources
is the caller's job (`citations.normalize_citations`), so that both LLM and extractive answers
pass through the same normalization.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llama_index.core.base.llms.types import ChatMessage, MessageRole

from citerag.answer.prompts import SYSTEM_PROMPT, ContextSource, user_prompt
from citerag.errors import LLMResponseError
from citerag.llm.connection import tokens_used
from citerag.llm.llm_chat import LLMChat


@dataclass(frozen=True)
class LLMResult:
    text: str
    model: str
    tokens_used: int


class LLMAnswerer(LLMChat):
    """Asks an LLM to answer a question from numbered sources, citing them as [N]."""

    def answer(self, question: str, sources: Sequence[ContextSource]) -> LLMResult:
        messages = [
            ChatMessage(role=MessageRole.SYSTEM, content=SYSTEM_PROMPT),
            ChatMessage(role=MessageRole.USER, content=user_prompt(question, sources)),
        ]
        response = self.chat_messages(messages)
        text = (response.message.content or "").strip()
        if not text:
            raise LLMResponseError(
                f"The LLM ({self.model}) returned an empty answer; ask again or check the "
                "model's logs."
            )
        return LLMResult(text=text, model=self.model, tokens_used=tokens_used(response))
