"""The answer given when no LLM is configured: the best highlighted sentences, cited."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

NO_ANSWER = (
    "The documents do not seem to answer this question; try rephrasing it or ingesting a "
    "document that covers it."
)
DEFAULT_MIN_SCORE = 0.1
RELATIVE_CUTOFF = 0.5  # sentences below half the best score stray from the question
HEADING_MAX_WORDS = 4
NEAR_DUPLICATE_OVERLAP = 0.85  # share of the shorter sentence's words found in the longer one

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class ExtractiveCandidate:
    citation_number: int
    page_number: int
    start_offset: int  # where the sentence starts in its source's content
    text: str
    score: float


def extractive_answer(
    candidates: Sequence[ExtractiveCandidate],
    max_sentences: int = 5,
    min_score: float = DEFAULT_MIN_SCORE,
) -> str:
    """Up to `max_sentences` distinct best sentences in page order, each followed by ` [N]`."""
    chosen = _best_distinct(candidates, max_sentences, min_score)
    if not chosen:
        return NO_ANSWER
    in_page_order = sorted(chosen, key=lambda c: (c.page_number, c.start_offset, c.citation_number))
    return " ".join(f"{_one_line(c.text)} [{c.citation_number}]" for c in in_page_order)


def _best_distinct(
    candidates: Sequence[ExtractiveCandidate], limit: int, min_score: float
) -> list[ExtractiveCandidate]:
    usable = [c for c in candidates if c.text.strip() and not _is_heading(c.text)]
    if not usable:
        return []
    floor = max(min_score, RELATIVE_CUTOFF * max(c.score for c in usable))
    ranked = sorted(
        (c for c in usable if c.score >= floor),
        key=lambda c: (-c.score, c.citation_number, c.start_offset),
    )
    chosen: list[ExtractiveCandidate] = []
    chosen_words: list[list[str]] = []
    for candidate in ranked:
        if len(chosen) == limit:
            break
        words = _words(candidate.text)
        if any(_near_duplicate(words, other) for other in chosen_words):
            continue
        chosen.append(candidate)
        chosen_words.append(words)
    return chosen


def _is_heading(text: str) -> bool:
    """A short line without closing punctuation ("4 Evaluation") is a title, not a statement."""
    stripped = text.strip()
    return len(_words(stripped)) <= HEADING_MAX_WORDS and stripped[-1] not in ".!?:;"


def _one_line(text: str) -> str:
    """PDF sentences carry line breaks and double spaces; the answer reads as prose."""
    return " ".join(text.split())


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _near_duplicate(words: list[str], other: list[str]) -> bool:
    """Same words, or one sentence mostly contained in the other (a chunk-overlap fragment)."""
    if words == other:
        return True
    shorter, longer = sorted((words, other), key=len)
    if not shorter:
        return True
    longer_set = set(longer)
    shared = sum(word in longer_set for word in shorter)
    return shared / len(shorter) >= NEAR_DUPLICATE_OVERLAP
