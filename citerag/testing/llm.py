"""The contract of the LLM seam (`LLMProvider` in citerag.llm.connection) against a loopback
OpenAI-compatible server: real client code, scripted replies.

Subclass `LLMProviderContract`, implement `settings_for(base_url)` (the provider's settings
pointing at that /v1 URL) and give the class an `llm_server` fixture: a server started on
127.0.0.1 that answers every chat request with `REPLY` and records each request's JSON body.
"""

from __future__ import annotations

import socket
import time
from typing import Any, Protocol

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM

from citerag.answer.contract import Source
from citerag.answer.llm_answer import LLMAnswerer
from citerag.errors import BackendUnavailable
from citerag.llm.connection import build_llm
from citerag.settings import LlmSettings

REPLY = "Revenue grew 24% [1]."
SOURCE = Source(
    id="c1",
    document_name="x.pdf",
    page_number=2,
    title="Results",
    score=0.9,
    citation_number=1,
    content="Revenue grew 24% to $25.0 billion in 2020.",
)


class LoopbackServer(Protocol):
    @property
    def base_url(self) -> str: ...

    @property
    def requests(self) -> list[dict[str, Any]]: ...


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LLMProviderContract:
    def settings_for(self, base_url: str) -> LlmSettings:
        raise NotImplementedError("give the provider's settings for a /v1 base URL")

    def built(self, base_url: str) -> LLM:
        llm = build_llm(self.settings_for(base_url), environ={})
        assert llm is not None
        return llm

    def test_the_provider_builds_a_llamaindex_llm(self, llm_server: LoopbackServer) -> None:
        assert isinstance(self.built(llm_server.base_url), LLM)

    def test_chat_reaches_the_endpoint_and_returns_its_reply(
        self, llm_server: LoopbackServer
    ) -> None:
        llm = self.built(llm_server.base_url)
        response = llm.chat([ChatMessage(role=MessageRole.USER, content="Say it.")])
        assert response.message.content == REPLY
        request = llm_server.requests[-1]
        assert request["model"] == self.settings_for(llm_server.base_url).llm_model
        assert "Say it." in str(request["messages"])

    def test_the_answerer_sends_the_sources_and_keeps_the_citations(
        self, llm_server: LoopbackServer
    ) -> None:
        answerer = LLMAnswerer.from_settings(self.settings_for(llm_server.base_url))
        assert answerer is not None
        result = answerer.answer("How much did revenue grow?", [SOURCE])
        assert result.text == REPLY
        prompt = str(llm_server.requests[-1]["messages"])
        assert SOURCE.content in prompt and "How much did revenue grow?" in prompt

    def test_a_closed_port_is_backend_unavailable_quickly(self) -> None:
        port = closed_port()
        answerer = LLMAnswerer.from_settings(self.settings_for(f"http://127.0.0.1:{port}/v1"))
        assert answerer is not None
        started = time.monotonic()
        with pytest.raises(BackendUnavailable, match=f"127.0.0.1:{port}"):
            answerer.answer("q?", [SOURCE])
        assert time.monotonic() - started < 10
