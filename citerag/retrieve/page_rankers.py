"""The page rankers: a page as evidence in its own right (its whole text, its head vector,
how many fused chunks it holds, whether it is one of the domain's key pages).

A financial statement is a page that is almost all table; what makes it findable is the page as
a whole (its title, period and rows together), which no single row chunk carries.
"""

from __future__ import annotations

from collections import defaultdict
from typing import ClassVar

from citerag.retrieve.fusion import Ranking
from citerag.retrieve.rankers import RankContext, Ranker, Stage


class PageKeywords(Ranker):
    """BM25 over each page's whole text."""

    name: ClassVar[str] = "page_keyword"
    stage: ClassVar[Stage] = Stage.PAGES

    def weight_for(self, context: RankContext) -> float:
        return self.weight * context.keyword_boost

    def rank(self, context: RankContext) -> Ranking:
        text, allowed = context.keyword_query(), context.allowed_pages
        return context.source.keyword_hits("page", text, context.limit, allowed)


class PageChunkCounts(Ranker):
    """Pages by the summed scores of their fused chunks: a page many hits share."""

    name: ClassVar[str] = "page_chunks"
    stage: ClassVar[Stage] = Stage.PAGES

    def rank(self, context: RankContext) -> Ranking:
        totals: dict[str, float] = defaultdict(float)
        for chunk_id, score in context.fused:
            totals[context.source.place(chunk_id).page_key.id] += score
        return sorted(totals, key=lambda page_id: -totals[page_id])


class KeyPages(Ranker):
    """The domain's key pages (a filing's statements) by keywords, when the question uses the
    domain's words; the kinds of statement holding what it names first (its profile's
    `concepts`: which kind of key page holds what the question names)."""

    name: ClassVar[str] = "key_pages"
    stage: ClassVar[Stage] = Stage.PAGES

    def weight_for(self, context: RankContext) -> float:
        return self.weight * context.keyword_boost

    def rank(self, context: RankContext) -> Ranking:
        words, question = context.vocabulary, context.question
        kinds = context.source.key_pages()
        if not kinds or not words.terms(question):
            return ()
        wanted = words.wanted_kinds(question)
        candidates = set(kinds)
        allowed = context.allowed_pages
        if allowed is not None:
            candidates &= allowed
        if not candidates:
            return ()
        text = context.keyword_query()
        hits = context.source.keyword_hits("page", text, len(candidates), candidates)
        first = [p for p in hits if kinds.get(p) in wanted]
        return first + [p for p in hits if kinds.get(p) not in wanted]


class PageHeadVectors(Ranker):
    """Pages by their head vectors (title, period, column header), where stored."""

    name: ClassVar[str] = "page_vector"
    stage: ClassVar[Stage] = Stage.PAGES

    def rank(self, context: RankContext) -> Ranking:
        allowed = context.allowed_pages
        return context.source.page_vector_hits(context.query_vector, context.limit, allowed)
