"""What a question's own text names: pages, figure/table/equation/section labels, years, dates.

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
_PAGES = re.compile(
    r"\b(?:pages?|pp?\.)\s*(\d+(?:\s*(?:-|–|to|through)\s*\d+)?"
    r"(?:\s*(?:,|and|&)\s*\d+(?:\s*(?:-|–|to|through)\s*\d+)?)*)",
    re.I,
)
_RANGE = re.compile(r"(\d+)\s*(?:-|–|to|through)\s*(\d+)")


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
    return [s for s in spans if s.first >= 1]


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
