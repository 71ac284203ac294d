"""Builds the query path from settings: retriever, postprocessors, reranker and answerer.

Every choice that depends on configuration or on what this machine has is made here, once per
engine, and logged with its reason; a query engine per question is then cheap to compose.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.vector_stores.types import MetadataFilters

from citerag.answer.llm_answer import LLMAnswerer
from citerag.answer.synthesizer import CitedSynthesizer
from citerag.embed.embedder import Embedder
from citerag.errors import ModelUnavailable
from citerag.query.cited_query_engine import CitedQueryEngine
from citerag.retrieve.collection_state import CollectionState
from citerag.retrieve.hybrid import HybridRetriever
from citerag.retrieve.postprocessors import (
    HighlightPostprocessor,
    SentenceVectors,
    SourcePostprocessors,
)
from citerag.retrieve.rerank import (
    BestSentenceScorer,
    ColbertScorer,
    MaxSimScorer,
    RerankPostprocessor,
    Scorer,
    find_colbert_checkpoint,
)
from citerag.settings import LlmSettings, RetrievalSettings, Settings
from citerag.store.base import DocStore, VectorIndex
from citerag.tools.retriever import ListFilteredRetriever, ListFilters

if TYPE_CHECKING:
    from citerag.answer.llm_answer import LLMAnswerer

log = logging.getLogger("citerag.factory")

# The local reranker used when no ColBERT checkpoint exists, chosen by measurement on the
# finance and Paul Graham questions (benchmarks/results/retrieval.md).
LOCAL_DEFAULT_RERANKER = "none"


ScorerFor = Callable[[SentenceVectors], Scorer | None]


def build_scorer(settings: RetrievalSettings, embedder: Embedder) -> tuple[ScorerFor, str]:
    """How to make the rerank scorer the settings ask for (None: keep the fused order) for a
    collection's sentence vectors, and why it was chosen."""
    choice: str = settings.reranker
    if choice in ("colbert-if-installed", "colbert"):
        checkpoint, reason = find_colbert_checkpoint(settings.colbert_checkpoint)
        if checkpoint:
            colbert = ColbertScorer(checkpoint)
            return (lambda _vectors: colbert), f"ColBERT from {reason}"
        if choice == "colbert":
            raise ModelUnavailable(
                f"reranker is 'colbert' but {reason}; set COLBERT_CHECKPOINT to a local "
                "checkpoint folder or choose reranker 'colbert-if-installed'."
            )
        choice = LOCAL_DEFAULT_RERANKER
        why = f"{reason}; using the measured local default"
    else:
        why = "configured"
    if choice == "maxsim":
        maxsim = MaxSimScorer(embedder)  # one per engine: it caches chunk token vectors
        return (lambda _vectors: maxsim), why
    if choice == "sentence":
        return BestSentenceScorer, why
    return (lambda _vectors: None), why


def build_answerer(settings: LlmSettings) -> LLMAnswerer | None:
    if not settings.llm_provider:
        return None
    return LLMAnswerer.from_settings(settings)


class QueryFactory:
    """What every question shares (models, stores, choices); composes a query engine per call."""

    def __init__(
        self,
        settings: Settings,
        docstore: DocStore,
        vectors: VectorIndex,
        embed_model: BaseEmbedding,
        embedder: Embedder,
    ) -> None:
        self.settings = settings
        self._docstore = docstore
        self._vectors = vectors
        self.embed_model = embed_model
        self._scorer_for, reason = build_scorer(settings.retrieval, embedder)
        log.info("reranker: %s (%s)", self.reranker_name, reason)
        self.answerer = build_answerer(settings.llm)
        log.info(
            "answers: %s", f"LLM {settings.llm.llm_provider}" if self.answerer else "extractive"
        )
        self.retrieval = settings.retrieval
        embedder.load()  # once, now, so that no question pays for it

    @property
    def reranker_name(self) -> str:
        scorer = self._scorer_for(lambda _ids: {})
        return scorer.name if scorer else "none"

    def retriever(
        self, state: CollectionState, filters: MetadataFilters | None = None
    ) -> HybridRetriever:
        return HybridRetriever(
            self._vectors, self._docstore, state, self.embed_model, self.retrieval, filters
        )

    def list_filtered_retriever(
        self, state: CollectionState, filters: MetadataFilters | None, list_filters: ListFilters
    ) -> ListFilteredRetriever:
        """The hybrid retriever with a sub-question's list-field filters (years, entities)."""
        return ListFilteredRetriever(
            self._vectors,
            self._docstore,
            state,
            self.embed_model,
            self.retrieval,
            filters,
            list_filters=list_filters,
        )

    def postprocessors(self, collection: str, top_k: int | None) -> SourcePostprocessors:
        def sentence_vectors(chunk_ids: Sequence[str]) -> Mapping[str, np.ndarray]:
            return self._docstore.get_sentence_vectors(collection, chunk_ids)

        return SourcePostprocessors(
            reranker=RerankPostprocessor(
                self._scorer_for(sentence_vectors), top_n=top_k or self.retrieval.rerank_top_n
            ),
            highlighter=HighlightPostprocessor(
                sentence_vectors, per_node=self.retrieval.highlights_per_source
            ),
        )

    def query_engine(
        self,
        state: CollectionState,
        top_k: int | None = None,
        filters: MetadataFilters | None = None,
    ) -> CitedQueryEngine:
        return CitedQueryEngine(
            self.retriever(state, filters),
            self.postprocessors(state.name, top_k).steps,
            CitedSynthesizer(self.answerer),
        )
