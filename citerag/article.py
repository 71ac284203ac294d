"""One place loads an article: its settings, extraction schema and collection.

The CLI (`main.py`), the API (`main.py serve --article`) and `rag_factory.py` all call
`load_article`, so an article means the same thing to each. The project's files (`config.py`,
`extraction_schemas.py`) are passed in: the package never imports them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from citerag.domain import DomainSchema
from citerag.errors import ConfigError, InputError
from citerag.settings import Settings, settings_from_config

DEFAULT_COLLECTION = "default"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Article:
    """What a run on one article (or on a bare collection, `name` None) is given."""

    name: str | None
    collection: str
    settings: Settings
    schema: DomainSchema | None  # its extraction schema; None: the generic entity labels
    pdf: Path | None  # its PDF as config.py names it


def load_article(
    config: ModuleType,
    schemas: Mapping[str, DomainSchema],
    article: str | None = None,
    collection: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Article:
    """The article's settings, schema (from `schemas`, by its "schema" name) and collection.

    `article` selects its collection unless `collection` names another; `collection` alone
    applies the article stored in it, if one is (none: the package defaults and no schema).
    An unknown article is an InputError naming the known ones.
    """
    entries = article_entries(config)
    if article is not None:
        if article not in entries:
            known = ", ".join(sorted(entries)) or "none"
            raise InputError(
                f"Unknown article {article!r}; choose one of ARTICLE_CONFIGS in config.py: {known}."
            )
        own = entries[article].get("collection")
        if not own:
            raise ConfigError(
                f"ARTICLE_CONFIGS[{article!r}] has no 'collection'; add one in config.py."
            )
        collection = collection or str(own)
    else:
        collection = collection or DEFAULT_COLLECTION
        article = _owner(config, entries, collection)
    entry = entries.get(article, {}) if article is not None else {}
    schema = _schema(schemas, article, entry.get("schema"))
    settings = settings_from_config(config, article, environ)
    if schema is not None:
        settings = settings.with_overrides(vocabulary=schema.vocabulary)
    return Article(
        name=article,
        collection=collection,
        settings=settings,
        schema=schema,
        pdf=Path(entry["directory"]) / entry["filename"] if _names_a_pdf(entry) else None,
    )


def active_article(config: ModuleType) -> str:
    """config.py's ACTIVE_ARTICLE, or a ConfigError when ARTICLE_CONFIGS lacks it."""
    entries = article_entries(config)
    name = getattr(config, "ACTIVE_ARTICLE", None)
    if not isinstance(name, str) or name not in entries:
        known = ", ".join(sorted(entries))
        raise ConfigError(f"ACTIVE_ARTICLE {name!r} is not in ARTICLE_CONFIGS; use one of {known}.")
    return name


def article_entries(config: ModuleType) -> dict[str, dict[str, str]]:
    entries: dict[str, dict[str, str]] = getattr(config, "ARTICLE_CONFIGS", {})
    return entries


def article_folders(config: ModuleType) -> list[Path]:
    """The folders config.py's articles live in (the API's viewer serves PDFs from them)."""
    return sorted({Path(entry["directory"]) for entry in article_entries(config).values()})


def _owner(config: ModuleType, entries: dict[str, dict[str, str]], collection: str) -> str | None:
    owners = sorted(name for name, e in entries.items() if e.get("collection") == collection)
    overrides: dict[str, dict[str, object]] = getattr(config, "ARTICLE_RAG_OVERRIDES", {})
    if len({repr(sorted(overrides.get(name, {}).items())) for name in owners}) > 1:
        raise ConfigError(
            f"Collection {collection!r} belongs to articles {', '.join(owners)} with different"
            " ARTICLE_RAG_OVERRIDES; choose one with --article."
        )
    if owners:
        log.debug("collection %r is article %r's: its overrides apply", collection, owners[0])
    return owners[0] if owners else None


def _schema(
    schemas: Mapping[str, DomainSchema], article: str | None, name: str | None
) -> DomainSchema | None:
    if not name:
        return None
    if name not in schemas:
        log.warning("article %r: unknown schema %r; generic entity labels apply", article, name)
        return None
    return schemas[name]


def _names_a_pdf(entry: Mapping[str, str]) -> bool:
    return bool(entry.get("directory") and entry.get("filename"))
