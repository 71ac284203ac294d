"""Typed settings built from `config.py`, with environment variables taking precedence."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from citerag.errors import ConfigError

RERANKERS = ("auto", "colbert", "maxsim", "sentence", "none")
PARSERS = ("pymupdf", "mineru")
# MinerU 4.x's public tiers (mineru.parser.tier): "flash" needs no model weights, the others do.
MINERU_TIERS = ("flash", "basic", "standard", "advanced")
LLM_PROVIDERS = ("", "openai", "anthropic", "gemini", "ollama", "openai_like")
METADATA = ("none", "entity", "langextract", "both")  # enrichment at ingest (citerag/enrich)
KEYWORD_BACKENDS = ("auto", "bm25s", "milvus")  # citerag/store/keywords.py
EMBEDDING_PROVIDERS = ("local", "openai", "ollama")  # citerag/embed/providers.py
EMBEDDING_BACKENDS = ("auto", "torch", "onnx", "onnx-int8")  # citerag/embed/onnx_backend.py

# Settings field -> environment variable that overrides it.
ENV_OVERRIDES = {
    "storage_dir": "RAG_STORAGE_DIR",
    "milvus_uri": "MILVUS_URI",
    "milvus_token": "MILVUS_TOKEN",
    "mongodb_uri": "MONGODB_URI",
    "mongodb_database": "MONGODB_DATABASE",
    "embedding_model": "EMBEDDING_MODEL",
    "embedding_provider": "EMBEDDING_PROVIDER",
    "embedding_base_url": "EMBEDDING_BASE_URL",
    "embedding_api_key": "EMBEDDING_API_KEY",
    "embedding_backend": "EMBEDDING_BACKEND",
    "sentence_vectors": "SENTENCE_VECTORS",
    "colbert_checkpoint": "COLBERT_CHECKPOINT",
    "llm_provider": "LLM_PROVIDER",
    "llm_model": "LLM_MODEL",
    "llm_base_url": "LLM_BASE_URL",
    "llm_api_key": "LLM_API_KEY",
    "llm_timeout_s": "LLM_TIMEOUT_S",
    "vision_model": "VISION_MODEL",
    "parser": "RAG_PARSER",
    "reranker": "RAG_RERANKER",
    "mineru_tier": "MINERU_TIER",
    "metadata": "RAG_METADATA",
    "gliner_model": "GLINER_MODEL",
    "api_key": "RAG_API_KEY",
    "cors_origins": "RAG_CORS_ORIGINS",
    "max_upload_mb": "RAG_MAX_UPLOAD_MB",
    "keyword_backend": "RAG_KEYWORD_BACKEND",
}


@dataclass(frozen=True)
class Settings:
    storage_dir: Path = Path("storage")
    chunk_size: int = 1024
    chunk_overlap: int = 200
    parser: str = "pymupdf"
    mineru_tier: str = "flash"
    similarity_top_k_fusion: int = 35
    rrf_k: int = 10
    fusion_top_n: int = 25
    rerank_top_n: int = 10
    page_weight: float = 1.0
    filing_keyword_weight: float = 2.0
    reranker: str = "auto"
    highlights_per_source: int = 3
    llm_max_tokens: int = 1024
    tree_summary_workers: int = 4  # LLM section summaries asked at once at ingest
    milvus_uri: str = ""
    milvus_token: str = ""
    mongodb_uri: str = ""
    mongodb_database: str = "citerag"
    embedding_model: str = ""  # local: a SentenceTransformer folder; hosted: the model's name
    embedding_provider: str = "local"  # "local", "openai" or "ollama"
    embedding_base_url: str = ""  # hosted: the endpoint (default: the provider's own)
    embedding_api_key: str = ""  # hosted: the key (default: the provider's variable)
    embedding_backend: str = "auto"  # "auto" (ONNX on CPU), "torch", "onnx", "onnx-int8"
    sentence_vectors: str = "separate"  # "separate" or "pooled" (ingest/vectors.py)
    colbert_checkpoint: str = ""
    llm_provider: str = ""
    llm_model: str = ""
    llm_base_url: str = ""
    llm_api_key: str = ""
    llm_timeout_s: int = 60
    vision_model: str = ""  # the LLM provider's vision-capable model: figure descriptions
    metadata: str = "none"
    gliner_model: str = ""  # a local GLiNER folder (or a hub id already in the local cache)
    api_key: str = ""  # the HTTP API's key; empty: no key needed
    cors_origins: str = ""  # comma-separated origins the HTTP API allows; "*" for any
    max_upload_mb: float = 50.0  # the largest PDF the HTTP API accepts
    keyword_backend: str = "auto"  # "auto", "bm25s" (files) or "milvus" (its BM25 function)
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if self.chunk_size < 32:
            raise ConfigError(f"chunk_size is {self.chunk_size}; set it to 32 tokens or more.")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError(
                f"chunk_overlap ({self.chunk_overlap}) must be at least 0 and below chunk_size "
                f"({self.chunk_size}); fix it in config.py."
            )
        for name in (
            "similarity_top_k_fusion",
            "rrf_k",
            "fusion_top_n",
            "rerank_top_n",
            "tree_summary_workers",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be a positive integer; fix it in config.py.")
        if self.max_upload_mb <= 0:
            raise ConfigError(f"max_upload_mb is {self.max_upload_mb}; set it above 0.")
        if self.page_weight < 0:
            raise ConfigError(f"page_weight is {self.page_weight}; use 0 (off) or more.")
        if self.filing_keyword_weight <= 0:
            raise ConfigError(
                f"filing_keyword_weight is {self.filing_keyword_weight}; use a number above 0 "
                "(1 counts keyword and vector rankings alike)."
            )
        _require_choice("reranker", self.reranker, RERANKERS)
        _require_choice("parser", self.parser, PARSERS)
        _require_choice("mineru_tier", self.mineru_tier, MINERU_TIERS)
        _require_choice("llm_provider", self.llm_provider, LLM_PROVIDERS)
        _require_choice("metadata", self.metadata, METADATA)
        _require_choice("keyword_backend", self.keyword_backend, KEYWORD_BACKENDS)
        _require_choice("embedding_provider", self.embedding_provider, EMBEDDING_PROVIDERS)
        _require_choice("embedding_backend", self.embedding_backend, EMBEDDING_BACKENDS)

    @property
    def milvus_lite_path(self) -> Path:
        return self.storage_dir / "milvus.db"

    @property
    def keywords_dir(self) -> Path:
        return self.storage_dir / "keywords"

    @property
    def parse_cache_dir(self) -> Path:
        return self.storage_dir / "parse_cache"

    @property
    def sqlite_path(self) -> Path:
        return self.storage_dir / "docstore.sqlite"

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **changes)


def _require_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        shown = ", ".join(repr(a) for a in allowed)
        raise ConfigError(f"{name} is {value!r}; choose one of {shown} in config.py.")


def settings_from_config(
    config: ModuleType, article: str | None = None, environ: dict[str, str] | None = None
) -> Settings:
    """Merge DEFAULT_RAG_SETTINGS, the article's overrides, config constants and environment."""
    env = dict(os.environ) if environ is None else environ
    values: dict[str, Any] = dict(getattr(config, "DEFAULT_RAG_SETTINGS", {}))
    if article:
        values.update(getattr(config, "ARTICLE_RAG_OVERRIDES", {}).get(article, {}))
    for key in ENV_OVERRIDES:
        constant = getattr(config, key.upper(), None)
        if constant is not None:
            values[key] = constant
    for key, variable in ENV_OVERRIDES.items():
        if env.get(variable):
            values[key] = env[variable]
    return build_settings(values)


def build_settings(values: dict[str, Any]) -> Settings:
    known = {f.name: f for f in fields(Settings)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(
            f"Unknown setting(s) {', '.join(unknown)}; remove or rename them in config.py."
        )
    typed: dict[str, Any] = {}
    for key, raw in values.items():
        default = getattr(Settings(), key) if key != "extra" else {}
        typed[key] = _coerce(key, raw, default)
    return Settings(**typed)


def _coerce(key: str, raw: Any, default: Any) -> Any:
    if isinstance(default, Path):
        return Path(str(raw)).expanduser()
    if isinstance(default, bool):
        return raw if isinstance(raw, bool) else str(raw).lower() in {"1", "true", "yes"}
    if isinstance(default, float):
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{key} is {raw!r}; it must be a number.") from None
    if isinstance(default, int):
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{key} is {raw!r}; it must be a whole number.") from None
    if isinstance(default, str):
        if not isinstance(raw, str):
            raise ConfigError(f"{key} is {raw!r}; it must be a string.")
        return raw.strip()
    return raw
