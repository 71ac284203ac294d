"""A domain's vocabulary as plain data, and the generic code that applies it to retrieval.

A question often uses a reader's words where the documents print others ("income statement"
for "Consolidated Statements of Operations"); keyword search gets the printed words added, the
question itself is unchanged, and keyword rankings weigh more (`filing_keyword_weight`) when
such words matched. Some domains also have key pages known by a printed title line (a filing's
financial statements); a question in the domain's words gets them as page evidence.

The words themselves live with the project's domains (`extraction_schemas.py`), chosen per
article (`citerag.article`) and carried by the settings; the retriever holds none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

LINES_SEARCHED = 4  # a company name or an "Item 8" line may come before a key page's title


@dataclass(frozen=True)
class DomainVocabulary:
    """An empty vocabulary (the default) adds no words and knows no key pages."""

    name: str = "generic"
    # (pattern on the question, words its matches stand for in the documents), in a stable order
    expansions: tuple[tuple[str, str], ...] = ()
    # patterns for a key page's title line; a line may add a parenthesis ("(In millions)")
    key_page_titles: tuple[str, ...] = ()
    # (kind, title pattern): which key page a title names ("balance sheet", "cash flows")
    key_page_kinds: tuple[tuple[str, str], ...] = ()
    # (pattern on the question, the kinds of key page that hold what it names): an analyst's
    # "quick ratio" is read off the balance sheet, "free cash flow" off the cash flow statement
    concepts: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # (pattern on the question, the kind of document that reports it): adjusted, non-GAAP
    # figures are an earnings release's; a new chief executive is announced in a current report
    document_kinds: tuple[tuple[str, str], ...] = ()

    def terms(self, question: str) -> list[str]:
        """The document words that the question's domain terms stand for, in a stable order."""
        return [
            words for pattern, words in _expansions(self.expansions) if pattern.search(question)
        ]

    def keyword_query(self, question: str) -> str:
        """The question with the document words its domain terms stand for appended."""
        terms = self.terms(question)
        return question if not terms else f"{question}\n{' '.join(terms)}"

    def wanted_kinds(self, question: str) -> tuple[str, ...]:
        """The kinds of key page holding what the question names, in a stable order."""
        wanted: dict[str, None] = {}
        for pattern, kinds in _concepts(self.concepts):
            if pattern.search(question):
                wanted.update(dict.fromkeys(kinds))
        return tuple(wanted)

    def document_kind(self, question: str) -> str:
        """The kind of document that reports what the question asks ("" when none is known)."""
        for pattern, kind in _document_kinds(self.document_kinds):
            if pattern.search(question):
                return kind
        return ""

    def key_page_kind(self, page_text: str) -> str:
        """The kind of key page the page's title names ("" when none does)."""
        lines = [line for line in page_text.splitlines() if line.strip()][:LINES_SEARCHED]
        for kind, pattern in _kinds(self.key_page_kinds):
            if any(pattern.search(line) for line in lines):
                return kind
        return ""

    def is_key_page(self, page_text: str) -> bool:
        """True when one of the page's first non-empty lines is a key page's title."""
        title = _title_line(self.key_page_titles)
        if title is None:
            return False
        lines = [line for line in page_text.splitlines() if line.strip()][:LINES_SEARCHED]
        return any(title.fullmatch(line) for line in lines)


GENERIC = DomainVocabulary()


class DomainSchema(Protocol):
    """What an article's schema (`extraction_schemas.ExtractionSchema`) gives retrieval."""

    @property
    def vocabulary(self) -> DomainVocabulary: ...


@lru_cache(maxsize=32)
def _expansions(pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(pattern, re.IGNORECASE), words) for pattern, words in pairs)


@lru_cache(maxsize=32)
def _title_line(titles: tuple[str, ...]) -> re.Pattern[str] | None:
    if not titles:
        return None
    return re.compile(r"\s*(?:" + "|".join(titles) + r")\s*(?:\(.*)?", re.IGNORECASE)


@lru_cache(maxsize=32)
def _concepts(
    pairs: tuple[tuple[str, tuple[str, ...]], ...],
) -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    return tuple((re.compile(pattern, re.IGNORECASE), kinds) for pattern, kinds in pairs)


@lru_cache(maxsize=32)
def _kinds(pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in pairs)


@lru_cache(maxsize=32)
def _document_kinds(pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(pattern, re.IGNORECASE), kind) for pattern, kind in pairs)
