"""Page-level retrieval metrics: page recall@k and MRR over distinct pages in rank order.

A retrieval run returns ranked passages, each on one page of the question's document. The
passages are collapsed to their distinct pages, in the order each page first appears. For a
question with evidence pages E:

* page recall@k (hit@k) = 1 if any page of E is among the first k distinct pages, else 0;
* reciprocal rank = 1 / (rank of the first page of E among the distinct pages), 0 when no page
  of E is within the first ``max_rank`` (10) distinct pages.

Averaged over questions, per question type and overall. Everything here is pure.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from citerag.eval.metrics import percentile

KS: tuple[int, ...] = (1, 3, 5, 10)
MAX_RANK = 10
ALL_TYPES = "all"


class HasPage(Protocol):
    """Anything with a 1-based page number (RetrievedPassage, the project's hits, ...)."""

    @property
    def page(self) -> int: ...


@dataclass(frozen=True)
class PageScore:
    """One question's result: which k hit and the reciprocal rank of the first evidence page."""

    question_id: str
    question_type: str
    hits: Mapping[int, int]  # k -> 0 or 1
    reciprocal_rank: float
    pages: tuple[int, ...]  # the distinct pages, in rank order


@dataclass(frozen=True)
class PageSummary:
    """Averages over a set of questions."""

    recall_at: Mapping[int, float]
    mrr: float
    n: int


@dataclass(frozen=True)
class LatencySummary:
    """Milliseconds per call."""

    p50_ms: float
    p95_ms: float
    max_ms: float
    n: int


def distinct_pages(items: Iterable[HasPage]) -> list[int]:
    """The pages of ``items`` in rank order, each page once (at its first occurrence)."""
    seen: set[int] = set()
    pages: list[int] = []
    for item in items:
        if item.page not in seen:
            seen.add(item.page)
            pages.append(item.page)
    return pages


def page_hits(
    pages: Sequence[int], evidence: Collection[int], ks: Sequence[int] = KS
) -> dict[int, int]:
    """For each k, 1 if any evidence page is among the first k of ``pages`` (distinct pages)."""
    return {k: int(any(p in evidence for p in pages[:k])) for k in ks}


def reciprocal_rank(
    pages: Sequence[int], evidence: Collection[int], max_rank: int = MAX_RANK
) -> float:
    """1 / rank of the first evidence page within the first ``max_rank`` pages, else 0."""
    for rank, page in enumerate(pages[:max_rank], start=1):
        if page in evidence:
            return 1.0 / rank
    return 0.0


def score_pages(
    items: Iterable[HasPage],
    evidence: Collection[int],
    question_id: str = "",
    question_type: str = "",
    ks: Sequence[int] = KS,
    max_rank: int = MAX_RANK,
) -> PageScore:
    """Score one question's ranked passages against its evidence pages."""
    pages = distinct_pages(items)
    evidence_set = set(evidence)
    return PageScore(
        question_id=question_id,
        question_type=question_type,
        hits=page_hits(pages, evidence_set, ks),
        reciprocal_rank=reciprocal_rank(pages, evidence_set, max_rank),
        pages=tuple(pages),
    )


def summarize_pages(scores: Sequence[PageScore], ks: Sequence[int] = KS) -> PageSummary:
    """Mean hit@k and MRR over ``scores``; zeros when there are none."""
    if not scores:
        return PageSummary({k: 0.0 for k in ks}, 0.0, 0)
    recall = {k: statistics.fmean(s.hits[k] for s in scores) for k in ks}
    mrr = statistics.fmean(s.reciprocal_rank for s in scores)
    return PageSummary(recall, mrr, len(scores))


def summarize_by_type(
    scores: Sequence[PageScore], ks: Sequence[int] = KS, include_all: bool = True
) -> dict[str, PageSummary]:
    """One summary per question type (sorted by name), then ``"all"`` when ``include_all``."""
    types = sorted({s.question_type for s in scores})
    result = {t: summarize_pages([s for s in scores if s.question_type == t], ks) for t in types}
    if include_all:
        result[ALL_TYPES] = summarize_pages(scores, ks)
    return result


def summarize_latency(milliseconds: Sequence[float]) -> LatencySummary:
    """p50, p95 and max of per-call latencies (nearest-rank, via citerag's ``percentile``)."""
    return LatencySummary(
        p50_ms=percentile(milliseconds, 0.50),
        p95_ms=percentile(milliseconds, 0.95),
        max_ms=max(milliseconds, default=0.0),
        n=len(milliseconds),
    )


def place_hits(
    places: Sequence[tuple[str, int]], document: str, evidence: Collection[int], ks: Sequence[int]
) -> dict[int, int]:
    """Hits over a library: for each k, 1 if one of the first k distinct (document, page)
    places is an evidence page of the question's document."""
    distinct = list(dict.fromkeys(places))
    good = [doc == document and page in evidence for doc, page in distinct]
    return {k: int(any(good[:k])) for k in ks}
