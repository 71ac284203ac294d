"""The periods a question names: fiscal years, quarters, and the kind of report they suggest.

"FY2019", "FY19", "fiscal 2019", "fiscal year 2019", "in 2019", "Q2 FY2023", "second quarter of
2023", "between FY2023 and FY2022". Years are four digits after expansion; a question's years
are returned in the order it names them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FY = re.compile(r"\bFY\s?'?(\d{4}|\d{2})\b|\bfiscal\s+(?:year\s+)?(\d{4})\b", re.I)
_YEAR = re.compile(r"(?<![\d$.,])((?:19|20)\d{2})(?![\d%])")
_QUARTER = re.compile(
    r"\bQ([1-4])\b|\b(first|second|third|fourth)\s+(?:fiscal\s+)?quarter\b|\b([1-4])Q\b", re.I
)
_QUARTER_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_KIND_WORDS = (
    ("quarterly report", re.compile(r"\b10-?Q\b|\bquarterly report\b", re.I)),
    ("annual report", re.compile(r"\b10-?K\b|\bannual report\b", re.I)),
    ("current report", re.compile(r"\b8-?K\b|\bcurrent report\b", re.I)),
    ("earnings release", re.compile(r"\bearnings (?:release|call)\b|\bpress release\b", re.I)),
)


@dataclass(frozen=True)
class NamedPeriod:
    years: tuple[int, ...] = ()  # in the order named, each once
    fiscal: bool = False  # named as a fiscal year ("FY2019", "fiscal 2019")
    quarter: int | None = None
    kind: str = ""  # a report kind the question names ("10-Q" -> "quarterly report")


def named_period(question: str) -> NamedPeriod:
    years: dict[int, None] = {}
    fiscal = False
    for match in _FY.finditer(question):
        digits = match.group(1) or match.group(2)
        years.setdefault(int(digits) if len(digits) == 4 else 2000 + int(digits), None)
        fiscal = True
    for match in _YEAR.finditer(question):
        years.setdefault(int(match.group(1)), None)
    return NamedPeriod(tuple(years), fiscal, _quarter(question), _kind(question))


def _quarter(question: str) -> int | None:
    found = _QUARTER.search(question)
    if found is None:
        return None
    if found.group(1) or found.group(3):
        return int(found.group(1) or found.group(3))
    return _QUARTER_WORDS[found.group(2).lower()]


def _kind(question: str) -> str:
    return next((kind for kind, pattern in _KIND_WORDS if pattern.search(question)), "")
