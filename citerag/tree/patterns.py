"""Heading numbering: `PART II`, `Item 7A.`, `CHAPTER 3`, `1.2 Title`, and structural labels.

A pattern gives a heading a key (to spot the same heading twice, as in a table of contents)
and a rank: parts and chapters sit above items, items above numbered sections.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PART = re.compile(r"^part\s+([ivx]+|\d+)\b\.?", re.I)
_CHAPTER = re.compile(r"^chapter\s+(\d+|[ivx]+)\b\.?:?", re.I)
_ITEM = re.compile(r"^item\s+(\d+[a-z]?)\s*[.:]", re.I)
_DECIMAL = re.compile(r"^(\d{1,2}(?:\.\d{1,2})*)\.?\s+(?=[A-Z])")
_KEYWORD = re.compile(
    r"^(introduction|preface|foreword|prologue|epilogue|conclusions?|final thoughts|abstract|"
    r"acknowledge?ments|references|bibliography|signatures|appendix(?:\s+[a-z0-9]+)?)$",
    re.I,
)
_FIGURE_LABEL = re.compile(r"^(step|figure|fig\.|table|exhibit|phase|stage)\s+[\w.]+:?$", re.I)
CONTENTS = re.compile(r"^(table\s+of\s+contents|contents|index)$", re.I)


@dataclass(frozen=True)
class Numbering:
    kind: str  # "part", "chapter", "keyword", "item" or "decimal"
    key: str  # "part ii", "item 7a", "1.2"
    depth: int  # 1 for parts/chapters/items/"1", 2 for "1.2", ...
    length: int  # characters of the label itself at the start of the text


def numbering(text: str) -> Numbering | None:
    """The structural numbering at the start of a heading text, if any."""
    stripped = text.strip()
    for kind, pattern in (("part", _PART), ("chapter", _CHAPTER), ("item", _ITEM)):
        match = pattern.match(stripped)
        if match:
            return Numbering(kind, f"{kind} {match.group(1).casefold()}", 1, match.end())
    if _KEYWORD.match(stripped):
        return Numbering("keyword", stripped.casefold(), 1, len(stripped))
    match = _DECIMAL.match(stripped)
    if match:
        number = match.group(1)
        return Numbering("decimal", number, number.count(".") + 1, match.end())
    return None


def is_label_only(text: str) -> bool:
    """A part/chapter/keyword label with no title after it ("CHAPTER 3", "Introduction")."""
    found = numbering(text)
    if found is None or found.kind in ("item", "decimal"):
        return False
    return not text.strip()[found.length :].strip(" .:-–—")


def is_figure_label(text: str) -> bool:
    """ "Step 1", "Figure 2", "Exhibit 10.11": labels of figures and boxes, not sections."""
    return bool(_FIGURE_LABEL.match(text.strip()))


def split_part_prefix(text: str) -> list[str]:
    """ "PART II Item 5. Market ..." is two headings: the part and the item."""
    match = _PART.match(text.strip())
    if match is None:
        return [text]
    rest = text.strip()[match.end() :].strip()
    if rest and _ITEM.match(rest):
        return [text.strip()[: match.end()].strip(), rest]
    return [text]
