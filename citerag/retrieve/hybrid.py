"""Hybrid retrieval as a LlamaIndex `BaseRetriever`: chunk hits and page evidence, fused.

Chunks are found by the vector index and by BM25 (the question plus the document words its
domain terms stand for: the article's `DomainVocabulary`), fused by reciprocal rank with the
candidates ranked by their best sentence and with the soft evidence of what the question names
(entities, years, quoted phrases, topics: `citerag.retrieve.evidence`). Pages are found by
their head vectors, by BM25 over their whole text and by how many fused chunks they hold (and,
for a question in the domain's words, the domain's key pages by BM25); those rankings are fused
too, and a chunk's score is its own plus its page's (weighted). Keyword rankings weigh more
when the question uses the domain's words, where the expanded words are precise and embeddings
are not, and there the embedding votes once (no best-sentence ranking). A top page with no
chunk among the hits contributes its best chunk by keywords. `QueryFusionRetriever` fuses flat
lists with a fixed k and no weights, so it cannot carry the page level; this class does the
same fusion with both.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from citerag.domain import DomainVocabulary
from citerag.nodes import BLOCK_TYPE, DOC_ID, ROUTED_BY
from citerag.retrieve.best_sentence import best_sentence_scores
from citerag.retrieve.collection_state import CollectionState, PageKey
from citerag.retrieve.evidence import CollectionView, evidence_rankings
from citerag.retrieve.filters import check_filters, vector_filters
from citerag.retrieve.fusion import Ranking, TiedRanking, reciprocal_rank_fusion
from citerag.retrieve.routing import (
    NOT_ROUTED,
    Routing,
    by_document,
    filled_after,
    question_asked,
)
from citerag.settings import RetrievalSettings
from citerag.store.base import DocStore, VectorIndex, VectorQuery


@dataclass
class HybridRanking:
    """Every stage's ranking, for benchmarks and debugging."""

    dense: list[str]
    keyword: list[str]
    pages: list[tuple[str, float]]
    fused: list[tuple[str, float]]
    evidence: dict[str, list[str]] = field(default_factory=dict)  # signal -> its ranking
    routing: Routing = NOT_ROUTED  # the documents searched first, and why


class HybridRetriever(BaseRetriever):
    def __init__(
        self,
        vectors: VectorIndex,
        docstore: DocStore,
        state: CollectionState,
        embed_model: BaseEmbedding,
        settings: RetrievalSettings | None = None,
        filters: MetadataFilters | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        check_filters(filters)
        self._vectors = vectors
        self._docstore = docstore
        self._state = state
        self._embed_model = embed_model
        self._settings = settings or RetrievalSettings()
        self._filters = filters
        # A routed copy (`_within`) searches only the documents its question named.
        self._scope: tuple[str, ...] = ()
        self._routing_used = NOT_ROUTED
        self._content: np.ndarray | None = None  # a routed copy's question vector, names left out
        super().__init__(callback_manager=callback_manager)

    @property
    def _words(self) -> DomainVocabulary:
        return self._settings.vocabulary

    @property
    def is_empty(self) -> bool:
        return self._state.is_empty

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        ranking = self.rank(query_bundle)
        fused = ranking.fused
        nodes = self._docstore.get_chunks(self._state.name, [chunk_id for chunk_id, _ in fused])
        scores = dict(fused)
        if ranking.routing.reason:
            for node in nodes:  # the answer's metadata says which documents were preferred
                node.metadata[ROUTED_BY] = ranking.routing.reason
        return [NodeWithScore(node=node, score=scores[node.node_id]) for node in nodes]

    def rank(self, query_bundle: QueryBundle) -> HybridRanking:
        """The fused ranking; within the documents the question names first (their cards say
        which: `citerag.retrieve.routing`), the same organisations' other documents after them
        when those hold fewer chunks than the ranking's length."""
        if self._state.is_empty:
            return HybridRanking([], [], [], [])
        routing = NOT_ROUTED if self._scope else self._routing(query_bundle.query_str)
        if not (routing.routed or routing.preferred):
            return self._rank(query_bundle)
        content = self._content_vector(routing, query_bundle)
        ranked = self._within(routing, content)._rank(query_bundle)
        ranked.routing = routing
        wanted = self._settings.fusion_top_n
        if routing.routed and len(ranked.fused) < wanted and routing.fallback:
            wider = Routing(routing.fallback, routing.reason, routing.names)
            more = self._within(wider, content)._rank(query_bundle).fused
            ranked.fused += filled_after(ranked.fused, more, wanted)
        return ranked

    def _content_vector(self, routing: Routing, query_bundle: QueryBundle) -> np.ndarray | None:
        """The question without the words that named its documents, embedded once for every
        routed copy (None when it named none: the question's own vector serves)."""
        content = routing.without_names(query_bundle.query_str)
        if not content or content == query_bundle.query_str:
            return None
        return np.asarray(self._embed_model.get_query_embedding(content), dtype=np.float32)

    def _routing(self, question: str) -> Routing:
        """The question's routing, else the whole question's when this is a part of it that
        names no document of its own ("Based on chapter 2" split from "... for Corning")."""
        router = self._state.router
        reports = self._words.document_kind
        routing = router.route(question, reports)
        whole = question_asked()
        if routing.routed or not whole or whole == question:
            return routing
        inherited = router.route(whole, reports)
        if not inherited.routed:
            return inherited
        return Routing(inherited.scope, f"{inherited.reason} (named by the whole question)")

    def _within(self, routing: Routing, content: np.ndarray | None) -> HybridRetriever:
        """This retriever (its filters, its subclass's) searching only the routed documents,
        with `content` as its question vector where the question named them."""
        scoped = copy.copy(self)
        scoped._scope = routing.scope
        scoped._routing_used = routing
        scoped._content = content
        return scoped

    def _rank(self, query_bundle: QueryBundle) -> HybridRanking:
        query_vector = self._query_vector(query_bundle)
        allowed = self._allowed_chunks()
        dense = self._dense(query_vector, allowed)
        keyword = self._keyword(query_bundle.query_str, allowed)
        kw_weight = self._keyword_weight(query_bundle.query_str)
        rankings: list[Ranking] = [dense, keyword]
        weights = [1.0, kw_weight]
        sentence_weight = self._sentence_weight(kw_weight)
        if sentence_weight > 0:
            rankings.append(self._by_best_sentence(query_vector, [*dense, *keyword]))
            weights.append(sentence_weight)
        chunks = reciprocal_rank_fusion(rankings, k=self._settings.rrf_k, weights=weights)
        evidence = self._evidence(query_bundle.query_str, [c for c, _ in chunks], allowed)
        if evidence:
            active = self._settings.evidence.active()
            rankings += list(evidence.values())
            weights += [active[signal] for signal in evidence]
            chunks = reciprocal_rank_fusion(rankings, k=self._settings.rrf_k, weights=weights)
        preference = self._document_preference([c for c, _ in chunks])
        if preference is not None:
            rankings.append(preference)
            weights.append(1.0)
            chunks = reciprocal_rank_fusion(rankings, k=self._settings.rrf_k, weights=weights)
        pages = self._pages(query_bundle.query_str, query_vector, chunks, allowed)
        fused = self._with_page_evidence(query_bundle.query_str, chunks, pages, allowed)
        top = fused[: self._settings.fusion_top_n]
        found = {signal: ranking.ids for signal, ranking in evidence.items()}
        return HybridRanking(dense, keyword, pages, top, found)

    def _document_preference(self, order: Sequence[str]) -> TiedRanking | None:
        """Where routing chose several documents, the candidates grouped by document in the
        router's order (`citerag.retrieve.routing.by_document`)."""
        places = self._state.places
        preferred = set(self._routing_used.preferred)
        if preferred:
            return TiedRanking((tuple(c for c in order if places[c]["doc_id"] in preferred),))
        if len(self._scope) < 2:
            return None
        return by_document(order, self._scope, lambda c: str(places[c]["doc_id"]))

    def _evidence(
        self, question: str, order: Sequence[str], allowed: set[str] | None
    ) -> dict[str, TiedRanking]:
        """Each active evidence signal's ranking (citerag/retrieve/evidence.py)."""
        weights = self._settings.evidence
        if not weights.active():
            return {}
        state, limit = self._state, self._settings.top_k_each

        def keyword_search(text: str, among: Collection[str] | None) -> list[str]:
            return [c for c, _ in state.keyword_hits("chunk", text, limit, among)]

        view = CollectionView(
            state.known_values,
            state.value_index,
            lambda chunk_id: str(state.places[chunk_id]["doc_id"]),
            len(state.places),
            keyword_search,
        )
        return evidence_rankings(question, weights, view, order, allowed, limit)

    def _by_best_sentence(self, query_vector: np.ndarray, candidates: Sequence[str]) -> list[str]:
        """The candidates by the similarity of their own sentence closest to the question (one
        printed on many of their pages is no one's: citerag/retrieve/best_sentence.py)."""
        pool = list(dict.fromkeys(candidates))
        places = self._state.places
        stored = self._docstore.get_sentence_vectors(self._state.name, pool)
        vectors = {c: stored[c] for c in pool if c in stored}  # candidate order breaks ties

        # A table's rows say little alone ("Other, net 1,055"); its page head (statement title,
        # period, column header) is what names it, so it counts as one of the table's sentences.
        def page_of(chunk_id: str) -> PageKey:
            return PageKey(places[chunk_id]["doc_id"], places[chunk_id]["page"])

        for chunk_id in vectors:
            if places[chunk_id].get(BLOCK_TYPE) == "table":
                head = self._state.head_vector(page_of(chunk_id))
                if head is not None:
                    vectors[chunk_id] = np.vstack([vectors[chunk_id], head])
        best = best_sentence_scores(vectors, page_of, query_vector)
        return sorted(best, key=lambda chunk_id: -best[chunk_id])

    def _sentence_weight(self, keyword_weight: float) -> float:
        """The best-sentence ranking's weight; none where the keyword rankings are weighted up
        (a question in the domain's words: `keyword_weight` above 1).

        There the expanded words are what is precise and the embedding is not; the dense
        ranking already casts the embedding's vote, and a second one lifted prose that
        discusses a metric ("Gross margin increased $6.5 billion") above the statement its
        figures come from, whose rows lie far from any question ("Operating income 69,916").
        """
        if keyword_weight > 1.0:
            return 0.0
        return self._settings.sentence_weight

    def _keyword_weight(self, question: str) -> float:
        return self._settings.filing_keyword_weight if self._words.terms(question) else 1.0

    def _query_vector(self, query_bundle: QueryBundle) -> np.ndarray:
        if self._content is not None:
            return self._content
        embedding = query_bundle.embedding
        if embedding is None:
            embedding = self._embed_model.get_query_embedding(query_bundle.query_str)
            query_bundle.embedding = embedding
        return np.asarray(embedding, dtype=np.float32)

    def _allowed_chunks(self) -> set[str] | None:
        scoped = self._state.chunks_of_documents(self._scope) if self._scope else None
        if self._filters is None or not self._filters.filters:
            return scoped
        return self._state.matching(self._filters, scoped)

    def _dense(self, query_vector: np.ndarray, allowed: set[str] | None) -> list[str]:
        """Vector hits among the chunks `_vector_scope` keeps of `allowed`."""
        among, pushed_ids = self._vector_scope(allowed)
        query = VectorQuery(
            query_vector.reshape(1, -1),
            self._settings.top_k_each,
            filters=self._pushed_filters(),
            node_ids=pushed_ids,
        )
        hits = self._vectors.search(self._state.name, query)[0]
        # Rows of a document still being ingested (or half-removed) are not visible.
        places = self._state.places
        return [cid for cid, _ in hits if cid in places and (among is None or cid in among)]

    def _pushed_filters(self) -> MetadataFilters | None:
        """What the vector index filters itself: page bounds and documents, the routed ones
        among them."""
        pushed = vector_filters(self._filters)
        if not self._scope:
            return pushed
        doc_ids = [d for d in self._scope if d in self._state.docs]
        items = [f for f in (pushed.filters if pushed else []) if f.key != DOC_ID]  # type: ignore[union-attr]
        items.append(MetadataFilter(key=DOC_ID, value=doc_ids, operator=FilterOperator.IN))
        return MetadataFilters(filters=items)

    def _vector_scope(
        self, allowed: set[str] | None
    ) -> tuple[set[str] | None, Sequence[str] | None]:
        """The chunks vector hits must be among (None: any), and the ids the search itself is
        limited to (None: no id list); here `allowed`, checked on the hits."""
        return allowed, None

    def _keyword(self, question: str, allowed: set[str] | None) -> list[str]:
        question = self._routing_used.without_names(question)
        hits = self._state.keyword_hits(
            "chunk", self._words.keyword_query(question), self._settings.top_k_each, allowed
        )
        return [chunk_id for chunk_id, _ in hits]

    def _pages(
        self,
        question: str,
        query_vector: np.ndarray,
        chunks: Sequence[tuple[str, float]],
        allowed: set[str] | None,
    ) -> list[tuple[str, float]]:
        page_set = self._state.pages
        allowed_pages = None if allowed is None else self._pages_of(allowed)
        by_keywords = [
            page_id
            for page_id, _ in self._state.keyword_hits(
                "page",
                self._words.keyword_query(question),
                self._settings.top_k_each,
                allowed_pages,
            )
        ]
        kw_weight = self._keyword_weight(question)
        rankings = [by_keywords, self._pages_by_chunks(chunks)]
        weights = [kw_weight, 1.0]
        statements = self._statement_pages(question, allowed_pages)
        if statements:
            rankings.append(statements)
            weights.append(kw_weight)
        if page_set.vectors is not None:
            rankings.append(self._pages_by_vector(query_vector, allowed_pages))
            weights.append(1.0)
        fused = reciprocal_rank_fusion(rankings, k=self._settings.rrf_k, weights=weights)
        return fused[: self._settings.top_pages]

    def _statement_pages(self, question: str, allowed: set[str] | None) -> list[str]:
        """The domain's key pages (a filing's statements) by keywords, when the question uses
        the domain's words; the kinds of statement holding what it names first (its profile's
        `concepts`: which kind of key page holds what the question names)."""
        page_set = self._state.pages
        wanted = self._words.wanted_kinds(question)
        if not page_set.statement_ids or not self._words.terms(question):
            return []
        candidates = set(page_set.statement_ids)
        if allowed is not None:
            candidates &= allowed
        if not candidates:
            return []
        query = self._words.keyword_query(question)
        hits = [p for p, _ in self._state.keyword_hits("page", query, len(candidates), candidates)]
        kinds = page_set.statement_kinds
        first = [p for p in hits if kinds.get(p) in wanted]
        return first + [p for p in hits if kinds.get(p) not in wanted]

    def _pages_of(self, chunk_ids: Iterable[str]) -> set[str]:
        places = self._state.places
        return {PageKey(places[c]["doc_id"], places[c]["page"]).id for c in chunk_ids}

    def _pages_by_chunks(self, chunks: Sequence[tuple[str, float]]) -> list[str]:
        """Pages ordered by the summed scores of their fused chunks: a page many hits share."""
        totals: dict[str, float] = defaultdict(float)
        places = self._state.places
        for chunk_id, score in chunks:
            totals[PageKey(places[chunk_id]["doc_id"], places[chunk_id]["page"]).id] += score
        return sorted(totals, key=lambda page_id: -totals[page_id])

    def _pages_by_vector(self, query_vector: np.ndarray, allowed: set[str] | None) -> list[str]:
        page_set = self._state.pages
        assert page_set.vectors is not None
        scores = page_set.vectors @ query_vector
        order = np.argsort(-scores, kind="stable")
        ranked = (page_set.keys[i].id for i in order)
        picked = (p for p in ranked if allowed is None or p in allowed)
        return list(islice(picked, self._settings.top_k_each))  # not every page's id

    def _with_page_evidence(
        self,
        question: str,
        chunks: Sequence[tuple[str, float]],
        pages: Sequence[tuple[str, float]],
        allowed: set[str] | None,
    ) -> list[tuple[str, float]]:
        weight = self._settings.page_weight
        page_score = dict(pages)
        places = self._state.places
        scores: dict[str, float] = {}
        for chunk_id, score in chunks:
            page_id = PageKey(places[chunk_id]["doc_id"], places[chunk_id]["page"]).id
            scores[chunk_id] = score + weight * page_score.get(page_id, 0.0)
        if weight > 0:
            for page_id, score in pages:
                if not self._has_chunk_on(page_id, scores):
                    best = self._best_chunk_on(question, page_id, allowed)
                    if best is not None:
                        scores[best] = weight * score
        return sorted(scores.items(), key=lambda pair: -pair[1])

    def _has_chunk_on(self, page_id: str, scores: dict[str, float]) -> bool:
        key = self._state.page_key(page_id)
        return any(c in scores for c in self._state.pages.chunk_ids.get(key, []))

    def _best_chunk_on(self, question: str, page_id: str, allowed: set[str] | None) -> str | None:
        on_page = self._state.pages.chunk_ids.get(self._state.page_key(page_id), [])
        candidates = [c for c in on_page if allowed is None or c in allowed]
        if not candidates:
            return None
        hits = self._state.keyword_hits(
            "chunk", self._words.keyword_query(question), 1, set(candidates)
        )
        return hits[0][0] if hits else candidates[0]
