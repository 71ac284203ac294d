"""Scores of answers, not pages: numbers matched by value, short texts by normalized match,
citations by the pages they point to.

- numeric match: the reference's figure is its first number ("$24,996,056 thousand (about $25.0
  billion)" → 24,996,056 thousand); an answer matches when its *first* number (numbers the
  question states and the days of dates left out) agrees within `TOLERANCE` (relative, at any
  of the scales 1, 10³, 10⁶, 10⁹, so "$25.0 billion" and "24,996,056" both agree); "any"
  counts a match anywhere in the answer, which flatters answers that quote many numbers.
- text match: the reference, lower-cased with punctuation and articles dropped, appears in the
  answer normalized alike; a list reference matches when every item does.
- citation precision: the share of the cited sources whose page is an evidence page.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Sequence

from citerag.answer.numbers import Quantity, any_figure, quantities, within_tolerance

TOLERANCE = 0.01
_MARKER = re.compile(r"\[\d+\]")
_NON_WORD = re.compile(r"[^\w%]+")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
# "December 31, 2020": the day is part of a date, not a figure an answer states.
_DATE_DAY = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December)\s+\d{1,2}\b(?:,?\s+\d{4}\b)?"
)


def reference_figure(reference: str) -> Quantity | None:
    found = quantities(reference, skip_references=False)
    return found[0] if found else None


def answer_figures(question: str, answer: str) -> list[Quantity]:
    """The answer's numbers in order, without citation markers and the question's own numbers."""
    given = quantities(question, skip_references=False)
    text = _DATE_DAY.sub(" ", _MARKER.sub(" ", answer))
    return [q for q in quantities(text) if not any_figure(q, given)]


def numeric_match(question: str, answer: str, reference: str) -> tuple[bool, bool]:
    """(the answer's first number matches, some number of the answer matches)."""
    target = reference_figure(reference)
    found = answer_figures(question, answer)
    if target is None or not found:
        return False, False
    hits = [within_tolerance(q, target, TOLERANCE) for q in found]
    return hits[0], any(hits)


def normalized(text: str) -> str:
    text = unicodedata.normalize("NFKD", text).casefold()
    text = _ARTICLES.sub(" ", _NON_WORD.sub(" ", text))
    return " ".join(text.split())


def text_match(answer: str, reference: str) -> bool:
    items = _list_items(reference)
    wanted = [normalized(item) for item in items]
    have = f" {normalized(_MARKER.sub(' ', answer))} "
    return bool(wanted) and all(w and f" {w} " in have for w in wanted)


def _list_items(reference: str) -> list[str]:
    if reference.strip().startswith("["):
        try:
            parsed = ast.literal_eval(reference.strip())
        except (ValueError, SyntaxError):
            return [reference]
        if isinstance(parsed, list):
            return [str(item) for item in parsed]
    return [reference]


def citation_precision(cited_pages: Sequence[int], evidence_pages: Sequence[int]) -> float | None:
    """Share of cited sources on an evidence page; None when nothing is cited."""
    if not cited_pages:
        return None
    evidence = set(evidence_pages)
    return sum(page in evidence for page in cited_pages) / len(cited_pages)
