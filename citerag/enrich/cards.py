"""A document's card, read by rules from its first pages, its PDF metadata and its file name.

The cover is trusted first (it is what the issuer printed), the file name fills what the cover
leaves open ("ADOBE_2015_10K.pdf", "AMCOR_2023Q2_10Q.pdf": company, period, form), and the PDF
metadata gives a title and authors where the first page has none. With an LLM configured,
`citerag.enrich.card_llm` reads the same first pages instead and these rules fill its gaps.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

from citerag.enrich.card_filings import CoverFacts, read_cover
from citerag.types import DocumentCard, Page, ParsedDocument

PAGES_READ = 8  # the cover may come after a blank or a wrapper page; then its periods
BODY_PAGES = 6  # the pages after the cover where a filing names its fiscal periods
FILING_KINDS = ("annual report", "quarterly report", "current report", "earnings release")

_NAME_FORMS = {
    "10k": "annual report",
    "10q": "quarterly report",
    "8k": "current report",
    "20f": "annual report",
    "earnings": "earnings release",
}
_NAME_TOKEN = re.compile(r"[A-Za-z]+|\d+")
_NAME_PERIOD = re.compile(r"(?<!\d)((?:19|20)\d{2})(?:Q([1-4]))?(?!\d)", re.I)
_GENERIC_KINDS = (
    (
        "paper",
        re.compile(r"^\s*abstract\s*$|\bproceedings of\b|\bconference paper\b|arxiv", re.I | re.M),
    ),
    (
        "manual",
        re.compile(r"\b(?:owner'?s|user'?s?|operating|use and care)\s+(?:manual|guide)\b", re.I),
    ),
    (
        "legal document",
        re.compile(r"\bcourt of appeals\b|\bsuperior court\b|\bplaintiffs?\b", re.I),
    ),
    ("government report", re.compile(r"\bgovernment printing office\b|\bhearing before\b", re.I)),
    ("annual report", re.compile(r"\bannual report\b|\bdirectors'? report\b", re.I)),
    ("brochure", re.compile(r"\bbrochure\b|\bprospectus\b", re.I)),
    ("guidebook", re.compile(r"\bguide(?:book)?\b|\bhandbook\b", re.I)),
    ("report", re.compile(r"\breport\b|\bpolicy brief\b|\bsurvey\b", re.I)),
)
_MIN_TITLE_CHARS = 8
_STAMP = re.compile(r"\barxiv:\S+|^\W*page \d+\W*$", re.I)  # margin stamps, not titles


@dataclass(frozen=True)
class NameFacts:
    """What a file name like "BESTBUY_2024Q2_10Q.pdf" says."""

    company: str = ""  # the words before the first year or form token, as written
    kind: str = ""
    year: int | None = None
    quarter: int | None = None
    date: date | None = None


def card_of(path: Path, parsed: ParsedDocument) -> DocumentCard:
    """The card of a parsed PDF: its first pages, its metadata and its file name."""
    pages = [page.text for page in parsed.pages[:PAGES_READ]]
    cover = parsed.pages[_cover_at(pages)] if parsed.pages else None
    return read_card(path.name, pages, pdf_metadata(path), _largest_heading(cover))


def _largest_heading(page: Page | None) -> str:
    """The cover's largest heading, its consecutive lines joined ("LOGIC-LM: Empowering Large
    Language Models with" + "Symbolic Solvers for ..."); "" when the parser found none."""
    titles = [
        b
        for b in (page.blocks if page else [])
        if b.kind == "title" and b.level and not _STAMP.search(b.text)
    ]
    if not titles:
        return ""
    top = min(b.level or 0 for b in titles)
    lines: list[str] = []
    for block in page.blocks if page else []:
        if block.kind == "title" and block.level == top and not _STAMP.search(block.text):
            lines.append(" ".join(block.text.split()))
        elif lines:
            break
    return " ".join(lines)[:200]


def pdf_metadata(path: Path) -> dict[str, str]:
    """The PDF's document information (title, author, ...); empty when it cannot be read."""
    import pymupdf  # here: the CLI imports the card kinds before any PDF is opened

    try:
        with pymupdf.open(path) as document:
            return {k: str(v) for k, v in (document.metadata or {}).items() if v}
    except (RuntimeError, ValueError, OSError):  # a card is a hint: the parse already succeeded
        return {}


def read_card(
    name: str,
    pages: Sequence[str],
    metadata: Mapping[str, str] | None = None,
    heading: str = "",
) -> DocumentCard:
    """The card of a document called `name` whose first pages' texts are `pages` (`heading`:
    the cover's largest heading, where the parser knows it)."""
    at = _cover_at(pages)
    first = pages[at] if pages else ""
    body = "\n".join(pages[at + 1 : at + BODY_PAGES])
    cover = read_cover(first, body)
    named = read_name(name)
    meta = dict(metadata or {})
    kind = cover.kind or named.kind or _generic_kind(first + "\n" + body)
    card = DocumentCard(
        title=_title(first if kind not in FILING_KINDS else "", meta, heading),
        organisation=cover.organisation or _display_company(named.company, kind),
        ticker=cover.ticker,
        authors=_authors(meta),
        kind=kind,
        fiscal_year=_fiscal_year(cover, named, kind),
        quarter=cover.quarter or named.quarter or _calendar_quarter(cover, kind),
        period_end=cover.period_end.isoformat() if cover.period_end else "",
        date=_iso(cover, named),
    )
    if card.kind not in FILING_KINDS:
        return replace(card, quarter=None)
    if card.title:
        return card
    if not card.organisation:  # no issuer to name it by: the cover's own heading or line
        return replace(card, title=_title(first, meta, heading))
    return replace(card, title=_filing_title(card))


def _filing_title(card: DocumentCard) -> str:
    """ "Adobe Systems Incorporated annual report, fiscal 2015" for a filing whose cover's
    first lines are the regulator's boilerplate."""
    period = f"fiscal {card.fiscal_year}" if card.fiscal_year else card.date
    if card.quarter and card.fiscal_year:
        period = f"Q{card.quarter} {period}"
    return ", ".join(p for p in (f"{card.organisation} {card.kind}".strip(), period) if p)


def _cover_at(pages: Sequence[str]) -> int:
    """The first of the first three pages that names a form or a registrant (a filing may open
    with a page saying only "FORM 10-K"), else the first."""
    for at, text in enumerate(pages[:3]):
        if "xact name of registrant" in text or _EXACT.search(text):
            return at
    return 0


_EXACT = re.compile(r"exact\s+name\s+of\s+registrant", re.I)


def read_name(name: str) -> NameFacts:
    stem = re.sub(r"\.pdf$", "", name, flags=re.I)
    tokens = _NAME_TOKEN.findall(stem)
    company: list[str] = []
    for token in tokens:
        if token.isdigit() or token.lower() in _NAME_FORMS or _NAME_PERIOD.fullmatch(token):
            break
        company.append(token)
    period = _NAME_PERIOD.search(stem)
    squashed = re.sub(r"[^a-z0-9]", "", stem.lower())
    kind = next((k for form, k in _NAME_FORMS.items() if form in squashed.split("dated")[0]), "")
    dated = re.search(r"dated[_-]?((?:19|20)\d{2})-(\d{2})-(\d{2})", stem, re.I)
    return NameFacts(
        company=" ".join(company) if period or kind else "",
        kind=kind,
        year=int(period.group(1)) if period else None,
        quarter=int(period.group(2)) if period and period.group(2) else None,
        date=_safe_date(*(int(g) for g in dated.groups())) if dated else None,
    )


def _fiscal_year(cover: CoverFacts, named: NameFacts, kind: str) -> int | None:
    if kind not in FILING_KINDS:
        return cover.fiscal_year
    ended = cover.period_end
    # the file name settles which of the two namings of a year the issuer uses
    if named.year is not None and ended is not None and abs(named.year - ended.year) <= 1:
        return named.year
    if cover.fiscal_year or named.year:
        return cover.fiscal_year or named.year
    found = cover.date or cover.period_end
    return found.year if found else None


def _calendar_quarter(cover: CoverFacts, kind: str) -> int | None:
    if kind != "quarterly report" or cover.period_end is None:
        return None
    return (cover.period_end.month - 1) // 3 + 1


def _iso(cover: CoverFacts, named: NameFacts) -> str:
    found = cover.date or named.date or cover.period_end
    return found.isoformat() if found else ""


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _display_company(company: str, kind: str) -> str:
    """A file name's company words ("BESTBUY") as a name, for filings only: other documents'
    names are titles, not issuers."""
    if not company or kind not in FILING_KINDS:
        return ""
    return company if not company.isupper() else company.title()


def _generic_kind(text: str) -> str:
    head = text[:6000]
    return next((kind for kind, pattern in _GENERIC_KINDS if pattern.search(head)), "")


def _title(first_page: str, metadata: Mapping[str, str], heading: str = "") -> str:
    """The PDF's title when it reads like one (words, not a file name), else the cover's
    largest heading, else the first substantial line of the cover."""
    title = re.sub(
        r"^Microsoft (?:Word|PowerPoint) - ", "", " ".join((metadata.get("title") or "").split())
    )
    if _reads_like_title(title) and " " in title:
        return title
    if _reads_like_title(heading) and first_page:
        return heading
    for line in first_page.splitlines():
        words = " ".join(line.split())
        if _reads_like_title(words) and not _BOILERPLATE.search(words):
            return words[:200]
    return ""


_BOILERPLATE = re.compile(r"^(?:united states|securities and exchange commission|washington)", re.I)


def _reads_like_title(text: str) -> bool:
    if len(text) < _MIN_TITLE_CHARS or re.fullmatch(r"[\w.-]+\.(?:docx?|pdf|indd)", text):
        return False
    return len(re.findall(r"[A-Za-z]{3,}", text)) >= 2


def _authors(metadata: Mapping[str, str]) -> tuple[str, ...]:
    author = " ".join((metadata.get("author") or "").split())
    if not author or author.lower() in ("anonymous", "unknown", "user", "admin"):
        return ()
    return tuple(a.strip() for a in re.split(r";|,\s*(?=[A-Z])| and ", author) if a.strip())
