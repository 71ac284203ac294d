"""The LLM answerer against a local OpenAI-compatible server: real client code, scripted replies."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from fake_openai_server import FakeOpenAIServer, ScriptedReply, running_server

from citerag.answer.citations import normalize_citations
from citerag.answer.contract import Source
from citerag.answer.llm_answer import LLMAnswerer
from citerag.errors import BackendUnavailable, ConfigError, LLMResponseError
from citerag.llm.connection import PROVIDERS, build_llm
from citerag.settings import LlmSettings
from citerag.testing.llm import REPLY, SOURCE, LLMProviderContract

SOURCES = [
    SOURCE,
    Source(
        id="c2",
        document_name="x.pdf",
        page_number=5,
        title="Risks",
        score=0.7,
        citation_number=2,
        content="Competition for content may increase costs.",
    ),
]


def _answerer(base_url: str, model: str = "fake-model") -> LLMAnswerer:
    settings = LlmSettings(llm_provider="openai_like", llm_model=model, llm_base_url=base_url)
    answerer = LLMAnswerer.from_settings(settings)
    assert answerer is not None
    return answerer


def test_request_carries_numbered_sources_and_question() -> None:
    with running_server([ScriptedReply("Revenue grew 24% [1].")]) as server:
        _answerer(server.base_url).answer("How much did revenue grow?", SOURCES)
    assert len(server.requests) == 1
    request = server.requests[0]
    assert request["model"] == "fake-model"
    prompt = "\n".join(str(m["content"]) for m in request["messages"])
    assert "[1] x.pdf, page 2" in prompt and "Results" in prompt
    assert "[2] x.pdf, page 5" in prompt and "Risks" in prompt
    assert "Revenue grew 24% to $25.0 billion in 2020." in prompt
    assert "How much did revenue grow?" in prompt


def test_doc_page_markers_in_reply_become_citation_numbers() -> None:
    reply = "Revenue grew 24% <doc=x.pdf;page=2>, while costs may rise <doc=x.pdf;page=5>."
    with running_server([ScriptedReply(reply, prompt_tokens=120, completion_tokens=30)]) as srv:
        result = _answerer(srv.base_url).answer("What happened?", SOURCES)
    assert normalize_citations(result.text, SOURCES) == (
        "Revenue grew 24% [1], while costs may rise [2]."
    )
    assert result.tokens_used == 150
    assert result.model == "fake-model"


def test_reply_without_usage_counts_zero_tokens() -> None:
    with running_server([ScriptedReply("An answer [1].", report_usage=False)]) as server:
        result = _answerer(server.base_url).answer("q?", SOURCES)
    assert result.text == "An answer [1]."
    assert result.tokens_used == 0


def test_empty_reply_raises_llm_response_error() -> None:
    with running_server([ScriptedReply("   ")]) as server, pytest.raises(LLMResponseError):
        _answerer(server.base_url).answer("q?", SOURCES)


def test_closed_port_raises_backend_unavailable_quickly() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(BackendUnavailable, match=f"127.0.0.1:{port}"):
        _answerer(f"http://127.0.0.1:{port}/v1").answer("q?", SOURCES)
    assert time.monotonic() - started < 10


def test_no_provider_builds_no_llm() -> None:
    assert build_llm(LlmSettings(llm_provider="")) is None


def test_hosted_provider_without_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        build_llm(LlmSettings(llm_provider="openai"), environ={})


def test_provider_key_is_read_from_its_own_variable() -> None:
    llm = build_llm(LlmSettings(llm_provider="anthropic"), environ={"ANTHROPIC_API_KEY": "k"})
    assert llm is not None and getattr(llm, "model", "").startswith("claude")


def test_openai_like_needs_a_base_url_and_a_model() -> None:
    with pytest.raises(ConfigError, match="LLM_BASE_URL"):
        build_llm(LlmSettings(llm_provider="openai_like", llm_model="m"), environ={})
    with pytest.raises(ConfigError, match="LLM_MODEL"):
        build_llm(LlmSettings(llm_provider="openai_like", llm_base_url="http://127.0.0.1:1/v1"))


def test_wrong_base_path_is_reported_as_a_config_error() -> None:
    with running_server() as server, pytest.raises(ConfigError, match="HTTP 404"):
        _answerer(f"http://127.0.0.1:{server.port}/wrong").answer("q?", SOURCES)


@pytest.fixture
def llm_server() -> Iterator[FakeOpenAIServer]:
    with running_server(respond=lambda _body: ScriptedReply(REPLY)) as server:
        yield server


class TestOpenAILikeProvider(LLMProviderContract):
    def settings_for(self, base_url: str) -> LlmSettings:
        return LlmSettings(
            llm_provider="openai_like", llm_model="fake-model", llm_base_url=base_url
        )


class TestOpenAIProvider(LLMProviderContract):
    def settings_for(self, base_url: str) -> LlmSettings:
        return LlmSettings(
            llm_provider="openai", llm_model="gpt-4o-mini", llm_api_key="k", llm_base_url=base_url
        )


def skip_without_its_own_server(provider: str, protocol: str) -> None:
    pytest.skip(
        f"{provider} speaks {protocol}, not the OpenAI chat completions the loopback server "
        "answers: its contract runs where such a server is reachable"
    )


class TestAnthropicProvider(LLMProviderContract):
    @pytest.fixture(autouse=True)
    def _needs_its_own_server(self) -> None:
        skip_without_its_own_server("anthropic", "Anthropic's Messages API")

    def settings_for(self, base_url: str) -> LlmSettings:
        return LlmSettings(llm_provider="anthropic", llm_api_key="k", llm_base_url=base_url)


class TestGeminiProvider(LLMProviderContract):
    @pytest.fixture(autouse=True)
    def _needs_its_own_server(self) -> None:
        skip_without_its_own_server("gemini", "Google's GenAI API (and takes no base URL)")

    def settings_for(self, base_url: str) -> LlmSettings:
        return LlmSettings(llm_provider="gemini", llm_api_key="k", llm_base_url=base_url)


class TestOllamaProvider(LLMProviderContract):
    @pytest.fixture(autouse=True)
    def _needs_its_own_server(self) -> None:
        skip_without_its_own_server("ollama", "Ollama's /api/chat")

    def settings_for(self, base_url: str) -> LlmSettings:
        return LlmSettings(llm_provider="ollama", llm_model="llama3", llm_base_url=base_url)


def test_every_provider_has_a_contract_class() -> None:
    tested = {"openai_like", "openai", "anthropic", "gemini", "ollama"}
    assert set(PROVIDERS) == tested
