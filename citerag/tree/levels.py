"""Heading levels: from numbering where a heading has it, else from its typographic tier.

Numbered headings take their numbering's rank (parts and chapters, then items, then `1.2`-style
depth). An un-numbered heading sits below the numbered heading in effect; in a document with
numbering, its depth there is the rank of its tier among the tiers of the un-numbered headings of
the same part, chapter or item (a filing's Item 1 may set its sections in capitals and their
sub-sections in bold, while Item 7 starts at bold), so the strongest tier used there comes first.
A tier is (large or not, then: a title in capitals, bold upright, bold italic, other).
"""

from __future__ import annotations

from dataclasses import dataclass

from citerag.tree.patterns import numbering

MAX_LEVEL = 4
_RANK = {"part": 1, "chapter": 1}  # items and keywords take the level items sit at
_SECTION_KINDS = ("part", "chapter", "keyword", "item")  # what un-numbered tiers rank within


@dataclass
class Heading:
    title: str
    page: int  # 1-based
    level: int
    y0: float = 0.0
    kind: str = ""  # the numbering kind ("part", "item", ...); "" when un-numbered
    tier: tuple[int, int] = (0, 0)  # typographic tier, strongest first (see the module doc)

    @property
    def numbered(self) -> bool:
        return bool(self.kind)


def assign_levels(headings: list[Heading], style_ranks: dict[str, int]) -> None:
    """Numbered headings by their numbering; the others one or more below the numbered heading
    in effect: by tier within their section where the document is numbered, else by
    `style_ranks` (1 for the strongest style of the document's un-numbered headings)."""
    kinds = {h.kind for h in headings}
    has_top = bool(kinds & {"part", "chapter", "keyword"})
    item_level = 2 if "part" in kinds else 1
    decimal_base = 1 + has_top + ("item" in kinds)
    numbered_doc = any(h.numbered for h in headings)
    tier_ranks = _tier_ranks(headings)
    in_effect = 0
    for index, heading in enumerate(headings):
        found = numbering(heading.title)
        if heading.kind == "item":
            level = item_level
        elif heading.kind == "decimal" and found is not None:
            level = decimal_base + found.depth - 1
        elif heading.kind == "keyword":
            level = item_level  # "Signatures" sits beside the items of a filing
        elif heading.kind:
            level = _RANK[heading.kind]
        else:
            rank = tier_ranks[index] if numbered_doc else style_ranks.get(heading.title, 1)
            heading.level = min(MAX_LEVEL, in_effect + rank)
            continue
        heading.level = min(MAX_LEVEL, level)
        in_effect = heading.level


def _tier_ranks(headings: list[Heading]) -> dict[int, int]:
    """Each un-numbered heading's index → the rank of its tier among the tiers of the
    un-numbered headings in its section (the span up to the next part, chapter or item)."""
    ranks: dict[int, int] = {}
    section: list[int] = []
    for index, heading in enumerate([*headings, None]):
        if heading is None or heading.kind in _SECTION_KINDS:
            tiers = sorted({headings[i].tier for i in section})
            ranks.update({i: tiers.index(headings[i].tier) + 1 for i in section})
            section = []
        elif not heading.numbered:
            section.append(index)
    return ranks
