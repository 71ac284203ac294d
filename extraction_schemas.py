"""The schema registry: entity labels (GLiNER) and semantic-metadata prompts (LangExtract) per
domain. `config.ARTICLE_CONFIGS[...]["schema"]` names the domain an article uses.

This is the minimal registry the engine validates against today; enrichment fills it out.
"""

from __future__ import annotations

from dataclasses import dataclass

from citerag.errors import ConfigError


@dataclass(frozen=True)
class ExtractionSchema:
    name: str
    entity_labels: tuple[str, ...]  # GLiNER zero-shot labels
    metadata_prompt: str  # the LangExtract instruction for semantic metadata


SCHEMAS: dict[str, ExtractionSchema] = {
    "technical": ExtractionSchema(
        "technical",
        ("method", "algorithm", "dataset", "metric", "software", "model"),
        "Extract the methods, components and measured results the passage describes.",
    ),
    "essay": ExtractionSchema(
        "essay",
        ("person", "organization", "place", "product", "year"),
        "Extract the experiences, periods of life, people and advice the passage describes.",
    ),
    "career": ExtractionSchema(
        "career",
        ("skill", "role", "project", "organization", "person"),
        "Extract the career advice, skills and project types the passage recommends.",
    ),
    "financial": ExtractionSchema(
        "financial",
        ("company", "financial metric", "monetary amount", "fiscal period", "segment", "risk"),
        "Extract the financial metrics, amounts, periods and segments the passage reports.",
    ),
}


def get_schema(name: str) -> ExtractionSchema:
    try:
        return SCHEMAS[name]
    except KeyError:
        known = ", ".join(sorted(SCHEMAS))
        raise ConfigError(f"Unknown extraction schema {name!r}; use one of {known}.") from None
