"""The configured LLM (a LlamaIndex LLM) and the answerer that asks it for a cited answer.

The answerer returns the model's text as it came; mapping its citation markers onto the sources
is the caller's job (`citations.normalize_citations`), so that both LLM and extractive answers
pass through the same normalization.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.llms import LLM

from citerag.answer.prompts import SYSTEM_PROMPT, ContextSource, user_prompt
from citerag.errors import BackendUnavailable, ConfigError, LLMResponseError
from citerag.extras import require
from citerag.settings import Settings

MAX_RETRIES = 1
TEMPERATURE = 0.1
DEFAULT_MODELS = {
    "openai": "gpt-4o-mini",
    "anthropic": "claude-haiku-4-5",
    "gemini": "gemini-2.0-flash",
    "ollama": "llama3.1",
}
KEY_VARIABLES = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "openai_like": ("OPENAI_API_KEY",),
}
DEFAULT_ENDPOINTS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
    "ollama": "http://localhost:11434",
}
LOCAL_SERVER_KEY = "not-needed"  # OpenAI-compatible local servers ignore the key
_ROLES = {
    "system": MessageRole.SYSTEM,
    "user": MessageRole.USER,
    "assistant": MessageRole.ASSISTANT,
}


@dataclass(frozen=True)
class LLMResult:
    text: str
    model: str
    tokens_used: int


@dataclass(frozen=True)
class Connection:
    provider: str
    model: str
    api_key: str
    endpoint: str
    timeout_s: float
    max_tokens: int


class LLMProvider(Protocol):
    """The LLM seam: one provider's LlamaIndex `LLM` for a connection (`PROVIDERS` lists them:
    OpenAI, any OpenAI-compatible server, Anthropic, Gemini, Ollama)."""

    def __call__(self, connection: Connection, /) -> LLM: ...


def build_llm(settings: Settings, environ: Mapping[str, str] | None = None) -> LLM | None:
    """The LlamaIndex LLM that `settings` names, or None when no provider is configured."""
    if not settings.llm_provider:
        return None
    connection = _connection(settings, os.environ if environ is None else environ)
    try:
        return PROVIDERS[connection.provider](connection)
    except ConfigError:
        raise
    except Exception as error:
        raise _construction_error(error, connection) from error


def endpoint_of(settings: Settings) -> str:
    """Where the configured LLM is reached, for error messages."""
    return settings.llm_base_url or DEFAULT_ENDPOINTS.get(settings.llm_provider, "")


class LLMAnswerer:
    """Asks an LLM to answer a question from numbered sources, citing them as [N]."""

    def __init__(self, llm: LLM, endpoint: str = "", model: str = "") -> None:
        self._llm = llm
        self._endpoint = endpoint or "the configured LLM endpoint"
        self._model = model or str(getattr(llm, "model", "") or type(llm).__name__)

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMAnswerer | None:
        llm = build_llm(settings)
        if llm is None:
            return None
        return cls(llm, endpoint=endpoint_of(settings))

    @property
    def model(self) -> str:
        return self._model

    @property
    def llm(self) -> LLM:
        return self._llm

    def answer(self, question: str, sources: Sequence[ContextSource]) -> LLMResult:
        messages = [
            ChatMessage(role=MessageRole.SYSTEM, content=SYSTEM_PROMPT),
            ChatMessage(role=MessageRole.USER, content=user_prompt(question, sources)),
        ]
        response = self._chat(messages)
        text = (response.message.content or "").strip()
        if not text:
            raise LLMResponseError(
                f"The LLM ({self._model}) returned an empty answer; ask again or check the "
                "model's logs."
            )
        return LLMResult(text=text, model=self._model, tokens_used=tokens_used(response))

    def chat(self, messages: Sequence[tuple[str, str]]) -> str:
        """The model's reply text to `(role, content)` messages (roles "system", "user",
        "assistant"), for callers that need a plain conversation (tree search, summaries).
        Provider errors become the project's one-sentence errors."""
        return self.chat_with_usage(messages)[0]

    def chat_with_usage(self, messages: Sequence[tuple[str, str]]) -> tuple[str, int]:
        """`chat`'s reply text, and the tokens the provider reported for it (0 when none)."""
        chat_messages = [ChatMessage(role=_ROLES[role], content=text) for role, text in messages]
        response = self._chat(chat_messages)
        return str(response.message.content or ""), tokens_used(response)

    def _chat(self, messages: list[ChatMessage]) -> ChatResponse:
        try:
            return self._llm.chat(messages)
        except Exception as error:
            raise _translate(error, self._endpoint, self._model) from error


def tokens_used(response: ChatResponse) -> int:
    """Total tokens from the provider's usage report in the raw response; 0 when absent."""
    raw = response.raw
    usage = _field(raw, "usage")
    if usage is not None:
        total = _field(usage, "total_tokens")
        if total is None:
            total = (_field(usage, "input_tokens") or 0) + (_field(usage, "output_tokens") or 0)
        return int(total or 0)
    # Ollama reports counts at the top level of its reply.
    return int((_field(raw, "prompt_eval_count") or 0) + (_field(raw, "eval_count") or 0))


def _field(container: Any, name: str) -> Any:
    if container is None:
        return None
    if isinstance(container, Mapping):
        return container.get(name)
    return getattr(container, name, None)


def _connection(settings: Settings, environ: Mapping[str, str]) -> Connection:
    provider = settings.llm_provider
    model = settings.llm_model or DEFAULT_MODELS.get(provider, "")
    if not model:
        raise ConfigError(
            f"LLM provider {provider!r} has no default model; set LLM_MODEL (or LLM_MODEL in "
            "config.py) to the model the server serves."
        )
    if provider == "openai_like" and not settings.llm_base_url:
        raise ConfigError(
            "LLM provider 'openai_like' needs a server address; set LLM_BASE_URL to its /v1 URL."
        )
    return Connection(
        provider=provider,
        model=model,
        api_key=_api_key(settings, environ),
        endpoint=endpoint_of(settings),
        timeout_s=float(settings.llm_timeout_s),
        max_tokens=settings.llm_max_tokens,
    )


def _api_key(settings: Settings, environ: Mapping[str, str]) -> str:
    provider = settings.llm_provider
    if settings.llm_api_key:
        return settings.llm_api_key
    variables = KEY_VARIABLES.get(provider, ())
    for variable in variables:
        if environ.get(variable):
            return environ[variable]
    if provider in ("ollama", "openai_like"):
        return LOCAL_SERVER_KEY
    raise ConfigError(
        f"LLM provider {provider!r} needs an API key; set LLM_API_KEY or {variables[0]}."
    )


def _openai(c: Connection) -> LLM:
    require("llama_index.llms.openai", "llms", "llama-index-llms-openai")
    from llama_index.llms.openai import OpenAI

    return OpenAI(
        model=c.model,
        api_key=c.api_key,
        api_base=c.endpoint,
        timeout=c.timeout_s,
        max_retries=MAX_RETRIES,
        max_tokens=c.max_tokens,
        temperature=TEMPERATURE,
    )


def _openai_like(c: Connection) -> LLM:
    require("llama_index.llms.openai_like", "llms", "llama-index-llms-openai-like")
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(
        model=c.model,
        api_key=c.api_key,
        api_base=c.endpoint,
        is_chat_model=True,
        timeout=c.timeout_s,
        max_retries=MAX_RETRIES,
        max_tokens=c.max_tokens,
        temperature=TEMPERATURE,
    )


def _anthropic(c: Connection) -> LLM:
    require("llama_index.llms.anthropic", "llms", "llama-index-llms-anthropic")
    from llama_index.llms.anthropic import Anthropic

    return Anthropic(
        model=c.model,
        api_key=c.api_key,
        base_url=c.endpoint,
        timeout=c.timeout_s,
        max_retries=MAX_RETRIES,
        max_tokens=c.max_tokens,
        temperature=TEMPERATURE,
    )


def _gemini(c: Connection) -> LLM:
    require("llama_index.llms.google_genai", "llms", "llama-index-llms-google-genai")
    from llama_index.llms.google_genai import GoogleGenAI

    return GoogleGenAI(
        model=c.model,
        api_key=c.api_key,
        max_tokens=c.max_tokens,
        temperature=TEMPERATURE,
    )


def _ollama(c: Connection) -> LLM:
    require("llama_index.llms.ollama", "llms", "llama-index-llms-ollama")
    from llama_index.llms.ollama import Ollama

    return Ollama(
        model=c.model,
        base_url=c.endpoint,
        request_timeout=c.timeout_s,
        temperature=TEMPERATURE,
        additional_kwargs={"num_predict": c.max_tokens},
    )


PROVIDERS: dict[str, LLMProvider] = {
    "openai": _openai,
    "openai_like": _openai_like,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "ollama": _ollama,
}


def _construction_error(error: Exception, c: Connection) -> Exception:
    if _is_connection_error(error):
        return _translate(error, c.endpoint, c.model)
    return ConfigError(
        f"The {c.provider} LLM could not be set up ({type(error).__name__}: {_short(error)}); "
        "check LLM_MODEL and the provider settings."
    )


def _short(error: Exception, limit: int = 160) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _translate(error: Exception, endpoint: str, model: str) -> Exception:
    """A provider's exception as the error a user can act on."""
    if _is_connection_error(error):
        return BackendUnavailable(
            f"The LLM endpoint {endpoint} could not be reached ({type(error).__name__}); start "
            "the server or fix LLM_BASE_URL."
        )
    status = getattr(error, "status_code", None)
    if status in (401, 403):
        return ConfigError(
            f"The LLM endpoint {endpoint} rejected the API key (HTTP {status}); set a valid "
            "LLM_API_KEY."
        )
    if status == 404:
        return ConfigError(
            f"The LLM endpoint {endpoint} answered HTTP 404 for model {model!r}; check that "
            "LLM_BASE_URL is the API root (often ending in /v1) and LLM_MODEL a model it serves."
        )
    if isinstance(status, int):
        return BackendUnavailable(
            f"The LLM endpoint {endpoint} answered HTTP {status}; try again later or check the "
            "server."
        )
    return LLMResponseError(
        f"The LLM call to {endpoint} failed ({type(error).__name__}: {_short(error)}); check the "
        "provider settings."
    )


# Provider SDK exceptions that mean "not reached", matched by name so no SDK must be imported.
_CONNECTION_ERROR_NAMES = frozenset(
    {"APIConnectionError", "APITimeoutError", "ServiceUnavailable", "RetryError"}
)


def _is_connection_error(error: BaseException) -> bool:
    if isinstance(error, ConnectionError | TimeoutError):
        return True
    import httpx

    if isinstance(error, httpx.TransportError):
        return True
    return any(cls.__name__ in _CONNECTION_ERROR_NAMES for cls in type(error).__mro__)
