"""Embeddings chosen by configuration: the local SentenceTransformer (`Embedder`, the default), or
a hosted model through LlamaIndex's embedding packages (`EMBEDDING_PROVIDER=openai|ollama`).

A hosted model is wrapped as an `Embedder` (same `embed`, `dim`, `load`, `model_id`), so the
ingest pipeline, retrieval and highlights use it unchanged; its vectors are normalized float32
like the local model's. Its dimension is asked of the endpoint once (one short text). A failed
call is one sentence naming the endpoint and model; a reply of the wrong shape or with
non-finite numbers is refused rather than stored.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from typing import NoReturn

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding

from citerag.embed.embedder import Embedder
from citerag.errors import BackendUnavailable, ConfigError, LLMResponseError
from citerag.extras import require
from citerag.settings import EmbeddingSettings

log = logging.getLogger(__name__)
DEFAULT_HOSTED_MODELS = {"openai": "text-embedding-3-small", "ollama": "nomic-embed-text"}
DEFAULT_ENDPOINTS = {"openai": "https://api.openai.com/v1", "ollama": "http://localhost:11434"}
HOSTED_BATCH = 64  # texts per request
HOSTED_RETRIES = 1
HOSTED_TIMEOUT_S = 60.0
_PROBE = "dimension probe"


class HostedEmbedder(Embedder):
    """A LlamaIndex `BaseEmbedding` behind the `Embedder` interface."""

    def __init__(self, embedding: BaseEmbedding, model_id: str, endpoint: str) -> None:
        super().__init__()
        self._embedding = embedding
        self._model_id = model_id
        self._endpoint = endpoint
        self._dim: int | None = None
        self._dim_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def embedding(self) -> BaseEmbedding:
        return self._embedding

    @property
    def model(self) -> NoReturn:
        raise ConfigError(
            f"Reranker 'maxsim' needs a local model's token vectors, and the embeddings are "
            f"hosted ({self._model_id}); choose reranker 'sentence', 'colbert' or 'none'."
        )

    def load(self) -> None:
        """Ask the endpoint for the dimension now (a wrong key or address fails here)."""
        _ = self.dim

    @property
    def dim(self) -> int:
        if self._dim is None:
            with self._dim_lock:
                if self._dim is None:
                    self._dim = int(self._vectors([_PROBE]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Normalized float32 vectors, one row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._vectors(texts)
        if vectors.shape[1] != self.dim:
            raise LLMResponseError(
                f"The embedding endpoint returned {vectors.shape[1]}-dimensional vectors from "
                f"{self._model_id}, which gave {self.dim} before; check the model setting."
            )
        return vectors

    def _vectors(self, texts: Sequence[str]) -> np.ndarray:
        try:
            raw = self._embedding.get_text_embedding_batch(list(texts))
        except Exception as error:  # noqa: BLE001 - any client failure is the same sentence
            raise BackendUnavailable(
                f"The embedding endpoint {self._endpoint} failed for {self._model_id} "
                f"({_short(error)}); check EMBEDDING_BASE_URL, the key and EMBEDDING_MODEL."
            ) from error
        return normalized(raw, len(texts), self._model_id)


def normalized(raw: object, expected_rows: int, model_id: str) -> np.ndarray:
    """The reply as unit-length float32 rows, or an LLMResponseError when it is not one finite,
    non-zero vector per text."""
    try:
        vectors = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError):
        vectors = np.zeros((0, 0), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != expected_rows or vectors.shape[1] == 0:
        raise LLMResponseError(
            f"The embedding endpoint's reply for {model_id} is not one vector per text; check "
            "that EMBEDDING_MODEL names an embedding model."
        )
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if not np.all(np.isfinite(vectors)) or np.any(norms == 0):
        raise LLMResponseError(
            f"The embedding endpoint returned empty or non-finite vectors for {model_id}; "
            "nothing was stored."
        )
    return np.asarray(vectors / norms, dtype=np.float32)


def build_embedder(
    settings: EmbeddingSettings, environ: Mapping[str, str] | None = None
) -> Embedder:
    """The embedder `EMBEDDING_PROVIDER` names: local (a SentenceTransformer folder, MiniLM by
    default) or hosted (OpenAI, Ollama) through LlamaIndex."""
    provider = settings.embedding_provider
    if provider == "local":
        return Embedder(settings.embedding_model, settings.embedding_backend)
    env = os.environ if environ is None else environ
    model = settings.embedding_model or DEFAULT_HOSTED_MODELS[provider]
    endpoint = settings.embedding_base_url or DEFAULT_ENDPOINTS[provider]
    if provider == "openai":
        embedding = _openai(model, settings.embedding_base_url, _openai_key(settings, env))
    else:
        embedding = _ollama(model, endpoint)
    log.info("embeddings: %s model %s at %s", provider, model, endpoint)
    return HostedEmbedder(embedding, f"{provider}:{model}", endpoint)


def _openai_key(settings: EmbeddingSettings, env: Mapping[str, str]) -> str:
    key = settings.embedding_api_key or env.get("OPENAI_API_KEY", "")
    if not key:
        raise ConfigError(
            "EMBEDDING_PROVIDER 'openai' needs an API key; set EMBEDDING_API_KEY or OPENAI_API_KEY."
        )
    return key


def _openai(model: str, base_url: str, key: str) -> BaseEmbedding:
    require("llama_index.embeddings.openai", "llms", "llama-index-embeddings-openai")
    from llama_index.embeddings.openai import OpenAIEmbedding, OpenAIEmbeddingModelType

    known = [m.value for m in OpenAIEmbeddingModelType]
    if model not in known:
        raise ConfigError(
            f"EMBEDDING_MODEL {model!r} is not an OpenAI embedding model; use one of "
            f"{', '.join(known)}."
        )
    return OpenAIEmbedding(
        model=model,
        api_key=key,
        api_base=base_url or None,
        embed_batch_size=HOSTED_BATCH,
        max_retries=HOSTED_RETRIES,
        timeout=HOSTED_TIMEOUT_S,
    )


def _ollama(model: str, endpoint: str) -> BaseEmbedding:
    require("llama_index.embeddings.ollama", "llms", "llama-index-embeddings-ollama")
    from llama_index.embeddings.ollama import OllamaEmbedding

    return OllamaEmbedding(
        model_name=model,
        base_url=endpoint,
        embed_batch_size=HOSTED_BATCH,
        client_kwargs={"timeout": HOSTED_TIMEOUT_S},
    )


def _short(error: Exception, limit: int = 160) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:limit]
