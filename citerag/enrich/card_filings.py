"""What a filing's cover says it is: the issuer, the form, the period it covers.

SEC covers are regular: "FORM 10-K", "For the fiscal year ended November 27, 2015", the
registrant's name above "(Exact name of registrant as specified in its charter)", the trading
symbol in the table of registered securities. Earnings releases open with "<Issuer> reports
fiscal 2023 results". Each reader returns what it found; `citerag.enrich.cards` combines them
with the file name and the PDF's metadata.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import date

from citerag.text.dates import MONTH_NAMES

_FORMS = (
    ("annual report", re.compile(r"\bform\s+10-?k\b|\bannual report pursuant to section", re.I)),
    (
        "quarterly report",
        re.compile(r"\bform\s+10-?q\b|\bquarterly report pursuant to section", re.I),
    ),
    ("current report", re.compile(r"\bform\s+8-?k\b|\bcurrent\s+report\b", re.I)),
    ("annual report", re.compile(r"\bform\s+20-?f\b|\bannual report and accounts\b", re.I)),
)
_RELEASE = re.compile(
    r"\b(?:reports?|announces?|posts?|delivers?)\b[^.\n]{0,60}\b(?:results|earnings)\b", re.I
)
_MONTH = r"(?P<month>" + "|".join(m[:3] + r"[a-z]*" for m in MONTH_NAMES) + r")\.?"
_DATE = _MONTH + r"\s+(?P<day>\d{1,2}),?\s+(?P<year>(?:19|20)\d{2})"
_PERIOD_ENDED = re.compile(
    r"(?P<what>fiscal\s+year|quarterly\s+period|year|period)\s+ended\s*(?:\n\s*\S[^\n]*){0,2}?"
    r"[\s:]*" + _DATE,
    re.I,
)
_REPORT_DATE = re.compile(r"date\s+of\s+report[^:]{0,80}:\s*" + _DATE, re.I)
_REGISTRANT = re.compile(r"\(\s*exact\s+name\s+of\s+registrant", re.I)
_TICKER_HEAD = re.compile(r"trading\s+symbol", re.I)
_TICKER = re.compile(r"^[A-Z]{1,5}$")
_NOT_TICKERS = frozenset({"N", "A", "NA", "LLC", "NYSE", "NONE", "INC", "THE", "OF", "PLC"})
_NOT_NAME_LINE = re.compile(
    r"\d{3}|commission|reported\)|file\s+number|securities|exchange act|^\W*$|^\(", re.I
)
_FISCAL_YEAR = re.compile(r"\bfiscal\s+(?:year\s+)?((?:19|20)\d{2})\b|\bFY\s?'?((?:19|20)?\d{2})\b")
_QUARTER_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_QUARTER_OF = re.compile(
    r"\b(first|second|third|fourth)\s+quarter\s+(?:of\s+)?fiscal\s+(?:year\s+)?((?:19|20)\d{2})"
    r"|\bQ([1-4])\s*(?:FY|fiscal\s+)'?((?:19|20)?\d{2})\b",
    re.I,
)
# "Best Buy Co., Inc. (NYSE: BBY)": a release names its issuer and symbol together.
_LISTED = re.compile(
    r"(?P<name>[A-Z][\w.&'’-]*(?:\s+[A-Z&][\w.&'’-]*)*(?:,?\s+(?:Inc|Corp|Co|plc|Ltd)\.?)*)"
    r"\s*\((?:NYSE|NASDAQ|Nasdaq|NASDAQ\s*GS|ASX)\s*:\s*(?P<ticker>[A-Z]{1,5})\)"
)
# A company's legal name, for a cover whose name is a picture: the most printed one wins.
_LEGAL_NAME = re.compile(
    r"\b(?P<name>[A-Z][\w&'’-]*(?:\s+[A-Z&][\w&'’-]*){0,3},?\s+(?:Inc\.|Incorporated|Corporation"
    r"|Company|plc|PLC|Co\.))"
)
_FILER_CATEGORY = re.compile(r"\b(?:reporting|growth|filer|accelerated|holding company)\b", re.I)
_FILE_NUMBER = re.compile(r"commission\s+file\s+(?:number|no\.?)\s*:?\s*[\d-]+[^\n]*\n", re.I)
_LEGAL_SUFFIX = re.compile(
    r"\b(?:inc|incorporated|corp|corporation|co|company|plc|ltd|limited|llc|n\.v|s\.a)\b\.?", re.I
)
_SEC_FORM = re.compile(r"\bform\s+(?:10-?[kq]|8-?k|20-?f)\b", re.I)
_RELEASE_ISSUER = re.compile(
    r"^\s*(?P<name>[A-Z][\w.&,'’ -]{1,60}?)\s+(?:reports?|announces?|posts?|delivers?)\b", re.M
)


@dataclass(frozen=True)
class CoverFacts:
    kind: str = ""
    organisation: str = ""
    ticker: str = ""
    period_end: date | None = None
    date: date | None = None
    fiscal_year: int | None = None  # as the document itself names its fiscal year
    quarter: int | None = None


def read_cover(text: str, body: str) -> CoverFacts:
    """The facts a filing's first page (`text`) and its next pages (`body`) state."""
    kind = filing_kind(text)
    ended = _period_end(text)
    quarter, year = _named_quarter(text + "\n" + body) if kind != "annual report" else (None, None)
    listed = _LISTED.search(text[:3000])
    organisation = registrant(text) or (listed.group("name") if listed else "")
    if kind == "earnings release":
        organisation = organisation or release_issuer(text)
    organisation = organisation or named_after_file_number(text)
    if not organisation and _SEC_FORM.search(text[:3000]):  # a cover whose name is a picture
        organisation = legal_name(text + "\n" + body)
    return CoverFacts(
        kind=kind,
        organisation=organisation,
        ticker=ticker(text) or (listed.group("ticker") if listed else ""),
        period_end=ended,
        date=_report_date(text),
        fiscal_year=year or named_fiscal_year(text + "\n" + body, ended),
        quarter=quarter,
    )


def filing_kind(text: str) -> str:
    """The form the first page names, an earnings release by its headline, else ""."""
    head = text[:3000]
    for kind, pattern in _FORMS:
        if pattern.search(head):
            return kind
    return "earnings release" if _RELEASE.search(head[:600]) else ""


def registrant(text: str) -> str:
    """The name printed above "(Exact name of registrant ...)": up to three lines of it."""
    found = _REGISTRANT.search(text)
    if found is None:
        return ""
    lines = [line.strip() for line in text[: found.start()].splitlines()]
    name: list[str] = []
    for line in reversed(lines):
        if not line:
            if name:
                break
            continue
        if _NOT_NAME_LINE.search(line) or len(name) == 3:
            break
        name.insert(0, line)
    return " ".join(" ".join(name).split())


def legal_name(text: str) -> str:
    """The legal name the pages print most ("Foot Locker, Inc."), not a filer category."""
    names = Counter(" ".join(m.group("name").split()) for m in _LEGAL_NAME.finditer(text))
    for name, _ in names.most_common():
        if not _FILER_CATEGORY.search(name):
            return name
    return ""


def named_after_file_number(text: str) -> str:
    """The registrant's name on a cover that prints it under the commission file number with
    no "(Exact name of registrant ...)" line: the first line there that reads as a name."""
    found = _FILE_NUMBER.search(text[:4000])
    if found is None:
        return ""
    for line in text[found.end() :].splitlines()[:6]:
        words = " ".join(line.split())
        if words and not _NOT_NAME_LINE.search(words) and re.search(r"[A-Za-z]{2}", words):
            return words if _LEGAL_SUFFIX.search(words) else ""
    return ""


def release_issuer(text: str) -> str:
    found = _RELEASE_ISSUER.search(text[:600])
    return found.group("name").strip() if found else ""


def ticker(text: str) -> str:
    """The first symbol in the table of registered securities."""
    found = _TICKER_HEAD.search(text)
    if found is None:
        return ""
    for token in re.split(r"[\s|]+", text[found.end() : found.end() + 400]):
        token = token.strip("()*,.")
        if _TICKER.match(token) and token not in _NOT_TICKERS:
            return token
    return ""


def named_fiscal_year(text: str, ended: date | None) -> int | None:
    """The fiscal year the document covers. A year ending early in a calendar year is named
    by the year it ends in by some issuers (Best Buy's fiscal 2023 ends in January 2023) and
    by the year before by others (Foot Locker's fiscal 2022 ends in January 2023): the one the
    text names more often decides."""
    if ended is None:
        years = Counter(_fiscal_years(text))
        return years.most_common(1)[0][0] if years else None
    if ended.month > 3:
        return ended.year
    named = Counter(y for y in _fiscal_years(text) if y in (ended.year, ended.year - 1))
    if named[ended.year - 1] > named[ended.year]:
        return ended.year - 1
    return ended.year


def _fiscal_years(text: str) -> list[int]:
    found = []
    for match in _FISCAL_YEAR.finditer(text):
        digits = match.group(1) or match.group(2)
        found.append(int(digits) if len(digits) == 4 else 2000 + int(digits))
    return found


def _named_quarter(text: str) -> tuple[int | None, int | None]:
    """("second quarter of fiscal 2024") -> (2, 2024), the most often named."""
    named: Counter[tuple[int, int]] = Counter()
    for match in _QUARTER_OF.finditer(text):
        if match.group(1):
            named[(_QUARTER_WORDS[match.group(1).lower()], int(match.group(2)))] += 1
        else:
            digits = match.group(4)
            named[
                (int(match.group(3)), int(digits) if len(digits) == 4 else 2000 + int(digits))
            ] += 1
    if not named:
        return None, None
    return named.most_common(1)[0][0]


def _period_end(text: str) -> date | None:
    found = _PERIOD_ENDED.search(text[:4000])
    return _as_date(found) if found else None


def _report_date(text: str) -> date | None:
    found = _REPORT_DATE.search(text[:4000])
    return _as_date(found) if found else None


def _as_date(match: re.Match[str]) -> date | None:
    try:
        return date(int(match.group("year")), _month(match), int(match.group("day")))
    except ValueError:
        return None


def _month(match: re.Match[str]) -> int:
    name = match.group("month").lower()
    return next(i for i, month in enumerate(MONTH_NAMES, start=1) if name.startswith(month[:3]))
