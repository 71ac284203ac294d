"""The configured LLM as a LlamaIndex `LLM`: provider, model, key and endpoint from settings,
and a provider's exception turned into the one-sentence error a user can act on."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from llama_index.core.base.llms.types import ChatResponse
from llama_index.core.llms import LLM

from citerag.errors import BackendUnavailable, ConfigError, LLMResponseError
from citerag.extras import require
from citerag.settings import LlmSettings

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


@dataclass(frozen=True)
class LLMConnection:
    """Where and how the configured LLM is reached (also what LangExtract is given)."""

    provider: str
    model: str
    api_key: str
    endpoint: str
    timeout_s: float
    max_tokens: int


class LLMProvider(Protocol):
    """The LLM seam: one provider's LlamaIndex `LLM` for a connection (`PROVIDERS` lists them:
    OpenAI, any OpenAI-compatible server, Anthropic, Gemini, Ollama)."""

    def __call__(self, connection: LLMConnection, /) -> LLM: ...


def build_llm(settings: LlmSettings, environ: Mapping[str, str] | None = None) -> LLM | None:
    """The LlamaIndex LLM that `settings` names, or None when no provider is configured."""
    if not settings.llm_provider:
        return None
    connection = connection_of(settings, os.environ if environ is None else environ)
    try:
        return PROVIDERS[connection.provider](connection)
    except ConfigError:
        raise
    except Exception as error:
        raise _construction_error(error, connection) from error


def endpoint_of(settings: LlmSettings) -> str:
    """Where the configured LLM is reached, for error messages."""
    return settings.llm_base_url or DEFAULT_ENDPOINTS.get(settings.llm_provider, "")


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


def connection_of(settings: LlmSettings, environ: Mapping[str, str]) -> LLMConnection:
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
    return LLMConnection(
        provider=provider,
        model=model,
        api_key=_api_key(settings, environ),
        endpoint=endpoint_of(settings),
        timeout_s=float(settings.llm_timeout_s),
        max_tokens=settings.llm_max_tokens,
    )


def _api_key(settings: LlmSettings, environ: Mapping[str, str]) -> str:
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


def _provider_llm(integration: str, class_name: str, **kwargs: object) -> LLM:
    """`class_name` from LlamaIndex's `llama_index.llms.<integration>` package, built."""
    package = "llama-index-llms-" + integration.replace("_", "-")
    module = require(f"llama_index.llms.{integration}", "llms", package)
    llm_class: Callable[..., LLM] = getattr(module, class_name)
    return llm_class(**kwargs)


def _sampling(c: LLMConnection) -> dict[str, object]:
    return {"model": c.model, "temperature": TEMPERATURE}


def _hosted(c: LLMConnection) -> dict[str, object]:
    """What the OpenAI-style and Anthropic clients are given alike."""
    return {
        "api_key": c.api_key,
        "timeout": c.timeout_s,
        "max_retries": MAX_RETRIES,
        "max_tokens": c.max_tokens,
        **_sampling(c),
    }


def _openai(c: LLMConnection) -> LLM:
    return _provider_llm("openai", "OpenAI", api_base=c.endpoint, **_hosted(c))


def _openai_like(c: LLMConnection) -> LLM:
    return _provider_llm(
        "openai_like", "OpenAILike", api_base=c.endpoint, is_chat_model=True, **_hosted(c)
    )


def _anthropic(c: LLMConnection) -> LLM:
    return _provider_llm("anthropic", "Anthropic", base_url=c.endpoint, **_hosted(c))


def _gemini(c: LLMConnection) -> LLM:
    return _provider_llm(
        "google_genai", "GoogleGenAI", api_key=c.api_key, max_tokens=c.max_tokens, **_sampling(c)
    )


def _ollama(c: LLMConnection) -> LLM:
    return _provider_llm(
        "ollama",
        "Ollama",
        base_url=c.endpoint,
        request_timeout=c.timeout_s,
        additional_kwargs={"num_predict": c.max_tokens},
        **_sampling(c),
    )


PROVIDERS: dict[str, LLMProvider] = {
    "openai": _openai,
    "openai_like": _openai_like,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "ollama": _ollama,
}


def _construction_error(error: Exception, c: LLMConnection) -> Exception:
    if _is_connection_error(error):
        return translate_error(error, c.endpoint, c.model)
    return ConfigError(
        f"The {c.provider} LLM could not be set up ({type(error).__name__}: {_short(error)}); "
        "check LLM_MODEL and the provider settings."
    )


def _short(error: Exception, limit: int = 160) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def translate_error(error: Exception, endpoint: str, model: str) -> Exception:
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
