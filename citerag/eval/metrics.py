"""Retrieval quality against labelled reference contexts (the seed's metric).

A reference-context sentence longer than 20 characters counts as found in a chunk when at
least 80% of its words appear in that one chunk. A chunk is relevant when it contains at
least one such sentence.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from citerag.text.sentences import sentence_spans
from citerag.text.tokens import WORD

MIN_SENTENCE_CHARS = 20
WORD_SHARE = 0.8


def words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def reference_sentences(contexts: Sequence[str]) -> list[set[str]]:
    """The word sets of the reference sentences that count (over 20 characters)."""
    result = []
    for context in contexts:
        for a, b in sentence_spans(context):
            if b - a > MIN_SENTENCE_CHARS and words(context[a:b]):
                result.append(words(context[a:b]))
    return result


def sentence_found(sentence: set[str], chunk_words: set[str]) -> bool:
    return len(sentence & chunk_words) >= WORD_SHARE * len(sentence)


@dataclass
class QuestionScore:
    first_relevant_rank: int | None  # 1-based rank of the first relevant chunk
    recall_at: dict[int, float] = field(default_factory=dict)


def score_question(
    retrieved_texts: Sequence[str], contexts: Sequence[str], recall_ks: Sequence[int] = (5, 10)
) -> QuestionScore:
    sentences = reference_sentences(contexts)
    chunk_words = [words(t) for t in retrieved_texts]
    first = next(
        (
            rank
            for rank, cw in enumerate(chunk_words, start=1)
            if any(sentence_found(s, cw) for s in sentences)
        ),
        None,
    )
    recall = {}
    for k in recall_ks:
        found = sum(1 for s in sentences if any(sentence_found(s, cw) for cw in chunk_words[:k]))
        recall[k] = found / len(sentences) if sentences else 0.0
    return QuestionScore(first, recall)


@dataclass
class QualityReport:
    hit_at: dict[int, float]
    mrr: float
    recall_at: dict[int, float]
    questions: int


def summarize(
    scores: Sequence[QuestionScore], hit_ks: Sequence[int] = (1, 3, 5, 10)
) -> QualityReport:
    n = len(scores)
    if not n:
        return QualityReport({k: 0.0 for k in hit_ks}, 0.0, {}, 0)
    hit_at = {
        k: sum(1 for s in scores if s.first_relevant_rank and s.first_relevant_rank <= k) / n
        for k in hit_ks
    }
    mrr = sum(1 / s.first_relevant_rank for s in scores if s.first_relevant_rank) / n
    recall_ks = scores[0].recall_at.keys()
    recall_at = {k: statistics.fmean(s.recall_at[k] for s in scores) for k in recall_ks}
    return QualityReport(hit_at, mrr, recall_at, n)


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]
