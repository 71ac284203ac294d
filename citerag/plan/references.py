"""What a question's own text names: pages, figure/table/equation/section labels, years, dates.

A page number ("page 28", "p. 28", "pages 30-31", "page three") means the page printed so where
the document prints its numbers, else the sheet; the `pages` tool resolves it. A page named by
its place ("the cover", "the first page", "the second-to-last page") is a sheet: `sheet_refs`
gives those, counted from the end when negative (-1 is the last sheet).

Labels come back normalized as `(kind, label)` pairs, the same form ingest stores
(`figure:4.3`, `equation:3`, `table:1`), so that a reference resolves by equality. Enumerations
share their noun: "Figure 4.1 and 4.3" names two figures, "pages 3-5 and 9" two ranges.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from citerag.store.base import PageRange

LABEL_KINDS = {
    "figure": "figure",
    "figures": "figure",
    "fig": "figure",
    "figs": "figure",
    "table": "table",
    "tables": "table",
    "tab": "table",
    "equation": "equation",
    "equations": "equation",
    "eq": "equation",
    "eqs": "equation",
    "formula": "equation",
    "section": "section",
    "sections": "section",
    "sec": "section",
    "§": "section",
    "item": "item",
    "items": "item",
    "chapter": "chapter",
    "chapters": "chapter",
}
_NUMBER = r"\(?\d+(?:\.\d+)*[a-z]?\)?"
_LIST = rf"{_NUMBER}(?:\s*(?:,|and|&|or|to|-|–)\s*{_NUMBER})*"
_KIND = (
    r"figures?|figs?\.?|tables?|tab\.|equations?|eqs?\.?|formula|sections?|sec\.|§|items?|chapters?"
)
_LABELS = re.compile(rf"(?<!\w)({_KIND})\s*({_LIST})", re.I)
_BARE_EQUATION = re.compile(r"(?:^|\s)\((\d+(?:\.\d+)?)\)(?=[\s?.,;]|$)")
_TO = r"\s*(?:-|–|to|through)\s*"
_PAGE_SPAN = rf"\d+(?:{_TO}\d+)?"  # "4" or "4-6"
_PAGES = re.compile(rf"\b(?:pages?|pp?\.)\s*({_PAGE_SPAN}(?:\s*(?:,|and|&)\s*{_PAGE_SPAN})*)", re.I)
_RANGE = re.compile(rf"(\d+){_TO}(\d+)")
_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_NUMBER_WORD = (
    rf"(?:(?:{'|'.join(_TENS)})(?:[\s-](?:{'|'.join(_UNITS[1:10])}))?|{'|'.join(_UNITS[1:])})"
)
_WORD_PAGES = re.compile(
    rf"\b(pages?)\s+({_NUMBER_WORD})(?:{_TO}({_NUMBER_WORD}))?\b(?!\s*(?:pages|times))", re.I
)
_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
_ORDINAL = "|".join(_ORDINALS)
_FROM_END = re.compile(
    rf"\b(?:the\s+)?(?:({_ORDINAL})[\s-]+(?:to[\s-]+)?(?:the[\s-]+)?)?(?:last|final)\s+page\b",
    re.I,
)
_PENULTIMATE = re.compile(r"\bpenultimate\s+page\b", re.I)
_FROM_START = re.compile(rf"\bthe\s+({_ORDINAL})\s+page\b", re.I)
_COVER = re.compile(
    r"\b(?:the\s+(?:front\s+)?cover(?:\s+page)?|cover\s+page)\b(?!\s+(?:letter|story|image))", re.I
)


@dataclass(frozen=True)
class LabelRef:
    kind: str  # figure, table, equation, section, item, chapter
    label: str  # "4.3", "3", "7a"

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.label}"

    def __str__(self) -> str:
        return f"{self.kind.capitalize()} {self.label}"


def page_spans(text: str) -> list[PageRange]:
    """Explicit pages: "page 5", "pages 3-7", "pp. 10–12 and 15"."""
    spans: list[PageRange] = []
    for match in _PAGES.finditer(text):
        for part in re.split(r",|and|&", match.group(1)):
            span = _RANGE.search(part)
            if span:
                first, last = int(span.group(1)), int(span.group(2))
                spans.append(PageRange(min(first, last), max(first, last)))
            elif part.strip().isdigit():
                spans.append(PageRange(int(part), int(part)))
    for match in _WORD_PAGES.finditer(text):
        first = number_word(match.group(2))
        last = number_word(match.group(3)) if match.group(3) else first
        spans.append(PageRange(min(first, last), max(first, last)))
    return list(dict.fromkeys(s for s in spans if s.first >= 1))


def number_word(word: str) -> int:
    """ "three" -> 3, "twenty-one" -> 21 (one to ninety-nine)."""
    parts = re.split(r"[\s-]+", word.strip().casefold())
    if parts[0] in _TENS:
        return _TENS[parts[0]] + (_UNITS.index(parts[1]) if len(parts) > 1 else 0)
    return _UNITS.index(parts[0])


def sheet_refs(text: str) -> list[PageRange]:
    """Pages named by their place: the cover and "the first page" (sheet 1), "the third page"
    (3), "the last page" (-1), "the second-to-last page" or "penultimate page" (-2)."""
    found: list[int] = []
    if _COVER.search(text) and not re.search(r"\bback\s+cover\b", text, re.I):
        found.append(1)
    if re.search(r"\bback\s+cover\b", text, re.I):
        found.append(-1)
    for match in _FROM_START.finditer(text):
        found.append(_ORDINALS[match.group(1).casefold()])
    for match in _FROM_END.finditer(text):
        found.append(-_ORDINALS[match.group(1).casefold()] if match.group(1) else -1)
    if _PENULTIMATE.search(text):
        found.append(-2)
    return [PageRange(n, n) for n in dict.fromkeys(found)]


def label_refs(text: str) -> list[LabelRef]:
    """Figure, table, equation, section, item and chapter labels the text names, in order."""
    found: dict[LabelRef, None] = {}
    for match in _LABELS.finditer(text):
        kind = LABEL_KINDS[match.group(1).casefold().rstrip(".")]
        for number in _label_numbers(match.group(2)):
            found.setdefault(LabelRef(kind, number), None)
    if re.search(r"\b(?:equation|eq|formula)s?\b", text, re.I):
        for match in _BARE_EQUATION.finditer(text):
            found.setdefault(LabelRef("equation", match.group(1)), None)
    return list(found)


def _label_numbers(listed: str) -> list[str]:
    numbers: list[str] = []
    for part in re.split(r"\s*(?:,|and|&|or)\s*", listed):
        span = re.fullmatch(r"\(?(\d+)\)?\s*(?:-|–|to)\s*\(?(\d+)\)?", part.strip())
        if span and int(span.group(2)) - int(span.group(1)) <= 20:
            numbers.extend(str(n) for n in range(int(span.group(1)), int(span.group(2)) + 1))
        elif part.strip():
            numbers.append(part.strip().strip("()").casefold())
    return [n for n in numbers if n]
