"""Typed settings: every default and every choice list, defined here once.

`config.py` holds only what a project or an article changes; environment variables (read by
pydantic-settings, names in `ENV_OVERRIDES`) take precedence over it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from difflib import get_close_matches
from pathlib import Path
from types import ModuleType
from typing import Literal, get_args
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, SettingsConfigDict

from citerag.domain import GENERIC, DomainVocabulary
from citerag.errors import ConfigError

Reranker = Literal["auto", "colbert", "maxsim", "sentence", "none"]
Parser = Literal["pymupdf", "mineru"]
DEFAULT_OCR_LANGUAGES = "eng"
OCR_LANGUAGES = re.compile(r"[A-Za-z_]+(?:\+[A-Za-z_]+)*")
# MinerU 4.x's public tiers (mineru.parser.tier): "flash" needs no model weights, the others do.
MineruTier = Literal["flash", "basic", "standard", "advanced"]
LlmProvider = Literal["", "openai", "anthropic", "gemini", "ollama", "openai_like"]
Metadata = Literal["none", "entity", "langextract", "both"]  # enrichment at ingest (citerag/enrich)
KeywordBackend = Literal["auto", "bm25s", "milvus"]  # citerag/store/keywords.py
EmbeddingProvider = Literal["local", "openai", "ollama"]  # citerag/embed/providers.py
EmbeddingBackend = Literal[  # citerag/embed/embedder.py
    "auto", "torch", "onnx", "onnx-int8", "openvino", "openvino-bf16"
]
SentenceVectors = Literal["separate", "pooled"]  # citerag/ingest/vectors.py
EVIDENCE_SETTINGS = ("evidence_entities", "evidence_years", "evidence_quotes", "evidence_topics")

RERANKERS: tuple[str, ...] = get_args(Reranker)
PARSERS: tuple[str, ...] = get_args(Parser)
MINERU_TIERS: tuple[str, ...] = get_args(MineruTier)
LLM_PROVIDERS: tuple[str, ...] = get_args(LlmProvider)
METADATA: tuple[str, ...] = get_args(Metadata)
KEYWORD_BACKENDS: tuple[str, ...] = get_args(KeywordBackend)
EMBEDDING_PROVIDERS: tuple[str, ...] = get_args(EmbeddingProvider)
EMBEDDING_BACKENDS: tuple[str, ...] = get_args(EmbeddingBackend)
SENTENCE_VECTORS: tuple[str, ...] = get_args(SentenceVectors)
_CHOICES = {
    "reranker": RERANKERS,
    "parser": PARSERS,
    "mineru_tier": MINERU_TIERS,
    "llm_provider": LLM_PROVIDERS,
    "metadata": METADATA,
    "keyword_backend": KEYWORD_BACKENDS,
    "embedding_provider": EMBEDDING_PROVIDERS,
    "embedding_backend": EMBEDDING_BACKENDS,
    "sentence_vectors": SENTENCE_VECTORS,
}
_POSITIVE = ("similarity_top_k_fusion", "rrf_k", "fusion_top_n", "rerank_top_n")


class Settings(BaseModel):
    """One run's settings. The retrieval defaults were chosen by benchmarks/bench_eval.py across
    the essay and both 10-Ks (benchmarks/results/retrieval.md), never by one document."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    storage_dir: Path = Path("storage")
    chunk_size: int = 1024  # tokens per chunk (sentence-aligned, never across a page boundary)
    chunk_overlap: int = 200
    parser: Parser = "pymupdf"  # chosen by measurement, see docs/PARSING.md
    mineru_tier: MineruTier = "flash"
    # Tesseract's languages for pages read by OCR (a text layer empty or nearly so over ink):
    # "+"-joined codes whose data is installed ("eng", "eng+deu"). citerag/parse/ocr.py
    ocr_languages: str = DEFAULT_OCR_LANGUAGES
    # Also OCR pictures on text pages (chart labels, screenshots), as words of the figure.
    # Off: not measured on every labelled set (benchmarks/results/ocr.md).
    ocr_pictures: bool = False
    similarity_top_k_fusion: int = 35  # candidates taken from each of BM25 and the vector index
    rrf_k: int = 10  # reciprocal rank fusion constant: lower lets a first place count for more
    fusion_top_n: int = 25
    rerank_top_n: int = 10  # sources returned
    page_weight: float = 1.0  # how much a page's own evidence (its whole text, its head) adds
    filing_keyword_weight: float = 2.0  # keyword rankings' weight when the domain's words match
    # More rankings in the chunk fusion (0: off), each kept by measurement on every labelled set
    # (benchmarks/results/kinds.md): the candidates by their one sentence closest to the
    # question (not where filing_keyword_weight raises the keyword rankings), and the soft
    # evidence of what the question names (citerag/retrieve/evidence.py).
    sentence_weight: float = 1.0
    evidence_entities: float = 1.0  # the documents carrying an entity the question names
    evidence_years: float = 1.0  # the chunks carrying a year the question names
    evidence_quotes: float = 1.0  # the chunks matching a phrase the question quotes
    evidence_topics: float = 1.0  # the chunks carrying a LangExtract topic it names (if stored)
    # Retrieval rankers switched off by name ("best_sentence", "years", "page_vector"...: the
    # list is citerag/retrieve/ranker_set.py's and any registered ranker's); the environment
    # gives them comma-separated.
    disabled_rankers: tuple[str, ...] = ()
    reranker: Reranker = "auto"
    highlights_per_source: int = 3
    llm_max_tokens: int = 1024
    # With an LLM configured, ingest asks it for a summary of every section of the tree (about
    # 200 per 10-K, cached on disk); this many calls are under way at once.
    tree_summary_workers: int = 4
    milvus_uri: str = ""  # e.g. "http://localhost:19530"; empty: Milvus Lite under storage_dir
    milvus_token: str = ""
    mongodb_uri: str = ""  # e.g. "mongodb://localhost:27017"; empty: SQLite under storage_dir
    mongodb_database: str = "citerag"
    embedding_model: str = ""  # local: a SentenceTransformer folder; hosted: the model's name
    embedding_provider: EmbeddingProvider = "local"
    embedding_base_url: str = ""  # hosted: the endpoint (default: the provider's own)
    embedding_api_key: str = ""  # hosted: the key (default: the provider's variable)
    # "auto": on a CPU OpenVINO, in bfloat16 where the CPU has it (vectors within 1e-4 of
    # PyTorch's, twice ONNX Runtime's speed here), else ONNX Runtime; PyTorch on CUDA/MPS.
    # "onnx-int8" is quantized: other vectors, documents are ingested again.
    # Measured: benchmarks/results/library.md.
    embedding_backend: EmbeddingBackend = "auto"
    # "separate": every sentence encoded on its own, plus each page's head; "pooled": each page
    # encoded once, each sentence pooled from its own tokens (faster ingest, other vectors).
    sentence_vectors: SentenceVectors = "separate"
    colbert_checkpoint: str = ""  # a local checkpoint folder or a hub id already in the cache
    llm_provider: LlmProvider = ""  # empty: no LLM, answers are extractive
    llm_model: str = ""
    llm_base_url: str = ""  # for ollama and openai_like
    llm_api_key: str = ""  # or the provider's own variable (OPENAI_API_KEY, ...)
    llm_timeout_s: int = 60
    vision_model: str = ""  # the LLM provider's vision-capable model: figure descriptions
    # Enrichment at ingest: "none" (caption labels only), "entity" (years, dates, amounts and
    # named entities: GLiNER when its weights are local, else rules), "langextract" (semantic
    # topics by the configured LLM, cached on disk), "both". Measured:
    # benchmarks/results/subquestions.md.
    metadata: Metadata = "entity"
    gliner_model: str = ""  # a local GLiNER folder (or a hub id already in the local cache)
    api_key: str = ""  # the HTTP API's key; empty: no key needed
    cors_origins: str = ""  # comma-separated origins the HTTP API allows; "*" for any
    max_upload_mb: float = 50.0  # the largest PDF the HTTP API accepts
    # "bm25s" (files under storage_dir), "milvus" (its BM25 function) or "auto" (Milvus BM25 on a
    # server that has it, bm25s on Milvus Lite: benchmarks/results/keywords.md).
    keyword_backend: KeywordBackend = "auto"
    # The article's domain words (its schema's, `extraction_schemas.py`); none by default.
    vocabulary: DomainVocabulary = GENERIC

    def __init__(self, **values: object) -> None:
        try:
            super().__init__(**values)
        except ValidationError as error:
            raise ConfigError(_sentence(error.errors(), values)) from None

    @field_validator(*_CHOICES, mode="before")
    @classmethod
    def _one_of_the_choices(cls, value: object, info: ValidationInfo) -> str:
        name = str(info.field_name)
        text = value.strip() if isinstance(value, str) else value
        return require_choice(name, text, _CHOICES[name])

    @field_validator("disabled_rankers", mode="before")
    @classmethod
    def _names(cls, value: object) -> object:
        """Names written comma-separated (the environment's way) as a tuple."""
        if isinstance(value, str):
            return tuple(name.strip() for name in value.split(",") if name.strip())
        return value

    @field_validator("storage_dir")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("milvus_uri")
    @classmethod
    def _milvus_uri(cls, value: str) -> str:
        return checked_milvus_uri(value)

    @field_validator("mongodb_uri")
    @classmethod
    def _mongodb_uri(cls, value: str) -> str:
        return checked_mongodb_uri(value)

    @model_validator(mode="after")
    def _check_ranges(self) -> Settings:
        if self.chunk_size < 32:
            raise ConfigError(f"chunk_size is {self.chunk_size}; set it to 32 tokens or more.")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError(
                f"chunk_overlap ({self.chunk_overlap}) must be at least 0 and below chunk_size "
                f"({self.chunk_size}); fix it in config.py."
            )
        for name in (*_POSITIVE, "tree_summary_workers"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be a positive integer; fix it in config.py.")
        if not OCR_LANGUAGES.fullmatch(self.ocr_languages):
            raise ConfigError(
                f"ocr_languages is {self.ocr_languages!r}; use Tesseract language codes joined "
                "by '+' (e.g. 'eng' or 'eng+deu')."
            )
        if self.max_upload_mb <= 0:
            raise ConfigError(f"max_upload_mb is {self.max_upload_mb}; set it above 0.")
        for name in ("page_weight", "sentence_weight", *EVIDENCE_SETTINGS):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} is {getattr(self, name)}; use 0 (off) or more.")
        if self.filing_keyword_weight <= 0:
            raise ConfigError(
                f"filing_keyword_weight is {self.filing_keyword_weight}; use a number above 0 "
                "(1 counts keyword and vector rankings alike)."
            )
        return self

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

    def with_overrides(self, **changes: object) -> Settings:
        """A copy with `changes`, checked like any other settings."""
        return Settings(**{**self.model_dump(), **changes})


def require_choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    """`value` when it is one of `allowed`, else a one-sentence ConfigError naming them."""
    if value not in allowed:
        shown = ", ".join(repr(a) for a in allowed)
        raise ConfigError(f"{name} is {value!r}; choose one of {shown} in config.py.")
    return str(value)


MILVUS_SERVER_SCHEMES = ("http", "https", "tcp", "grpc")  # and "unix" (a socket path)
MONGODB_SCHEMES = ("mongodb", "mongodb+srv")
_PASSWORD = re.compile(r"(//[^:/@]*:)[^@/]*@")


def checked_milvus_uri(uri: str) -> str:
    """`uri` when pymilvus can take it as `milvus_uri`: a server's URI with a host, a `unix:`
    socket, or a Milvus Lite file ending in .db ("": Milvus Lite in the storage folder)."""
    if not uri:
        return uri
    scheme, host, _ = _address(uri)
    if (scheme in MILVUS_SERVER_SCHEMES and host) or scheme == "unix":
        return uri
    if scheme not in MILVUS_SERVER_SCHEMES and uri.endswith(".db"):
        return uri
    raise ConfigError(
        f"milvus_uri is {shown_uri(uri)!r}, neither a Milvus server's URI (http://HOST:19530) "
        "nor a Milvus Lite file ending in .db; fix MILVUS_URI (or config.py), or unset it to use "
        "Milvus Lite in the storage folder."
    )


def check_milvus_variable(value: str) -> None:
    """pymilvus reads the MILVUS_URI variable itself when it is imported and fails on anything
    but http[s]://HOST[:PORT] with a host name or IPv4 address; say so before it is imported."""
    scheme, host, port = _address(value)
    if not value or (
        scheme in MILVUS_SERVER_SCHEMES and host and ":" not in host and port is not None
    ):
        return
    raise ConfigError(
        f"MILVUS_URI is {shown_uri(value)!r}, which pymilvus cannot read from the environment "
        "(it takes http://HOST:PORT, a host name or IPv4 address); fix the variable, or unset it "
        "and set MILVUS_URI in config.py for a Milvus Lite file or another form."
    )


def check_milvus_environment(environ: Mapping[str, str] | None = None) -> None:
    """The MILVUS_URI variable (of `environ`, default the process's) checked as `milvus_uri` and
    as pymilvus reads it: call before anything imports pymilvus, which reads it on import."""
    variable = (os.environ if environ is None else environ).get("MILVUS_URI", "")
    check_milvus_variable(checked_milvus_uri(variable))


def checked_mongodb_uri(uri: str) -> str:
    """`uri` when it is a MongoDB URI with a host, or several ("": the SQLite docstore)."""
    try:
        parsed = urlsplit(uri)
    except ValueError:
        parsed = None
    hosts = parsed.netloc.rsplit("@", 1)[-1] if parsed else ""
    if not uri or (parsed and parsed.scheme.lower() in MONGODB_SCHEMES and hosts):
        return uri
    raise ConfigError(
        f"mongodb_uri is {shown_uri(uri)!r}, not a MongoDB URI; write it as "
        "mongodb://HOST:27017 (or mongodb+srv://HOST), or unset MONGODB_URI to use the embedded "
        "SQLite docstore."
    )


def shown_uri(uri: str) -> str:
    """`uri` with any password replaced by ***, for messages."""
    return _PASSWORD.sub(r"\1***@", uri)


def _address(uri: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of `uri`; port 19530 when none is written; ("", "", None) when
    it does not parse, or names a port that is not one."""
    try:
        parsed = urlsplit(uri)
        port = parsed.port
    except ValueError:
        return "", "", None
    port = port if port is not None else 19530
    return parsed.scheme.lower(), parsed.hostname or "", port if 0 <= port < 65535 else None


_TYPE_SENTENCES = {
    "int": "it must be a whole number",
    "float": "it must be a number",
    "string": "it must be a string",
    "path": "it must be a path",
}


def _sentence(errors: list[ErrorDetails], values: Mapping[str, object]) -> str:
    unknown = sorted(str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden")
    if unknown:
        return f"Unknown setting(s) {', '.join(unknown)}; remove or rename them in config.py."
    first = errors[0]
    key = str(first["loc"][0]) if first["loc"] else "settings"
    kind = next((s for t, s in _TYPE_SENTENCES.items() if first["type"].startswith(t)), "")
    return f"{key} is {values.get(key)!r}; {kind or first['msg'].lower()}."


class EnvironmentOverrides(BaseSettings):
    """The environment variables that override a setting, read by pydantic-settings; an empty
    variable counts as unset."""

    model_config = SettingsConfigDict(
        case_sensitive=True, env_ignore_empty=True, extra="ignore", frozen=True
    )

    storage_dir: str | None = Field(default=None, validation_alias="RAG_STORAGE_DIR")
    milvus_uri: str | None = Field(default=None, validation_alias="MILVUS_URI")
    milvus_token: str | None = Field(default=None, validation_alias="MILVUS_TOKEN")
    mongodb_uri: str | None = Field(default=None, validation_alias="MONGODB_URI")
    mongodb_database: str | None = Field(default=None, validation_alias="MONGODB_DATABASE")
    embedding_model: str | None = Field(default=None, validation_alias="EMBEDDING_MODEL")
    embedding_provider: str | None = Field(default=None, validation_alias="EMBEDDING_PROVIDER")
    embedding_base_url: str | None = Field(default=None, validation_alias="EMBEDDING_BASE_URL")
    embedding_api_key: str | None = Field(default=None, validation_alias="EMBEDDING_API_KEY")
    embedding_backend: str | None = Field(default=None, validation_alias="EMBEDDING_BACKEND")
    sentence_vectors: str | None = Field(default=None, validation_alias="SENTENCE_VECTORS")
    colbert_checkpoint: str | None = Field(default=None, validation_alias="COLBERT_CHECKPOINT")
    llm_provider: str | None = Field(default=None, validation_alias="LLM_PROVIDER")
    llm_model: str | None = Field(default=None, validation_alias="LLM_MODEL")
    llm_base_url: str | None = Field(default=None, validation_alias="LLM_BASE_URL")
    llm_api_key: str | None = Field(default=None, validation_alias="LLM_API_KEY")
    llm_timeout_s: str | None = Field(default=None, validation_alias="LLM_TIMEOUT_S")
    vision_model: str | None = Field(default=None, validation_alias="VISION_MODEL")
    parser: str | None = Field(default=None, validation_alias="RAG_PARSER")
    reranker: str | None = Field(default=None, validation_alias="RAG_RERANKER")
    mineru_tier: str | None = Field(default=None, validation_alias="MINERU_TIER")
    ocr_languages: str | None = Field(default=None, validation_alias="OCR_LANGUAGES")
    ocr_pictures: str | None = Field(default=None, validation_alias="RAG_OCR_PICTURES")
    metadata: str | None = Field(default=None, validation_alias="RAG_METADATA")
    gliner_model: str | None = Field(default=None, validation_alias="GLINER_MODEL")
    api_key: str | None = Field(default=None, validation_alias="RAG_API_KEY")
    cors_origins: str | None = Field(default=None, validation_alias="RAG_CORS_ORIGINS")
    max_upload_mb: str | None = Field(default=None, validation_alias="RAG_MAX_UPLOAD_MB")
    keyword_backend: str | None = Field(default=None, validation_alias="RAG_KEYWORD_BACKEND")
    disabled_rankers: str | None = Field(default=None, validation_alias="DISABLED_RANKERS")

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The settings the environment sets (`environ`, default the process's)."""
        if environ is None:
            found = cls()
        else:
            found = cls.model_validate({k: v for k, v in environ.items() if v})
        return {name: value for name, value in found.model_dump().items() if value is not None}


# Settings field -> environment variable that overrides it.
ENV_OVERRIDES: dict[str, str] = {
    name: str(field.validation_alias) for name, field in EnvironmentOverrides.model_fields.items()
}


# Variables read besides ENV_OVERRIDES: by main.py, the LLM and embedding providers, the tests.
OTHER_VARIABLES = (
    "RAG_LOG_LEVEL",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "MILVUS_TEST_URI",
)
KNOWN_VARIABLES = frozenset([*ENV_OVERRIDES.values(), *OTHER_VARIABLES])
_CLOSE_ENOUGH = 0.85  # difflib's ratio: MILVUS_URL 0.90, OPENAI_API_BASE 0.76 (the SDK's own)


def unknown_variable_warnings(names: Iterable[str], source: str = ".env") -> list[str]:
    """A sentence for each name (set from `source`) that citerag does not read but that is
    close to one it reads (a misspelling, named with the nearest) or that starts with RAG_;
    other names belong to other programs and are left alone."""
    warnings = []
    for name in names:
        if name in KNOWN_VARIABLES:
            continue
        nearest = get_close_matches(name.upper(), KNOWN_VARIABLES, n=1, cutoff=_CLOSE_ENOUGH)
        if nearest:
            warnings.append(
                f"{name} (from {source}) is not a setting citerag reads and is ignored; did "
                f"you mean {nearest[0]}?"
            )
        elif name.upper().startswith("RAG_"):
            warnings.append(
                f"{name} (from {source}) is not a setting citerag reads and is ignored; the "
                "settings are listed in citerag/settings.py (ENV_OVERRIDES)."
            )
    return warnings


def settings_from_config(
    config: ModuleType, article: str | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """The package defaults, changed by config.py (DEFAULT_RAG_SETTINGS, then the article's
    ARTICLE_RAG_OVERRIDES, then its storage and model constants) and by the environment."""
    values: dict[str, object] = dict(getattr(config, "DEFAULT_RAG_SETTINGS", {}))
    if article:
        values.update(getattr(config, "ARTICLE_RAG_OVERRIDES", {}).get(article, {}))
    for key in ENV_OVERRIDES:
        constant = getattr(config, key.upper(), None)
        if constant is not None:
            values[key] = constant
    check_milvus_environment(environ)
    values.update(EnvironmentOverrides.read(environ))
    return build_settings(values)


def build_settings(values: Mapping[str, object]) -> Settings:
    """Settings from a mapping of names to values, or one ConfigError sentence."""
    return Settings(**values)
