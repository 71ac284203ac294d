"""What filters and rankings read of a chunk without its text: its place in its document."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from citerag.nodes import BLOCK_TYPE, DOC_ID, DOC_NAME, LABEL, PAGE, PAGE_LABEL, SECTION
from citerag.retrieve.page_evidence import PageKey

PLACE_KEYS = (DOC_ID, DOC_NAME, PAGE, SECTION, BLOCK_TYPE, LABEL)
# A place's keys, as the docstore's chunk metadata names them (what filters are written on).
_KEYS = frozenset((*PLACE_KEYS, PAGE_LABEL))


@dataclass(frozen=True, slots=True)
class Place(Mapping[str, Any]):  # Any: a filter compares what the key holds
    """What filters and rankings read of a chunk: PLACE_KEYS and the printed page label (as the
    docstore's chunk metadata holds them), and its page's key. Read by attribute, or by
    metadata key as a filter names it (`place["page"]`). No enrichment list: a filter on one
    asks the docstore (`citerag.retrieve.filters.chunk_matches`)."""

    doc_id: str
    doc_name: str
    page: int
    section: str | None
    block_type: str | None
    label: str | None
    page_key: PageKey
    page_label: str | None = None  # only where the document prints its own page numbers

    @classmethod
    def of(cls, held: Mapping[str, object], page_key: PageKey | None = None) -> Place:
        """The place of a chunk whose metadata is `held`; repeated strings are shared, since a
        collection holds a place per chunk."""
        doc_id, page = str(held.get(DOC_ID)), int(str(held.get(PAGE, 0)))
        return cls(
            shared_text(doc_id),
            shared_text(str(held.get(DOC_NAME, ""))),
            page,
            _optional(held.get(SECTION)),
            _optional(held.get(BLOCK_TYPE)),
            _optional(held.get(LABEL)),
            page_key or PageKey(doc_id, page),
            _optional(held.get(PAGE_LABEL)) or None,
        )

    def __getitem__(self, key: str) -> Any:
        if key not in _KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(k for k in (*PLACE_KEYS, PAGE_LABEL) if self[k] is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _optional(value: object) -> str | None:
    return None if value is None else shared_text(str(value))


def shared_text(value: str) -> str:
    """`value`, one copy per process: a collection holds a place per chunk."""
    return sys.intern(value)


def place_texts(
    held: Mapping[str, object],
) -> tuple[str, str, str | None, str | None, str | None, str | None]:
    """The strings of the place of a chunk whose metadata is `held`, as `Place.of` reads them:
    document id, document name, section, block type, label and page label (None: none)."""
    return (
        str(held.get(DOC_ID)),
        str(held.get(DOC_NAME, "")),
        _optional(held.get(SECTION)),
        _optional(held.get(BLOCK_TYPE)),
        _optional(held.get(LABEL)),
        _optional(held.get(PAGE_LABEL)) or None,
    )
