"""The settings groups, one per component: each field is defined once, with its default, its
checks and (where the environment may set it) the environment variable's name as its
`validation_alias`. A component is handed its own group.

The retrieval defaults were chosen by `python -m benchmarks run --suite retrieval` across the
essay and both 10-Ks (benchmarks/results/retrieval.md), never by one document.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import ErrorDetails

from citerag.domain import GENERIC, DomainVocabulary
from citerag.errors import ConfigError
from citerag.settings.choices import (
    EMBEDDING_BACKENDS,
    EMBEDDING_PROVIDERS,
    KEYWORD_BACKENDS,
    LLM_PROVIDERS,
    METADATA,
    MINERU_TIERS,
    PARSERS,
    RERANKERS,
    SENTENCE_VECTOR_ENCODINGS,
    SENTENCE_VECTORS,
    EmbeddingBackend,
    EmbeddingProvider,
    KeywordBackend,
    LlmProvider,
    Metadata,
    MilvusIndexType,
    MineruTier,
    Parser,
    Reranker,
    SentenceVectorEncoding,
    SentenceVectors,
    current_name,
    require_choice,
)
from citerag.settings.uris import checked_milvus_uri, checked_mongodb_uri

DEFAULT_OCR_LANGUAGES = "eng"
OCR_LANGUAGES = re.compile(r"[A-Za-z_]+(?:\+[A-Za-z_]+)*")


def env(default: Any, variable: str) -> Any:
    """A field's default, and the environment variable that sets it."""
    return Field(default, validation_alias=variable)


class SettingsGroup(BaseModel):
    """A frozen group of settings, set by field name (config.py) or by its variables' names;
    any mistake is one ConfigError sentence."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        str_strip_whitespace=True,
        validate_by_name=True,
        validate_by_alias=True,
        loc_by_alias=False,
    )
    # Field name -> the values it may take (checked with `require_choice`'s sentence).
    choices: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    def __init__(self, **values: object) -> None:
        try:
            super().__init__(**values)
        except ValidationError as error:
            raise ConfigError(error_sentence(error.errors(), values)) from None

    @field_validator("*", mode="before")
    @classmethod
    def _one_of_the_choices(cls, value: object, info: ValidationInfo) -> object:
        name = str(info.field_name)
        allowed = cls.choices.get(name)
        if allowed is None:
            return value
        text = value.strip() if isinstance(value, str) else value
        return require_choice(name, current_name(name, text), allowed)

    @classmethod
    def variables(cls) -> dict[str, str]:
        """Field name -> the environment variable that sets it, for the fields that have one."""
        return {
            name: str(field.validation_alias)
            for name, field in cls.model_fields.items()
            if isinstance(field.validation_alias, str)
        }

    def values(self) -> dict[str, object]:
        """Field name -> value, as given (no dumping of nested objects)."""
        return {name: getattr(self, name) for name in type(self).model_fields}

    def with_overrides(self, **changes: object) -> Self:
        """A copy with `changes`, checked like any settings."""
        return type(self)(**{**self.values(), **changes})


def _at_least(name: str, value: float, least: float, unit: str = "") -> None:
    if value < least:
        raise ConfigError(f"{name} is {value}; set it to {least}{unit} or more.")


class StorageSettings(SettingsGroup):
    """Where documents, vectors and keywords are kept."""

    storage_dir: Path = env(Path("storage"), "RAG_STORAGE_DIR")
    milvus_uri: str = env("", "MILVUS_URI")  # "http://localhost:19530"; "": Milvus Lite
    milvus_token: str = env("", "MILVUS_TOKEN")
    # Seconds after a change a Milvus server's searches stay Strong (they are Bounded after:
    # ~200 ms less a search on Milvus 2.3); at least the server's common.gracefulTime.
    milvus_strong_window_s: float = env(5.0, "RAG_MILVUS_STRONG_SECONDS")
    # The vector index a Milvus server builds for new collections: "auto" (`milvus_caps`),
    # "autoindex" (the server's own, HNSW), "ivf_flat" or "flat" (exact). Lite is always FLAT.
    milvus_index_type: MilvusIndexType = env("auto", "MILVUS_INDEX_TYPE")
    mongodb_uri: str = env("", "MONGODB_URI")  # "mongodb://localhost:27017"; "": SQLite
    mongodb_database: str = env("citerag", "MONGODB_DATABASE")
    # "bm25-files" (the project's BM25 in files under storage_dir), "milvus" (its BM25
    # function) or "auto" (Milvus BM25 on a server that has it, the files on Milvus Lite:
    # benchmarks/results/keywords.md).
    keyword_backend: KeywordBackend = env("auto", "RAG_KEYWORD_BACKEND")
    # The BM25 files' per-document segments a process keeps between searches (those added since
    # the last merge, read on demand), in MiB; the merged segment is memory-mapped, not held.
    keyword_cache_mib: float = env(64.0, "RAG_KEYWORD_CACHE_MIB")
    # How the docstore keeps sentence and page-head vectors (citerag/store/vector_codec.py):
    # "float16", "int8" (half float16's bytes) or "float32"; stores written under another
    # keep reading. Measured: benchmarks/results/vector_encoding.md.
    sentence_vector_encoding: SentenceVectorEncoding = env("float16", "SENTENCE_VECTOR_ENCODING")
    choices: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "keyword_backend": KEYWORD_BACKENDS,
        "sentence_vector_encoding": SENTENCE_VECTOR_ENCODINGS,
    }

    def model_post_init(self, context: object, /) -> None:
        if self.milvus_strong_window_s < 0:
            raise ConfigError(
                f"milvus_strong_window_s is {self.milvus_strong_window_s}; set it to 0 or more "
                "seconds (Milvus's common.gracefulTime or more)."
            )
        if self.keyword_cache_mib < 0:
            raise ConfigError(
                f"keyword_cache_mib is {self.keyword_cache_mib}; set it to 0 or more (MiB)."
            )

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


class ParseSettings(SettingsGroup):
    """How a PDF is read."""

    parser: Parser = env("pymupdf", "RAG_PARSER")  # chosen by measurement, docs/PARSING.md
    mineru_tier: MineruTier = env("flash", "MINERU_TIER")
    # Tesseract's languages for pages read by OCR (a text layer empty or nearly so over ink):
    # "+"-joined codes whose data is installed ("eng", "eng+deu"). citerag/parse/ocr.py
    ocr_languages: str = env(DEFAULT_OCR_LANGUAGES, "OCR_LANGUAGES")
    # Also OCR pictures on text pages (chart labels, screenshots), as words of the figure.
    # Off: not measured on every labelled set (benchmarks/results/ocr.md).
    ocr_pictures: bool = env(False, "RAG_OCR_PICTURES")
    choices: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "parser": PARSERS,
        "mineru_tier": MINERU_TIERS,
    }

    @field_validator("ocr_languages")
    @classmethod
    def _tesseract_codes(cls, value: str) -> str:
        if not OCR_LANGUAGES.fullmatch(value):
            raise ConfigError(
                f"ocr_languages is {value!r}; use Tesseract language codes joined by '+' "
                "(e.g. 'eng' or 'eng+deu')."
            )
        return value


class IngestSettings(SettingsGroup):
    """How a parsed document becomes chunks, metadata and a tree."""

    chunk_size: int = 1024  # tokens per chunk (sentence-aligned, never across a page boundary)
    chunk_overlap: int = 200
    # Enrichment at ingest: "none" (caption labels only), "entity" (years, dates, amounts and
    # named entities: GLiNER when its weights are local, else rules), "langextract" (semantic
    # topics by the configured LLM, cached on disk), "both". Measured:
    # benchmarks/results/subquestions.md.
    metadata: Metadata = env("entity", "RAG_METADATA")
    gliner_model: str = env("", "GLINER_MODEL")  # a local GLiNER folder (or a cached hub id)
    # With an LLM configured, ingest asks it for a summary of every section of the tree (about
    # 200 per 10-K, cached on disk); this many calls are under way at once.
    tree_summary_workers: int = 4
    choices: ClassVar[Mapping[str, tuple[str, ...]]] = {"metadata": METADATA}

    def model_post_init(self, context: object, /) -> None:
        _at_least("chunk_size", self.chunk_size, 32, " tokens")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError(
                f"chunk_overlap ({self.chunk_overlap}) must be at least 0 and below chunk_size "
                f"({self.chunk_size}); fix it in config.py."
            )
        _positive("tree_summary_workers", self.tree_summary_workers)


class EmbeddingSettings(SettingsGroup):
    """Which model turns text into vectors, and where it runs."""

    embedding_model: str = env("", "EMBEDDING_MODEL")  # local folder, or the hosted model's name
    embedding_provider: EmbeddingProvider = env("local", "EMBEDDING_PROVIDER")
    embedding_base_url: str = env("", "EMBEDDING_BASE_URL")  # hosted: default the provider's
    embedding_api_key: str = env("", "EMBEDDING_API_KEY")  # hosted: default its own variable
    # "auto": on a CPU OpenVINO, in bfloat16 where the CPU has it (vectors within 1e-4 of
    # PyTorch's, twice ONNX Runtime's speed here), else ONNX Runtime; PyTorch on CUDA/MPS.
    # "onnx-int8" is quantized: other vectors, documents are ingested again.
    # Measured: benchmarks/results/library.md.
    embedding_backend: EmbeddingBackend = env("auto", "EMBEDDING_BACKEND")
    # "separate": every sentence encoded on its own, plus each page's head; "pooled": each page
    # encoded once, each sentence pooled from its own tokens (faster ingest, other vectors).
    sentence_vectors: SentenceVectors = env("separate", "SENTENCE_VECTORS")
    choices: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "embedding_provider": EMBEDDING_PROVIDERS,
        "embedding_backend": EMBEDDING_BACKENDS,
        "sentence_vectors": SENTENCE_VECTORS,
    }


@dataclass(frozen=True)
class EvidenceWeights:
    """Each evidence signal's weight in the chunk fusion (1 counts like the dense ranking; 0:
    off), citerag/retrieve/evidence.py."""

    entities: float = 1.0
    years: float = 1.0
    quotes: float = 1.0
    topics: float = 1.0

    def active(self) -> dict[str, float]:
        return {name: w for name, w in self.__dict__.items() if w > 0}


class RetrievalSettings(SettingsGroup):
    """How candidates are found, fused and reranked (citerag/retrieve/hybrid.py)."""

    similarity_top_k_fusion: int = 35  # candidates taken from each of BM25 and the vector index
    rrf_k: int = 10  # reciprocal rank fusion constant: lower lets a first place count for more
    fusion_top_n: int = 25
    rerank_top_n: int = 10  # sources returned
    page_weight: float = 1.0  # how much a page's own evidence (its whole text, its head) adds
    # How much more keyword rankings count when the question uses the domain's words (a
    # filing's statement names, metrics): the expanded words are precise, embeddings are not.
    filing_keyword_weight: float = 2.0
    # More rankings in the chunk fusion (0: off), each kept by measurement on every labelled set
    # (benchmarks/results/kinds.md): the candidates by their one sentence closest to the
    # question (a chunk's vector is the mean of its sentences; on a page of short items that
    # mean matches no question while one sentence does; not where filing_keyword_weight raises
    # the keyword rankings), and the soft evidence of what the question names.
    sentence_weight: float = 1.0
    evidence_entities: float = 1.0  # the documents carrying an entity the question names
    evidence_years: float = 1.0  # the chunks carrying a year the question names
    evidence_quotes: float = 1.0  # the chunks matching a phrase the question quotes
    evidence_topics: float = 1.0  # the chunks carrying a LangExtract topic it names (if stored)
    reranker: Reranker = env("colbert-if-installed", "RAG_RERANKER")
    colbert_checkpoint: str = env("", "COLBERT_CHECKPOINT")  # local folder or a cached hub id
    highlights_per_source: int = 3
    # Retrieval rankers switched off by name ("best_sentence", "years", "page_vector"...: the
    # names are citerag/retrieve/ranker_set.py's and any registered ranker's); the environment
    # gives them comma-separated.
    disabled_rankers: tuple[str, ...] = env((), "DISABLED_RANKERS")
    # The article's domain words (its schema's, `extraction_schemas.py`), set by the article.
    vocabulary: DomainVocabulary = GENERIC
    top_pages: ClassVar[int] = 10  # pages whose evidence counts
    choices: ClassVar[Mapping[str, tuple[str, ...]]] = {"reranker": RERANKERS}

    @field_validator("disabled_rankers", mode="before")
    @classmethod
    def _names(cls, value: object) -> object:
        """Names written comma-separated (the environment's way) as a tuple."""
        if isinstance(value, str):
            return tuple(name.strip() for name in value.split(",") if name.strip())
        return value

    def model_post_init(self, context: object, /) -> None:
        for name in ("similarity_top_k_fusion", "rrf_k", "fusion_top_n", "rerank_top_n"):
            _positive(name, getattr(self, name))
        for name in ("page_weight", "sentence_weight", *EVIDENCE_SETTINGS):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} is {getattr(self, name)}; use 0 (off) or more.")
        if self.filing_keyword_weight <= 0:
            raise ConfigError(
                f"filing_keyword_weight is {self.filing_keyword_weight}; use a number above 0 "
                "(1 counts keyword and vector rankings alike)."
            )

    @property
    def evidence(self) -> EvidenceWeights:
        return EvidenceWeights(
            entities=self.evidence_entities,
            years=self.evidence_years,
            quotes=self.evidence_quotes,
            topics=self.evidence_topics,
        )


EVIDENCE_SETTINGS = ("evidence_entities", "evidence_years", "evidence_quotes", "evidence_topics")


class LlmSettings(SettingsGroup):
    """The LLM that writes answers (none: answers are extractive) and describes figures."""

    llm_provider: LlmProvider = env("", "LLM_PROVIDER")  # "": no LLM, answers are extractive
    llm_model: str = env("", "LLM_MODEL")
    llm_base_url: str = env("", "LLM_BASE_URL")  # for ollama and openai_like
    llm_api_key: str = env("", "LLM_API_KEY")  # or the provider's own (OPENAI_API_KEY, ...)
    llm_timeout_s: int = env(60, "LLM_TIMEOUT_S")
    llm_max_tokens: int = 1024
    vision_model: str = env("", "VISION_MODEL")  # the provider's vision model: figure text
    choices: ClassVar[Mapping[str, tuple[str, ...]]] = {"llm_provider": LLM_PROVIDERS}


class ServerSettings(SettingsGroup):
    """The HTTP API's guards."""

    api_key: str = env("", "RAG_API_KEY")  # "": no key needed
    cors_origins: str = env("", "RAG_CORS_ORIGINS")  # comma-separated origins; "*" for any
    max_upload_mb: float = env(50.0, "RAG_MAX_UPLOAD_MB")  # the largest PDF accepted

    def model_post_init(self, context: object, /) -> None:
        if self.max_upload_mb <= 0:
            raise ConfigError(f"max_upload_mb is {self.max_upload_mb}; set it above 0.")


def _positive(name: str, value: int) -> None:
    if value < 1:
        raise ConfigError(f"{name} must be a positive integer; fix it in config.py.")


_TYPE_SENTENCES = {
    "int": "it must be a whole number",
    "float": "it must be a number",
    "bool": "it must be true or false",
    "string": "it must be a string",
    "path": "it must be a path",
}


def error_sentence(errors: list[ErrorDetails], values: Mapping[str, object]) -> str:
    """One sentence for pydantic's errors: the unknown names, else the first wrong value."""
    unknown = sorted(str(e["loc"][-1]) for e in errors if e["type"] == "extra_forbidden")
    if unknown:
        return f"Unknown setting(s) {', '.join(unknown)}; remove or rename them in config.py."
    first = errors[0]
    key = str(first["loc"][-1]) if first["loc"] else "settings"
    kind = next((s for t, s in _TYPE_SENTENCES.items() if first["type"].startswith(t)), "")
    return f"{key} is {first.get('input', values.get(key))!r}; {kind or first['msg'].lower()}."
