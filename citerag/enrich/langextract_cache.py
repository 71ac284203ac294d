"""LangExtract semantic metadata per chunk, cached on disk by sha256(text + schema).

A second ingest of the same text with the same schema reads the cache and makes no LLM call.
Values come back as "attribute=value" strings (the `topics` field), lower-cased.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from langextract.core.base_model import BaseLanguageModel

from citerag.enrich.fields import TOPICS, Fields
from citerag.extras import require

log = logging.getLogger(__name__)


class SemanticSchema(Protocol):
    """What LangExtract needs of a domain schema (`extraction_schemas.ExtractionSchema`)."""

    @property
    def name(self) -> str: ...
    @property
    def metadata_prompt(self) -> str: ...
    @property
    def attributes(self) -> Mapping[str, Sequence[str]]: ...
    @property
    def example_text(self) -> str: ...
    @property
    def example_extractions(self) -> Sequence[tuple[str, str, Mapping[str, str]]]: ...


Extract = Callable[[str], object]  # text -> LangExtract AnnotatedDocument


def schema_fingerprint(schema: SemanticSchema) -> str:
    data = {
        "name": schema.name,
        "prompt": schema.metadata_prompt,
        "attributes": {k: list(v) for k, v in schema.attributes.items()},
        "example": [
            schema.example_text,
            [list(e[:2]) + [dict(e[2])] for e in schema.example_extractions],
        ],
    }
    return json.dumps(data, sort_keys=True)


class CachedLangExtract:
    """Topics per text; `calls` counts the texts that needed the LLM."""

    name = "langextract"

    def __init__(self, extract: Extract, schema: SemanticSchema, cache_dir: Path) -> None:
        self._extract = extract
        self._schema = schema
        self._fingerprint = schema_fingerprint(schema)
        self._cache_dir = cache_dir
        self.calls = 0

    def topics(self, texts: Sequence[str]) -> list[list[str]]:
        return [self._topics_of(text) for text in texts]

    def fields(self, texts: Sequence[str]) -> list[Fields]:
        return [{TOPICS: topics} for topics in self.topics(texts)]

    def cache_key(self, text: str) -> str:
        return hashlib.sha256((text + "\x00" + self._fingerprint).encode()).hexdigest()

    def _topics_of(self, text: str) -> list[str]:
        path = self._cache_dir / f"{self.cache_key(text)}.json"
        if path.is_file():
            return [str(t) for t in json.loads(path.read_text())["topics"]]
        self.calls += 1
        topics = topics_of(self._extract(text), self._schema.attributes)
        self._cache_dir.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"topics": topics}))
        temporary.replace(path)
        return topics


def topics_of(annotated: object, attributes: Mapping[str, Sequence[str]]) -> list[str]:
    """ "attribute=value" for every schema attribute an extraction carries, each once."""
    found: dict[str, None] = {}
    for extraction in getattr(annotated, "extractions", None) or []:
        for name, value in (getattr(extraction, "attributes", None) or {}).items():
            if name not in attributes:
                continue
            for item in value if isinstance(value, list) else [value]:
                text = " ".join(str(item).split()).casefold()
                if text:
                    found.setdefault(f"{name}={text}", None)
    return list(found)


def langextract_call(schema: SemanticSchema, model: BaseLanguageModel) -> Extract:
    """A function running `langextract.extract` on one text with the schema's prompt/example."""
    lx = require("langextract", "langextract", "LangExtract")
    examples = [
        lx.data.ExampleData(
            text=schema.example_text,
            extractions=[
                lx.data.Extraction(
                    extraction_class=kind, extraction_text=span, attributes=dict(attributes)
                )
                for kind, span, attributes in schema.example_extractions
            ],
        )
    ]
    wanted = "; ".join(f"{k}: {', '.join(v)}" for k, v in schema.attributes.items())
    prompt = f"{schema.metadata_prompt} Give each extraction these attributes: {wanted}."

    def extract(text: str) -> object:
        return lx.extract(
            text,
            prompt_description=prompt,
            examples=examples,
            model=model,
            fence_output=False,
            use_schema_constraints=False,
            show_progress=False,
            prompt_validation_level=lx.prompt_validation.PromptValidationLevel.OFF,
        )

    return extract


def langextract_model(
    provider: str, model_id: str, api_key: str, base_url: str
) -> BaseLanguageModel | None:
    """LangExtract's own model object for an OpenAI-compatible, Ollama or Gemini endpoint."""
    require("langextract", "langextract", "LangExtract")
    if provider in ("openai", "openai_like"):
        from langextract.providers.openai import OpenAILanguageModel

        return OpenAILanguageModel(
            model_id=model_id, api_key=api_key, base_url=base_url or None, max_workers=1
        )
    if provider == "ollama":
        from langextract.providers.ollama import OllamaLanguageModel

        return OllamaLanguageModel(model_id=model_id, model_url=base_url)
    if provider == "gemini":
        from langextract.providers.gemini import GeminiLanguageModel

        return GeminiLanguageModel(model_id=model_id, api_key=api_key)
    log.warning("LangExtract has no provider for %r; semantic metadata is skipped", provider)
    return None
