"""A plain conversation with the configured LLM: `(role, content)` messages in, reply text out,
a provider's exception turned into the project's one-sentence error."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Self

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.llms import LLM

from citerag.llm.connection import build_llm, endpoint_of, tokens_used, translate_error
from citerag.settings import LlmSettings

Chat = Callable[[list[tuple[str, str]]], str]  # [(role, content)] -> reply text

_ROLES = {
    "system": MessageRole.SYSTEM,
    "user": MessageRole.USER,
    "assistant": MessageRole.ASSISTANT,
}


class LLMChat:
    """The configured LLM, for callers that need a plain conversation (tree search, summaries,
    question condensing)."""

    def __init__(self, llm: LLM, endpoint: str = "", model: str = "") -> None:
        self.llm = llm
        self.model = model or str(getattr(llm, "model", "") or type(llm).__name__)
        self._endpoint = endpoint or "the configured LLM endpoint"

    @classmethod
    def from_settings(cls, settings: LlmSettings) -> Self | None:
        """The configured LLM, or None when no provider is configured."""
        llm = build_llm(settings)
        if llm is None:
            return None
        return cls(llm, endpoint=endpoint_of(settings))

    def chat(self, messages: Sequence[tuple[str, str]]) -> str:
        """The model's reply text to `(role, content)` messages (roles "system", "user",
        "assistant")."""
        return self.chat_with_usage(messages)[0]

    def chat_with_usage(self, messages: Sequence[tuple[str, str]]) -> tuple[str, int]:
        """`chat`'s reply text, and the tokens the provider reported for it (0 when none)."""
        chat_messages = [ChatMessage(role=_ROLES[role], content=text) for role, text in messages]
        response = self.chat_messages(chat_messages)
        return str(response.message.content or ""), tokens_used(response)

    def chat_messages(self, messages: list[ChatMessage]) -> ChatResponse:
        try:
            return self.llm.chat(messages)
        except Exception as error:
            raise translate_error(error, self._endpoint, self.model) from error
