"""Each sub-question's filters, from its own text: years, dates, labels, sections, pages, entities.

Entities are the values enrichment stored (their `distinct()` over the collection) that the
question names, matched whole-word and case-blind. `metadata_filters` turns the ones that are
stored per chunk (years, entities) into LlamaIndex `MetadataFilters` on list fields.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import lru_cache

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from citerag.enrich.fields import ENTITIES, YEARS
from citerag.plan.references import label_refs, page_spans
from citerag.store.base import PageRange
from citerag.text.dates import dates, years
from citerag.types import JSONObject

MIN_ENTITY_CHARS = 3
_SECTION_KINDS = frozenset({"section", "item", "chapter"})


@dataclass
class SubQuestionFilters:
    years: list[str] = field(default_factory=list)
    dates: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)  # "figure:1", "equation:3", "table:2"
    sections: list[str] = field(default_factory=list)  # "item:7", "section:2.1"
    pages: list[PageRange] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        """The filters found, by field name in field order; page ranges as [first, last]."""
        data: JSONObject = {f.name: getattr(self, f.name) for f in fields(self)}
        data["pages"] = [[s.first, s.last] for s in self.pages]
        return {key: value for key, value in data.items() if value}


def filters_for(question: str, known_entities: Sequence[str] = ()) -> SubQuestionFilters:
    refs = label_refs(question)
    return SubQuestionFilters(
        years=years(question, expand_decades=True),
        dates=dates(question),
        labels=[r.key for r in refs if r.kind not in _SECTION_KINDS],
        sections=[r.key for r in refs if r.kind in _SECTION_KINDS],
        pages=page_spans(question),
        entities=entity_mentions(question, known_entities),
    )


def entity_mentions(question: str, known: Sequence[str]) -> list[str]:
    """Stored entity values the question names (longest first, none inside another)."""
    return entity_matcher(tuple(known)).mentions(question)


class EntityMatcher:
    """Every known value in one compiled pattern, so a question costs one scan of its own text
    rather than one regex per stored value (hundreds per collection overflow `re`'s cache)."""

    def __init__(self, known: Sequence[str]) -> None:
        by_folded: dict[str, str] = {}
        for value in sorted(known, key=len, reverse=True):
            if len(value) >= MIN_ENTITY_CHARS:
                by_folded.setdefault(value.casefold(), value)
        self._value_of = by_folded
        alternatives = "|".join(re.escape(folded) for folded in by_folded)  # longest first
        # A lookahead match at every position finds overlapping mentions too.
        self._pattern = re.compile(rf"(?=(?<!\w)({alternatives})(?!\w))") if by_folded else None

    def mentions(self, question: str) -> list[str]:
        if self._pattern is None:
            return []
        named = {self._value_of[m] for m in self._pattern.findall(question.casefold())}
        found: list[str] = []
        for value in sorted(named, key=lambda v: (-len(v), v)):
            if not any(value.casefold() in longer.casefold() for longer in found):
                found.append(value)
        return found


@lru_cache(maxsize=16)
def entity_matcher(known: tuple[str, ...]) -> EntityMatcher:
    """One matcher per distinct set of known values (a collection snapshot's), built once."""
    return EntityMatcher(known)


def metadata_filters(
    filters: SubQuestionFilters, use_years: bool = True, use_entities: bool = True
) -> MetadataFilters | None:
    """Chunk filters on the stored list fields: any of the years, and any of the entities."""
    items: list[MetadataFilter | MetadataFilters] = []
    if use_years and filters.years:
        items.append(MetadataFilter(key=YEARS, value=filters.years, operator=FilterOperator.ANY))
    if use_entities and filters.entities:
        items.append(
            MetadataFilter(key=ENTITIES, value=filters.entities, operator=FilterOperator.ANY)
        )
    if not items:
        return None
    return MetadataFilters(filters=items, condition=FilterCondition.AND)
