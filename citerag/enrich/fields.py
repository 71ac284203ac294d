"""The chunk metadata keys enrichment fills. Every one is a list of strings (possibly empty).

They live in the docstore's node metadata and, case-folded, in its value table, which filters
and evidence ask for the chunks carrying a value (`DocStore.chunks_carrying`); none is sent to
the embedder or to an LLM. The names are defined in `citerag.nodes` (below the store layer).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from citerag.nodes import DATES, ENTITIES, LABELS, LIST_FIELDS, MONEY, PERCENTS, TOPICS, YEARS

ENRICHED_BY = "enriched_by"  # "rules", "gliner", "rules+langextract", ...
ALL_KEYS = (*LIST_FIELDS, ENRICHED_BY)

__all__ = [
    "ALL_KEYS",
    "DATES",
    "ENRICHED_BY",
    "ENTITIES",
    "LABELS",
    "LIST_FIELDS",
    "MONEY",
    "PERCENTS",
    "TOPICS",
    "YEARS",
    "FieldExtractor",
    "Fields",
]

Fields = dict[str, list[str]]  # field name -> values, each once, in the order found


class FieldExtractor(Protocol):
    """One enrichment backend (rules, GLiNER, LangExtract): the list fields it fills, per text."""

    name: str

    def fields(self, texts: Sequence[str]) -> list[Fields]:
        """One dict per text, in order: some of `LIST_FIELDS`, each a list of distinct,
        non-empty strings."""
        ...
