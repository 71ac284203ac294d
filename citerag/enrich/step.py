"""The ingest step that enriches chunks, chosen by the `metadata` setting.

- `none`: only the caption labels (figure/table/equation) that the `pages` tool resolves;
- `entity`: also years, dates, money, percentages and named entities (GLiNER when its weights
  are local, else the rules extractor);
- `langextract`: labels and LangExtract's semantic `topics` (needs an LLM; cached on disk);
- `both`: everything.

Values are written into each chunk's metadata (the docstore keeps them; filters read them from
the collection state by chunk id) and excluded from what the embedder and the LLM see.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from llama_index.core.schema import TextNode

from citerag.enrich.fields import ALL_KEYS, ENRICHED_BY, LABELS, YEARS, FieldExtractor
from citerag.enrich.gliner_extractor import GlinerExtractor, find_gliner
from citerag.enrich.langextract_cache import (
    CachedLangExtract,
    SemanticSchema,
    langextract_call,
    langextract_model,
)
from citerag.enrich.rules import RulesExtractor
from citerag.llm.connection import connection_of
from citerag.nodes import block_type_of, label_of, table_context_of
from citerag.settings import Settings
from citerag.text.dates import years

log = logging.getLogger(__name__)
DEFAULT_ENTITY_LABELS = ("person", "organization", "place", "product", "date")


@dataclass
class Enricher:
    method: str
    gliner_source: tuple[str, tuple[str, ...]] | None = None  # (weights, labels): loads lazily
    langextract: CachedLangExtract | None = None
    _gliner: GlinerExtractor | None = None

    @property
    def gliner(self) -> GlinerExtractor | None:
        if self._gliner is None and self.gliner_source is not None:
            self._gliner = GlinerExtractor.load(*self.gliner_source)
        return self._gliner

    @property
    def description(self) -> str:
        parts = ["labels"]
        if self.method in ("entity", "both"):
            parts.append("gliner" if self.gliner_source or self._gliner else "rules")
        if self.langextract is not None:
            parts.append("langextract")
        return "+".join(parts)

    def enrich(self, chunks: Sequence[TextNode]) -> None:
        texts = [c.text for c in chunks]
        fields = RulesExtractor().extract(
            texts, [block_type_of(c) for c in chunks], [label_of(c) for c in chunks]
        )
        if self.method in ("none", "langextract"):
            fields = [{LABELS: f[LABELS]} for f in fields]
        else:  # a table row's years are in its header, carried as the chunk's table context
            for found, chunk in zip(fields, chunks, strict=True):
                found[YEARS] = years(f"{table_context_of(chunk)}\n{chunk.text}")
        gliner = self.gliner if self.method in ("entity", "both") else None
        extractors: list[FieldExtractor] = [] if gliner is None else [gliner]
        if self.langextract is not None:
            extractors.append(self.langextract)
        for extractor in extractors:  # their fields replace the rules' (GLiNER's entities)
            for found, extracted in zip(fields, extractor.fields(texts), strict=True):
                found.update(extracted)
        for chunk, found in zip(chunks, fields, strict=True):
            _store(chunk, found, self.description)


def _store(chunk: TextNode, found: dict[str, list[str]], by: str) -> None:
    chunk.metadata.update(found)
    chunk.metadata[ENRICHED_BY] = by
    for keys in (chunk.excluded_embed_metadata_keys, chunk.excluded_llm_metadata_keys):
        keys.extend(k for k in ALL_KEYS if k not in keys)


def build_enricher(settings: Settings, schema: SemanticSchema | None = None) -> Enricher:
    """The enricher `metadata` asks for, with what this machine has; reasons logged."""
    method = settings.ingest.metadata
    enricher = Enricher(method)
    if method in ("entity", "both"):
        enricher.gliner_source = _gliner_source(settings, schema)
    if method in ("langextract", "both"):
        enricher.langextract = _langextract(settings, schema)
    log.info("enrichment: %s", enricher.description)
    return enricher


def _gliner_source(
    settings: Settings, schema: SemanticSchema | None
) -> tuple[str, tuple[str, ...]] | None:
    where, why = find_gliner(settings.ingest.gliner_model)
    if where is None:
        log.info("GLiNER: %s; using the rules extractor", why)
        return None
    labels = tuple(getattr(schema, "entity_labels", ()) or DEFAULT_ENTITY_LABELS)
    log.info("GLiNER from %s, labels %s", why, ", ".join(labels))
    return where, labels


def _langextract(settings: Settings, schema: SemanticSchema | None) -> CachedLangExtract | None:
    if not settings.llm.llm_provider:
        log.warning(
            "metadata %r needs an LLM; set LLM_PROVIDER (LangExtract skipped)",
            settings.ingest.metadata,
        )
        return None
    if schema is None:
        log.warning("no extraction schema for this collection; LangExtract skipped")
        return None
    connection = connection_of(settings.llm, os.environ)
    model = langextract_model(
        connection.provider, connection.model, connection.api_key, settings.llm.llm_base_url
    )
    if model is None:
        return None
    cache = Path(settings.storage.storage_dir) / "langextract_cache"
    return CachedLangExtract(langextract_call(schema, model), schema, cache)
