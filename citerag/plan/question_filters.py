"""Each sub-question's filters, from its own text: years, dates, labels, sections, pages, entities.

Entities are the values enrichment stored (their `distinct()` over the collection) that the
question names, matched whole-word and case-blind. `metadata_filters` turns the ones that are
stored per chunk (years, entities) into LlamaIndex `MetadataFilters` on list fields.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from citerag.enrich.fields import ENTITIES, YEARS
from citerag.plan.references import label_refs, page_spans, sheet_refs
from citerag.store.base import PageRange
from citerag.text.dates import dates, years
from citerag.types import JSONObject

_SECTION_KINDS = frozenset({"section", "item", "chapter"})


@dataclass
class SubQuestionFilters:
    years: list[str] = field(default_factory=list)
    dates: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)  # "figure:1", "equation:3", "table:2"
    sections: list[str] = field(default_factory=list)  # "item:7", "section:2.1"
    pages: list[PageRange] = field(default_factory=list)  # printed numbers, else sheets
    sheets: list[PageRange] = field(default_factory=list)  # by place: 1 the cover, -1 the last
    entities: list[str] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        """The filters found, by field name in field order; page ranges as [first, last]."""
        data: JSONObject = {f.name: getattr(self, f.name) for f in fields(self)}
        data["pages"] = [[s.first, s.last] for s in self.pages]
        data["sheets"] = [[s.first, s.last] for s in self.sheets]
        return {key: value for key, value in data.items() if value}


def filters_for(
    question: str, mentions: Callable[[str], list[str]] | None = None
) -> SubQuestionFilters:
    """The filters a sub-question's text names; `mentions` finds the stored entity
    values it names (none without it)."""
    refs = label_refs(question)
    return SubQuestionFilters(
        years=years(question, expand_decades=True),
        dates=dates(question),
        labels=[r.key for r in refs if r.kind not in _SECTION_KINDS],
        sections=[r.key for r in refs if r.kind in _SECTION_KINDS],
        pages=page_spans(question),
        sheets=sheet_refs(question),
        entities=mentions(question) if mentions else [],
    )


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
