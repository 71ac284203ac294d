"""Numbers in text, read by value and scale: "1,577", "$1.6 billion", "14 %", "(497,923)".

Shared by the table answers (cells parsed), the number check (each number of an answer looked
for in its cited sources) and the answer benchmark (answers matched to references by value).
Pure regular expressions compiled once: cheap enough to run on every answer.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

SCALE_WORDS: dict[str, float] = {
    "thousand": 1e3,
    "thousands": 1e3,
    "k": 1e3,
    "million": 1e6,
    "millions": 1e6,
    "mn": 1e6,
    "m": 1e6,
    "billion": 1e9,
    "billions": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "trillion": 1e12,
    "trillions": 1e12,
}
# Scales a figure may be written in elsewhere: "24,996,056" in a table "in thousands" is
# "$25.0 billion" in prose.
SCALES = (1.0, 1e3, 1e6, 1e9)

_NUMBER = re.compile(
    r"(?<![\w.,])(?<![A-Za-z]-)"  # not inside a word or a label such as COVID-19 or Q4
    r"(?P<open>\()?(?P<currency>[$€£¥])?\s?"
    r"(?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?![\d,]*\.?\d)"
    r"\)?(?:\s?(?P<percent>%|percent\b|per cent\b))?"
    r"(?:\s?(?P<scale>thousands?|millions?|billions?|trillions?|mn|bn)\b|(?P<short>[kmb])\b)?",
    re.IGNORECASE,
)
_REFERENCE = re.compile(
    r"(?:item|table|figure|fig\.|page|pages|p\.|pp\.|section|note|part|chapter|eq\.|"
    r"equation|step|appendix|exhibit)\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Quantity:
    """A number as written (`text`, its span) and as a value: `value` includes the scale word."""

    text: str
    start: int
    end: int
    mantissa: float  # the digits as written, sign dropped: 1.6 for "$1.6 billion"
    decimals: int  # digits after the point as written: 1 for "1.6"
    scale: float  # 1e9 for "billion", else 1
    percent: bool
    currency: bool

    @property
    def value(self) -> float:
        return self.mantissa * self.scale

    @property
    def is_year(self) -> bool:
        plain = self.scale == 1 and not self.percent and not self.currency and self.decimals == 0
        return plain and "," not in self.text and 1900 <= self.mantissa <= 2100


def quantities(text: str, skip_references: bool = True) -> list[Quantity]:
    """Every number in `text`, left to right; those naming a page, table, item... left out."""
    found: list[Quantity] = []
    for match in _NUMBER.finditer(text):
        if skip_references and _REFERENCE.search(text[max(0, match.start() - 12) : match.start()]):
            continue
        found.append(_quantity(match))
    return found


def _quantity(match: re.Match[str]) -> Quantity:
    digits = match.group("digits").replace(",", "")
    scale_word = (match.group("scale") or match.group("short") or "").lower()
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    text = match.group(0).strip()
    return Quantity(
        text=text,
        start=match.start() + (len(match.group(0)) - len(match.group(0).lstrip())),
        end=match.end(),
        mantissa=float(digits),
        decimals=decimals,
        scale=SCALE_WORDS.get(scale_word, 1.0),
        percent=bool(match.group("percent")),
        currency=bool(match.group("currency")),
    )


def same_figure(claimed: Quantity, written: Quantity) -> bool:
    """Whether `claimed` states the figure `written` shows, at the precision `claimed` is written
    in: "1,577" in a table in millions is "$1.6 billion" and "1577"; a year only equals itself."""
    if not (math.isfinite(claimed.value) and math.isfinite(written.value)):
        return False  # hundreds of digits: no figure to compare
    if claimed.is_year or written.is_year:
        return claimed.mantissa == written.mantissa and claimed.is_year == written.is_year
    return any(
        _rounds_to(written.value * factor / claimed.scale, claimed.mantissa, claimed.decimals)
        for factor in SCALES
    )


def _rounds_to(value: float, mantissa: float, decimals: int) -> bool:
    """`value` written with `decimals` digits after the point reads `mantissa`."""
    return abs(value - mantissa) <= 0.5 * 10.0**-decimals + 1e-9 * max(1.0, abs(mantissa))


def within_tolerance(found: Quantity, reference: Quantity, tolerance: float) -> bool:
    """Whether two figures agree within a relative `tolerance`, at any of the usual scales
    ("$24,996,056 thousand" and "24,996,056" and "$25.0 billion" agree at 1%)."""
    if not (math.isfinite(found.value) and math.isfinite(reference.value)):
        return False
    if found.is_year or reference.is_year:
        return found.mantissa == reference.mantissa
    target = reference.value
    if target == 0:
        return found.value == 0
    return any(
        abs(found.value * factor - target) <= tolerance * abs(target)
        or abs(found.value - target * factor) <= tolerance * abs(target * factor)
        for factor in SCALES
    )


def any_figure(claimed: Quantity, written: Iterable[Quantity]) -> bool:
    return any(same_figure(claimed, other) for other in written)


class FigureIndex:
    """The figures of one text, searchable as `same_figure` compares them: a claimed figure is
    looked up by bisection in each scale's window rather than against every number."""

    def __init__(self, years: set[float], values: list[float]) -> None:
        self._years = years
        self._values = sorted(values)

    def holds(self, claimed: Quantity) -> bool:
        if not math.isfinite(claimed.value):
            return False
        if claimed.is_year:
            return claimed.mantissa in self._years
        half = 0.5 * 10.0**-claimed.decimals + 1e-9 * max(1.0, claimed.mantissa)
        low, high = claimed.mantissa - half, claimed.mantissa + half
        for factor in SCALES:
            start = bisect.bisect_left(self._values, low * claimed.scale / factor)
            if start < len(self._values) and self._values[start] <= high * claimed.scale / factor:
                return True
        return False


@functools.lru_cache(maxsize=256)
def figure_index(text: str) -> FigureIndex:
    """Every figure of `text` (labels included), indexed; cached, since the same chunks are
    cited again and again. Reads the matches directly: a source can hold hundreds of numbers."""
    years: set[float] = set()
    values: list[float] = []
    for match in _NUMBER.finditer(text):
        digits = match.group("digits")
        mantissa = float(digits.replace(",", ""))
        scale_word = (match.group("scale") or match.group("short") or "").lower()
        plain = not (scale_word or match.group("percent") or match.group("currency"))
        if plain and "," not in digits and "." not in digits and 1900 <= mantissa <= 2100:
            years.add(mantissa)
        elif math.isfinite(mantissa):
            values.append(mantissa * SCALE_WORDS.get(scale_word, 1.0))
    return FigureIndex(years, values)
