"""Builds the query engine from settings: retriever, fusion, reranker and answerer.

Every choice that depends on configuration or on what this machine has is made here, and
logged with its reason, so the rest of the engine only sees small typed interfaces.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from citerag.embed.embedder import Embedder
from citerag.query.pipeline import QueryPipeline
from citerag.retrieve.hybrid import HybridRetriever, RetrievalSettings
from citerag.retrieve.rerank import (
    BestSentenceReranker,
    ColbertReranker,
    MaxSimReranker,
    NoReranker,
    Reranker,
    find_colbert_checkpoint,
)
from citerag.settings import Settings

if TYPE_CHECKING:
    from citerag.engine import Engine

log = logging.getLogger("citerag.factory")

# The local reranker used when no ColBERT checkpoint exists, chosen by measurement on the
# Paul Graham questions (benchmarks/results/retrieval.md).
LOCAL_DEFAULT_RERANKER = "maxsim"


def build_reranker(settings: Settings, embedder: Embedder) -> tuple[Reranker, str]:
    """The reranker the settings ask for and why it was chosen."""
    choice = settings.reranker
    if choice in ("auto", "colbert"):
        checkpoint, reason = find_colbert_checkpoint(settings.colbert_checkpoint)
        if checkpoint:
            return ColbertReranker(checkpoint), f"ColBERT from {reason}"
        if choice == "colbert":
            from citerag.errors import ModelUnavailable

            raise ModelUnavailable(
                f"reranker is 'colbert' but {reason}; set COLBERT_CHECKPOINT to a local "
                "checkpoint folder or choose reranker 'auto'."
            )
        choice = LOCAL_DEFAULT_RERANKER
        why = f"{reason}; using the measured local default"
    else:
        why = "configured"
    local: dict[str, Callable[[], Reranker]] = {
        "maxsim": lambda: MaxSimReranker(embedder),
        "sentence": BestSentenceReranker,
        "none": NoReranker,
    }
    return local[choice](), why


def build_answerer(settings: Settings) -> Any | None:
    if not settings.llm_provider:
        return None
    from citerag.answer.llm import LLMAnswerer

    return LLMAnswerer.from_settings(settings)


def retrieval_settings(settings: Settings) -> RetrievalSettings:
    return RetrievalSettings(
        top_k_each=settings.similarity_top_k_fusion,
        rrf_k=settings.rrf_k,
        fusion_top_n=settings.fusion_top_n,
    )


def build_query_engine(engine: Engine) -> QueryPipeline:
    settings = engine.settings
    reranker, reason = build_reranker(settings, engine.embedder)
    log.info("reranker: %s (%s)", reranker.name, reason)
    answerer = build_answerer(settings)
    log.info(
        "answers: %s", f"LLM {settings.llm_provider}" if answerer else "extractive (no LLM set)"
    )
    fusion = retrieval_settings(settings)
    engine.embedder.load()  # once, now, so that no question pays for it

    def retriever_for(collection: str) -> HybridRetriever:
        return HybridRetriever(engine.vectors, engine.collection_state(collection), fusion)

    return QueryPipeline(
        docstore=engine.docstore,
        embedder=engine.embedder,
        retriever_for=retriever_for,
        reranker=reranker,
        answerer=answerer,
        top_n=settings.rerank_top_n,
        highlights_per_source=settings.highlights_per_source,
    )
