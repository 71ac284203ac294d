"""Every choice list a setting offers, and the one sentence that names them when a value is not
one of them. Each list is read by the component it names."""

from __future__ import annotations

import logging
from typing import Literal, get_args

from citerag.errors import ConfigError

log = logging.getLogger("citerag.settings")

# "colbert-if-installed": ColBERT when a checkpoint is found (COLBERT_CHECKPOINT or the local
# cache), else the fused order as it is (citerag/query/query_factory.py).
Reranker = Literal["colbert-if-installed", "colbert", "maxsim", "sentence", "none"]
Parser = Literal["pymupdf", "mineru"]
# MinerU 4.x's public tiers (mineru.parser.tier): "flash" needs no model weights, the others do.
MineruTier = Literal["flash", "basic", "standard", "advanced"]
LlmProvider = Literal["", "openai", "anthropic", "gemini", "ollama", "openai_like"]
Metadata = Literal["none", "entity", "langextract", "both"]  # enrichment at ingest (citerag/enrich)
# "bm25-files": the project's BM25 over files under the storage folder (citerag/store/bm25_files.py)
KeywordBackend = Literal["auto", "bm25-files", "milvus"]
EmbeddingProvider = Literal["local", "openai", "ollama"]  # citerag/embed/providers.py
EmbeddingBackend = Literal[  # citerag/embed/embedder.py
    "auto", "torch", "onnx", "onnx-int8", "openvino", "openvino-bf16"
]
SentenceVectors = Literal["separate", "pooled"]  # citerag/ingest/vectors.py
SentenceVectorEncoding = Literal["float16", "int8", "float32"]  # citerag/store/vector_codec.py
MilvusIndexType = Literal["auto", "autoindex", "ivf_flat", "flat"]  # citerag/store/milvus_caps.py

RERANKERS: tuple[str, ...] = get_args(Reranker)
PARSERS: tuple[str, ...] = get_args(Parser)
MINERU_TIERS: tuple[str, ...] = get_args(MineruTier)
LLM_PROVIDERS: tuple[str, ...] = get_args(LlmProvider)
METADATA: tuple[str, ...] = get_args(Metadata)
KEYWORD_BACKENDS: tuple[str, ...] = get_args(KeywordBackend)
EMBEDDING_PROVIDERS: tuple[str, ...] = get_args(EmbeddingProvider)
EMBEDDING_BACKENDS: tuple[str, ...] = get_args(EmbeddingBackend)
SENTENCE_VECTORS: tuple[str, ...] = get_args(SentenceVectors)
SENTENCE_VECTOR_ENCODINGS: tuple[str, ...] = get_args(SentenceVectorEncoding)

# Values written in existing config.py and .env files under names that misled: still accepted,
# with a warning naming the value that says what it does.
_RENAMED = {
    ("keyword_backend", "bm25s"): "bm25-files",
    ("reranker", "auto"): "colbert-if-installed",
}


def require_choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    """`value` when it is one of `allowed`, else a one-sentence ConfigError naming them."""
    if value not in allowed:
        shown = ", ".join(repr(a) for a in allowed)
        raise ConfigError(f"{name} is {value!r}; choose one of {shown} in config.py.")
    return str(value)


def current_name(name: str, value: object) -> object:
    """`value`, or the name it goes by now (with a warning) when it is a renamed choice."""
    renamed = _RENAMED.get((name, value)) if isinstance(value, str) else None
    if renamed is None:
        return value
    log.warning(
        "%s %r is now called %r (it means the same); write %r in config.py or the environment.",
        name,
        value,
        renamed,
        renamed,
    )
    return renamed
