"""Sentence-level highlights: the sentences of a source that best answer the question.

A sentence scores by meaning (cosine between its vector and the question's, when vectors are
given) and by terms (the share of the question's weighted terms it contains). Term weights are
IDF-like over the sentences of the same source, so a word that every sentence repeats counts
little. Everything is local and cheap: it runs on every source of every answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from citerag.text.sentences import sentence_spans as split_sentences
from citerag.text.stemming import light_stem
from citerag.text.stopwords import FUNCTION_WORDS, REQUEST_WORDS
from citerag.text.tokens import WORD
from citerag.types import Highlight

MEANING_WEIGHT = 0.6  # share of the score taken by the cosine when vectors are present
DEFAULT_MIN_SCORE = 0.05
# A sentence far weaker than the best one dilutes the highlight more than it helps.
RELATIVE_CUTOFF = 0.7

_STOPWORDS = FUNCTION_WORDS | REQUEST_WORDS


@dataclass(frozen=True)
class ScoredHighlight:
    highlight: Highlight
    score: float
    sentence_index: int  # index into the sentence spans the caller passed (or computed)


def select_highlights(
    query: str,
    content: str,
    sentence_spans: Sequence[tuple[int, int]],
    sentence_vectors: np.ndarray | None,
    query_vector: np.ndarray | None,
    k: int = 3,
    min_score: float = DEFAULT_MIN_SCORE,
    relative_cutoff: float = RELATIVE_CUTOFF,
) -> list[ScoredHighlight]:
    """The top `k` sentences of `content` scoring at least `min_score`, in reading order.

    Sentences scoring below `relative_cutoff` times the best score are left out too.

    `sentence_vectors` rows align with `sentence_spans`; when they do not (or either vector is
    None) only terms count. Spans that are empty, blank or outside `content` are skipped.
    """
    spans = list(sentence_spans) if sentence_spans else split_sentences(content)
    candidates = _usable_spans(content, spans)
    if k <= 0 or not candidates:
        return []
    sentence_terms = [_terms(content[a:b]) for _, (a, b) in candidates]
    term_scores = _term_coverage(_terms(query), sentence_terms)
    cosines = _cosines(sentence_vectors, query_vector, len(spans), [i for i, _ in candidates])
    scores = term_scores if cosines is None else _blend(cosines, term_scores)
    floor = max(min_score, relative_cutoff * float(scores.max()))
    return _top_in_reading_order(content, candidates, scores, k, floor)


def _usable_spans(
    content: str, spans: Sequence[tuple[int, int]]
) -> list[tuple[int, tuple[int, int]]]:
    seen: set[tuple[int, int]] = set()
    usable: list[tuple[int, tuple[int, int]]] = []
    for index, (a, b) in enumerate(spans):
        a, b = int(a), int(b)
        if not 0 <= a < b <= len(content) or (a, b) in seen or not content[a:b].strip():
            continue
        seen.add((a, b))
        usable.append((index, (a, b)))
    return usable


@lru_cache(maxsize=32_768)
def _terms(text: str) -> frozenset[str]:
    """A sentence's terms; cached, since the same chunks' sentences come back question after
    question."""
    return frozenset(light_stem(w) for w in WORD.findall(text.lower()) if w not in _STOPWORDS)


def content_terms(text: str) -> set[str]:
    """The stemmed words of `text` that carry meaning (stop words left out)."""
    return set(_terms(text))


def _term_coverage(query_terms: frozenset[str], sentence_terms: list[frozenset[str]]) -> np.ndarray:
    """For each sentence: weighted share of the query terms it contains, in [0, 1]."""
    coverage = np.zeros(len(sentence_terms), dtype=np.float64)
    if not query_terms:
        return coverage
    count = len(sentence_terms)
    weights = {
        term: math.log(1.0 + (count + 1) / (0.5 + sum(term in s for s in sentence_terms)))
        for term in query_terms
    }
    total = sum(weights.values())
    for i, terms in enumerate(sentence_terms):
        coverage[i] = sum(w for term, w in weights.items() if term in terms) / total
    return coverage


def _cosines(
    sentence_vectors: np.ndarray | None,
    query_vector: np.ndarray | None,
    span_count: int,
    rows: list[int],
) -> np.ndarray | None:
    if sentence_vectors is None or query_vector is None:
        return None
    matrix = np.asarray(sentence_vectors, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != span_count:
        return None
    query = np.asarray(query_vector, dtype=np.float64).reshape(-1)
    if query.shape[0] != matrix.shape[1]:
        return None
    chosen = matrix[rows]
    norms = np.linalg.norm(chosen, axis=1) * np.linalg.norm(query)
    with np.errstate(divide="ignore", invalid="ignore"):
        cosines = np.where(norms > 0, chosen @ query / norms, 0.0)
    return np.clip(cosines, -1.0, 1.0)


def _blend(cosines: np.ndarray, term_scores: np.ndarray) -> np.ndarray:
    result: np.ndarray = MEANING_WEIGHT * cosines + (1.0 - MEANING_WEIGHT) * term_scores
    return result


def _top_in_reading_order(
    content: str,
    candidates: list[tuple[int, tuple[int, int]]],
    scores: np.ndarray,
    k: int,
    min_score: float,
) -> list[ScoredHighlight]:
    chosen: list[ScoredHighlight] = []
    for position in np.argsort(-scores, kind="stable"):
        score = float(scores[position])
        if score < min_score or len(chosen) == k:
            break
        index, (a, b) = candidates[position]
        if any(_overlaps((a, b), c.highlight) for c in chosen):
            continue
        chosen.append(ScoredHighlight(Highlight(content[a:b], a, b), score, index))
    return sorted(chosen, key=lambda c: c.highlight.startOffset)


def _overlaps(span: tuple[int, int], other: Highlight) -> bool:
    return span[0] < other.endOffset and other.startOffset < span[1]
