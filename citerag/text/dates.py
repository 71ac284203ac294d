"""Years and dates as written: the patterns every stage matches them with, and the lists
ingest stores and questions filter by."""

from __future__ import annotations

import re

MONTH_NAMES = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
# A year in prose: 1800-2099.
YEAR = r"(?:1[89]\d\d|20\d\d)"
# A year heading a table column: 1900-2099 (a bare 18xx in a table is more likely an amount).
TABLE_YEAR = r"(?:19|20)\d\d"

_YEAR_IN_TEXT = re.compile(rf"(?<![\d$.,])({YEAR})(?![\d%])")
_DECADE = re.compile(r"\b(1[89]\d0|20\d0)s\b")
_DATE = re.compile(rf"\b(?:{'|'.join(MONTH_NAMES)})\s+(?:\d{{1,2}},\s*)?{YEAR}\b", re.I)


def years(text: str, expand_decades: bool = False) -> list[str]:
    """Four-digit years (1800-2099) and decades as written ("1990s"). A question expands a
    decade to its ten years too (it asks about any of them); a passage does not (a passage on
    "the 1990s" does not mention 1996)."""
    found: dict[str, None] = {}
    for match in _YEAR_IN_TEXT.finditer(text):
        if text[match.end() : match.end() + 1] != "s":
            found.setdefault(match.group(1), None)
    for match in _DECADE.finditer(text):
        found.setdefault(f"{match.group(1)}s", None)
        if expand_decades:
            start = int(match.group(1))
            for year in range(start, start + 10):
                found.setdefault(str(year), None)
    return list(found)


def dates(text: str) -> list[str]:
    """Month-and-year dates as written ("February 2021", "March 3, 2020")."""
    return list(dict.fromkeys(" ".join(m.group(0).split()) for m in _DATE.finditer(text)))
