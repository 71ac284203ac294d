"""The chunk rankers found by search: vectors, keywords, best sentences, and routing's
preference among the documents it chose."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from citerag.retrieve.best_sentence import best_sentence_scores
from citerag.retrieve.fusion import Ranking, TiedRanking
from citerag.retrieve.page_evidence import PageKey
from citerag.retrieve.rankers import RankContext, Ranker, Stage
from citerag.retrieve.routing import by_document


class DenseChunks(Ranker):
    """The vector index's nearest chunks."""

    name: ClassVar[str] = "dense"
    stage: ClassVar[Stage] = Stage.CANDIDATES

    def rank(self, context: RankContext) -> Ranking:
        return context.source.vector_hits(context.query_vector, context.limit, context.allowed)


class KeywordChunks(Ranker):
    """BM25 over chunks: the question (less the words that named its routed documents) with
    the document words its domain terms stand for."""

    name: ClassVar[str] = "keyword"
    stage: ClassVar[Stage] = Stage.CANDIDATES

    def weight_for(self, context: RankContext) -> float:
        return self.weight * context.keyword_boost

    def rank(self, context: RankContext) -> Ranking:
        question = context.routing.without_names(context.question)
        text = context.vocabulary.keyword_query(question)
        return context.source.keyword_hits("chunk", text, context.limit, context.allowed)


class BestSentence(Ranker):
    """The candidates so far (dense, then keyword) by their own sentence closest to the
    question (one printed on many of their pages is no one's: citerag/retrieve/best_sentence.py).

    A chunk's vector is the mean of its sentences; on a page of short items (steps, table
    rows, specifications) that mean matches no question, while one of its sentences does.
    """

    name: ClassVar[str] = "best_sentence"
    stage: ClassVar[Stage] = Stage.CANDIDATES

    def weight_for(self, context: RankContext) -> float:
        """None where the keyword rankings are weighted up (a question in the domain's words).

        There the expanded words are what is precise and the embedding is not; the dense
        ranking already casts the embedding's vote, and a second one lifted prose that
        discusses a metric ("Gross margin increased $6.5 billion") above the statement its
        figures come from, whose rows lie far from any question ("Operating income 69,916").
        """
        return 0.0 if context.keyword_boost > 1.0 else self.weight

    def rank(self, context: RankContext) -> Ranking:
        found = [c for ranking in context.rankings.values() for c in _ids(ranking)]
        pool = list(dict.fromkeys(found))
        source = context.source
        stored = source.sentence_vectors(pool)
        vectors = {c: stored[c] for c in pool if c in stored}  # candidate order breaks ties

        def page_of(chunk_id: str) -> PageKey:
            return source.place(chunk_id).page_key

        # A table's rows say little alone ("Other, net 1,055"); its page head (statement title,
        # period, column header) is what names it, so it counts as one of the table's sentences.
        tables = [c for c in vectors if source.place(c).block_type == "table"]
        heads = source.head_vectors({page_of(chunk_id) for chunk_id in tables})
        for chunk_id in tables:
            head = heads.get(page_of(chunk_id).id)
            if head is not None:
                vectors[chunk_id] = np.vstack([vectors[chunk_id], head])
        best = best_sentence_scores(vectors, page_of, context.query_vector)
        return sorted(best, key=lambda chunk_id: -best[chunk_id])


class DocumentPreference(Ranker):
    """Where routing chose several documents (or prefers a fiscal period's filings), the
    candidates grouped by document in the router's order
    (`citerag.retrieve.routing.by_document`)."""

    name: ClassVar[str] = "document_preference"
    stage: ClassVar[Stage] = Stage.PREFERENCE

    def rank(self, context: RankContext) -> Ranking:
        source, order = context.source, context.order
        preferred = set(context.routing.preferred)
        if preferred:
            return TiedRanking((tuple(c for c in order if source.place(c).doc_id in preferred),))
        if len(context.scope) < 2:
            return ()
        return by_document(order, context.scope, lambda c: source.place(c).doc_id)


def _ids(ranking: Ranking) -> list[str]:
    return ranking.ids if isinstance(ranking, TiedRanking) else list(ranking)
