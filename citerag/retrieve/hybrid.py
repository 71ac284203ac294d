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

Each signal is a ranker (`citerag.retrieve.rankers`): the chunk rankers are joined by weighted
reciprocal rank stage by stage, the page rankers apart, and the two levels joined by adding a
chunk's page's score (`page_weight`). A ranker is switched off by name (`disabled_rankers`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

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
from citerag.enrich.cards import FILING_KINDS
from citerag.nodes import DOC_ID, ROUTED_BY
from citerag.retrieve.collection_state import CollectionState
from citerag.retrieve.filters import check_filters, vector_filters
from citerag.retrieve.fusion import Ranking, TiedRanking, reciprocal_rank_fusion
from citerag.retrieve.list_scope import VectorScope, joined, list_scope
from citerag.retrieve.ranker_set import active_rankers
from citerag.retrieve.rankers import RankContext, Ranker, Stage
from citerag.retrieve.routing import NOT_ROUTED, Routing, filled_after, question_asked
from citerag.retrieve.snapshot_source import SnapshotSource
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
    rankings: dict[str, list[str]] = field(default_factory=dict)  # every ranker's, by name


@dataclass(frozen=True)
class _Ranked:
    """The rankings one stage or more produced: (ranker name, ranking, weight), in order."""

    items: tuple[tuple[str, Ranking, float], ...] = ()

    def fused(self, k: int) -> list[tuple[str, float]]:
        rankings = [ranking for _, ranking, _ in self.items]
        return reciprocal_rank_fusion(rankings, k=k, weights=[w for _, _, w in self.items])

    def by_name(self) -> dict[str, Ranking]:
        return {name: ranking for name, ranking, _ in self.items}


CHUNK_STAGES = (Stage.CANDIDATES, Stage.EVIDENCE, Stage.PREFERENCE)


def ranker_weights(settings: RetrievalSettings) -> dict[str, float]:
    """The rankers' weights the settings give (the others count 1); each evidence weight is
    named like its ranker."""
    return {"best_sentence": settings.sentence_weight, **vars(settings.evidence)}


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
        self._rankers = active_rankers(
            ranker_weights(self._settings), self._settings.disabled_rankers
        )
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
        if routing.inherited:
            whole_collection = self._rank(query_bundle)
            if not self._holds(routing, whole_collection.fused):
                return whole_collection
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
        reason = f"{inherited.reason} (named by the whole question)"
        return replace(inherited, reason=reason, inherited=True)

    def _holds(self, routing: Routing, fused: Sequence[tuple[str, float]]) -> bool:
        """Whether a part that names nothing is about the documents its whole question named:
        its own best match is one of them or of their kind ("how did it change from FY2022?"
        matches some annual report), not another kind of document (a paper's question joined
        to a filing's: "... for Corning. Also, what does the survey's Figure 3 show?")."""
        if not fused:
            return True
        best = self._state.places[fused[0][0]].doc_id
        if best in routing.scope or best in routing.fallback:
            return True
        kinds = {self._kind(doc_id) for doc_id in routing.scope}
        return self._kind(best) in kinds

    def _kind(self, doc_id: str) -> str:
        """The document's kind, every filing one kind: a part about a ratio matches another
        company's quarterly report as well as the annual report its question named."""
        doc = self._state.docs.get(doc_id)
        kind = doc.card.kind if doc is not None else ""
        return "filing" if kind in FILING_KINDS else kind

    def _within(self, routing: Routing, content: np.ndarray | None) -> HybridRetriever:
        """This retriever (its filters, its subclass's) searching only the routed documents,
        with `content` as its question vector where the question named them."""
        scoped = copy.copy(self)
        scoped._scope = routing.scope
        scoped._routing_used = routing
        scoped._content = content
        return scoped

    def _rank(self, query_bundle: QueryBundle) -> HybridRanking:
        context = self._context(query_bundle)
        chunks = _Ranked()
        for stage in CHUNK_STAGES:
            chunks = self._run(stage, context, chunks)
            context = replace(context, fused=chunks.fused(self._settings.rrf_k))
        found = chunks.by_name()
        pages = self._run(Stage.PAGES, context, _Ranked())
        top_pages = pages.fused(self._settings.rrf_k)[: self._settings.top_pages]
        fused = self._with_page_evidence(context, top_pages)
        evidence = {
            ranker.name: _ids(found[ranker.name])
            for ranker in self._rankers
            if ranker.stage == Stage.EVIDENCE and ranker.name in found
        }
        named = {
            name: _ids(ranking) for name, ranking in (*found.items(), *pages.by_name().items())
        }
        return HybridRanking(
            named.get("dense", []),
            named.get("keyword", []),
            top_pages,
            fused[: self._settings.fusion_top_n],
            evidence,
            rankings=named,
        )

    def _run(self, stage: Stage, context: RankContext, ranked: _Ranked) -> _Ranked:
        """`ranked` and the rankings of `stage`'s rankers, each seeing those before it (a
        ranker weighted 0 for this question is not run; an empty ranking adds nothing)."""
        items = list(ranked.items)
        for ranker in self._stage(stage):
            weight = ranker.weight_for(context)
            if weight <= 0:
                continue
            ranking = ranker.rank(replace(context, rankings=_Ranked(tuple(items)).by_name()))
            if _ids(ranking):
                items.append((ranker.name, ranking, weight))
        return _Ranked(tuple(items))

    def _stage(self, stage: Stage) -> list[Ranker]:
        return [ranker for ranker in self._rankers if ranker.stage == stage]

    def _context(self, query_bundle: QueryBundle) -> RankContext:
        question = query_bundle.query_str
        allowed = self._allowed_chunks()
        source = SnapshotSource(self._state, self._docstore, self._dense)
        return RankContext(
            question,
            self._query_vector(query_bundle),
            source,
            self._words,
            self._settings.similarity_top_k_fusion,
            keyword_boost=self._keyword_weight(question),
            allowed=allowed,
            allowed_pages=None if allowed is None else source.pages_of(allowed),
            routing=self._routing_used,
            scope=self._scope,
        )

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

    def _dense(self, query_vector: np.ndarray, top_k: int, allowed: set[str] | None) -> list[str]:
        """Vector hits among the chunks `_vector_scope` keeps of `allowed`."""
        scope = self._vector_scope(allowed)
        query = VectorQuery(
            query_vector.reshape(1, -1),
            top_k,
            filters=joined(self._pushed_filters(), scope.filters),
            node_ids=scope.ids,
        )
        hits = self._vectors.search(self._state.name, query)[0]
        # Rows of a document still being ingested (or half-removed) are not visible.
        places, among = self._state.places, scope.among
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

    def _vector_scope(self, allowed: set[str] | None) -> VectorScope:
        """The chunks vector hits must be among (here `allowed`) and how the search itself is
        held to them: the filters' list fields (years, entities) as ids or as a filter."""
        return list_scope(self._vectors, self._state.name, allowed, self._filters)

    def _with_page_evidence(
        self, context: RankContext, pages: Sequence[tuple[str, float]]
    ) -> list[tuple[str, float]]:
        """The chunk and page levels joined: a chunk's score plus its page's (weighted); a top
        page with no chunk among them adds its best chunk by keywords."""
        weight = self._settings.page_weight
        page_score = dict(pages)
        source = context.source
        scores: dict[str, float] = {}
        for chunk_id, score in context.fused:
            page_id = source.place(chunk_id).page_key.id
            scores[chunk_id] = score + weight * page_score.get(page_id, 0.0)
        if weight > 0:
            for page_id, score in pages:
                on_page = source.chunks_on(page_id)
                if not any(c in scores for c in on_page):
                    best = _best_chunk_on(context, on_page)
                    if best is not None:
                        scores[best] = weight * score
        return sorted(scores.items(), key=lambda pair: -pair[1])


def _best_chunk_on(context: RankContext, on_page: Sequence[str]) -> str | None:
    """The page's chunk that best matches the question's keywords (its first, if none)."""
    allowed = context.allowed
    candidates = [c for c in on_page if allowed is None or c in allowed]
    if not candidates:
        return None
    hits = context.source.keyword_hits("chunk", context.keyword_query(), 1, set(candidates))
    return hits[0] if hits else candidates[0]


def _ids(ranking: Ranking) -> list[str]:
    return ranking.ids if isinstance(ranking, TiedRanking) else list(ranking)
