"""Where headings sit in the parsed page text, the text between them, and extractive summaries."""

from __future__ import annotations

import re
from dataclasses import dataclass

from citerag.text.sentences import sentence_spans
from citerag.text.tokens import WORD
from citerag.types import ParsedDocument

SUMMARY_CHARS = 300
SUMMARY_SENTENCES = 2
_NOTHING_BEFORE = 40  # characters of page text before a heading that still count as "top"


@dataclass(frozen=True)
class Cut:
    """A position in the document: page (1-based) and offset in that page's text."""

    page: int
    offset: int


def heading_offset(page_text: str, title: str) -> int | None:
    """Where `title` starts in `page_text` (its words in order, any spacing), else None."""
    span = heading_span(page_text, title)
    return span[0] if span is not None else None


def heading_span(page_text: str, title: str) -> tuple[int, int] | None:
    """Where the earliest-found form of `title` starts and ends in `page_text`, else None."""
    found: list[tuple[int, int]] = []
    for variant in _variants(title):
        words = WORD.findall(variant)[:6]
        if not words:
            continue
        pattern = r"\W+".join(re.escape(word) for word in words)
        match = re.search(pattern, page_text, re.IGNORECASE)
        if match:
            found.append((match.start(), match.end()))
    return min(found) if found else None


def _variants(title: str) -> list[str]:
    """The title, and its part after a label ("Chapter 1: Three Steps" → "Three Steps")."""
    head, _, tail = title.partition(": ")
    return [title, tail] if tail else [title]


def at_page_top(page_text: str, offset: int) -> bool:
    return len(page_text[:offset].strip()) <= _NOTHING_BEFORE


def text_between(
    doc: ParsedDocument, start: Cut, end: Cut | None
) -> tuple[str, list[tuple[int, int]]]:
    """The page text from `start` up to `end` (exclusive; None: the end of the document),
    pages joined by a blank line, with where each page starts in the result."""
    parts: list[str] = []
    page_starts: list[tuple[int, int]] = []
    cursor = 0
    last_page = end.page if end is not None else len(doc.pages)
    for number in range(start.page, last_page + 1):
        text = doc.pages[number - 1].text
        a = start.offset if number == start.page else 0
        b = end.offset if end is not None and number == end.page else len(text)
        piece = text[a:b] if a < b else ""
        if not piece.strip():
            continue
        if parts:
            cursor += 2
        page_starts.append((number, cursor))
        parts.append(piece)
        cursor += len(piece)
    return "\n\n".join(parts), page_starts


def extractive_summary(title: str, text: str) -> str:
    """The first sentences of the section's own text (its title left out)."""
    body = text
    span = heading_span(text[: len(title) + 80], title)
    if span is not None and at_page_top(text, span[0]):
        body = text[span[1] :]  # the title, and a page header above it
    sentences = [body[a:b].strip() for a, b in sentence_spans(body, 0, len(body))]
    chosen: list[str] = []
    for sentence in sentences:
        if len(WORD.findall(sentence)) < 4:
            continue
        chosen.append(" ".join(sentence.split()))
        if len(chosen) == SUMMARY_SENTENCES or sum(map(len, chosen)) >= SUMMARY_CHARS:
            break
    summary = " ".join(chosen)
    return summary if len(summary) <= SUMMARY_CHARS else summary[: SUMMARY_CHARS - 1] + "…"
