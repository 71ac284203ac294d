"""Answering one question: retrieve → rerank → highlight → answer → cite."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from citerag.answer.citations import normalize_citations
from citerag.answer.contract import AnswerMetadata, AnswerResult, Source, build_sources
from citerag.answer.extractive import ExtractiveCandidate, extractive_answer
from citerag.answer.highlights import ScoredHighlight, select_highlights
from citerag.embed.embedder import Embedder
from citerag.errors import InputError
from citerag.retrieve.hybrid import HybridRetriever, RetrievalResult
from citerag.retrieve.rerank import Reranker, RerankInput
from citerag.store.base import DocStore, PageRange
from citerag.types import ScoredChunk

log = logging.getLogger(__name__)
EXTRACTIVE_MODEL = "extractive (no LLM configured)"
MAX_QUESTION_CHARS = 4000


@dataclass(frozen=True)
class Candidates:
    """Fused and reranked chunks of one question, with what highlighting needs."""

    retrieval: RetrievalResult
    ranked: list[ScoredChunk]
    sentence_vectors: dict[str, np.ndarray]
    query_vector: np.ndarray


class QueryPipeline:
    def __init__(
        self,
        docstore: DocStore,
        embedder: Embedder,
        retriever_for: Callable[[str], HybridRetriever],
        reranker: Reranker,
        answerer: Any | None,
        top_n: int,
        highlights_per_source: int,
    ) -> None:
        self._docstore = docstore
        self._embedder = embedder
        self._retriever_for = retriever_for
        self.reranker = reranker
        self._answerer = answerer
        self._top_n = top_n
        self._highlights_per_source = highlights_per_source

    def answer(
        self,
        question: str,
        collection: str,
        top_k: int | None = None,
        page_range: PageRange | None = None,
    ) -> AnswerResult:
        started = time.perf_counter()
        question = _checked(question)
        found = self.candidates(question, collection, top_k, page_range)
        highlights = [self._highlights(question, c, found) for c in found.ranked]
        sources = build_sources(found.ranked, [[h.highlight for h in hs] for hs in highlights])
        text, model, tokens = self._compose(question, sources, highlights)
        metadata = AnswerMetadata(
            processing_time_ms=round((time.perf_counter() - started) * 1000),
            model=model,
            tokens_used=tokens,
            retrieval_method="hybrid",
            num_chunks_retrieved=len(found.retrieval.fused),
            reranked=self.reranker.name != "none" and len(found.ranked) > 1,
        )
        return AnswerResult(answer=text, sources=sources, metadata=metadata)

    def candidates(
        self,
        question: str,
        collection: str,
        top_k: int | None = None,
        page_range: PageRange | None = None,
    ) -> Candidates:
        retriever = self._retriever_for(collection)
        if retriever.is_empty:
            raise InputError(
                f"Collection {collection!r} has no documents; add one with "
                f"`python main.py ingest PATH --collection {collection}`."
            )
        query_vector = self._embedder.embed([question])[0]
        retrieval = retriever.retrieve(question, query_vector, page_range)
        fused_scores = dict(retrieval.fused)
        chunks = self._docstore.get_chunks(
            collection, [chunk_id for chunk_id, _ in retrieval.fused]
        )
        fused = [ScoredChunk(c, fused_scores[c.id]) for c in chunks]
        vectors = self._docstore.get_sentence_vectors(collection, [c.id for c in chunks])
        limit = top_k or self._top_n
        request = RerankInput(question, query_vector, fused, vectors)
        ranked = self.reranker.rerank(request, limit) if len(fused) > 1 else fused[:limit]
        return Candidates(retrieval, ranked, vectors, query_vector)

    def _highlights(
        self, question: str, scored: ScoredChunk, found: Candidates
    ) -> list[ScoredHighlight]:
        chunk = scored.chunk
        return select_highlights(
            question,
            chunk.text,
            chunk.sentences,
            found.sentence_vectors.get(chunk.id),
            found.query_vector,
            k=self._highlights_per_source,
        )

    def _compose(
        self,
        question: str,
        sources: Sequence[Source],
        highlights: Sequence[Sequence[ScoredHighlight]],
    ) -> tuple[str, str, int]:
        if self._answerer is not None and sources:
            result = self._answerer.answer(question, sources)
            return normalize_citations(result.text, sources), result.model, result.tokens_used
        candidates = [
            ExtractiveCandidate(
                source.citation_number,
                source.page_number,
                h.highlight.startOffset,
                h.highlight.text,
                h.score,
            )
            for source, source_highlights in zip(sources, highlights, strict=True)
            for h in source_highlights
        ]
        return extractive_answer(candidates), EXTRACTIVE_MODEL, 0


def _checked(question: str) -> str:
    question = question.strip()
    if not question:
        raise InputError("The question is empty; ask something about the documents.")
    if len(question) > MAX_QUESTION_CHARS:
        raise InputError(
            f"The question is {len(question)} characters long; keep it under {MAX_QUESTION_CHARS}."
        )
    return question
