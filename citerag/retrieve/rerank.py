"""Rerankers: reorder fused candidates by a finer relevance score.

- `ColbertReranker`: ColBERT late interaction through colbert-ai, from a local checkpoint.
- `MaxSimReranker`: the same late interaction (MaxSim) over MiniLM token embeddings.
- `BestSentenceReranker`: the best cosine between the question and one sentence of the chunk.
- `NoReranker`: keeps the fused order.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from citerag.embed.embedder import Embedder
from citerag.types import ScoredChunk

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RerankInput:
    query: str
    query_vector: np.ndarray
    candidates: Sequence[ScoredChunk]
    sentence_vectors: Mapping[str, np.ndarray]


class Reranker(Protocol):
    name: str

    def rerank(self, request: RerankInput, top_n: int) -> list[ScoredChunk]: ...


# The reranker's order is fused with the retrieval order, the retrieval counting twice: alone,
# each local reranker lowered context recall@10 on the Paul Graham questions (0.72 vs 0.78);
# blended, recall holds (benchmarks/results/retrieval.md).
RETRIEVAL_WEIGHT = 2.0
BLEND_K = 60


def _ordered(
    candidates: Sequence[ScoredChunk], scores: Sequence[float], top_n: int
) -> list[ScoredChunk]:
    """Candidates (given in retrieval order) reordered by a weighted reciprocal-rank blend."""
    by_score = sorted(range(len(candidates)), key=lambda i: -scores[i])
    blended = [RETRIEVAL_WEIGHT / (BLEND_K + i + 1) for i in range(len(candidates))]
    for rank, index in enumerate(by_score, start=1):
        blended[index] += 1.0 / (BLEND_K + rank)
    order = sorted(range(len(candidates)), key=lambda i: -blended[i])
    return [ScoredChunk(candidates[i].chunk, blended[i]) for i in order[:top_n]]


class NoReranker:
    name = "none"

    def rerank(self, request: RerankInput, top_n: int) -> list[ScoredChunk]:
        return list(request.candidates[:top_n])


class BestSentenceReranker:
    name = "sentence"

    def rerank(self, request: RerankInput, top_n: int) -> list[ScoredChunk]:
        scores = []
        for candidate in request.candidates:
            vectors = request.sentence_vectors.get(candidate.chunk.id)
            best = (
                float(np.max(vectors @ request.query_vector))
                if vectors is not None and len(vectors)
                else -1.0
            )
            scores.append(best)
        return _ordered(request.candidates, scores, top_n)


class MaxSimReranker:
    """Late interaction over MiniLM token embeddings, with a per-process cache of chunk tokens."""

    name = "maxsim"

    def __init__(self, embedder: Embedder, cache_size: int = 4096) -> None:
        self._embedder = embedder
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def rerank(self, request: RerankInput, top_n: int) -> list[ScoredChunk]:
        query_tokens = self._token_vectors([request.query])[0]
        doc_tokens = self._chunk_tokens(request.candidates)
        scores = [float(np.max(query_tokens @ d.T, axis=1).mean()) for d in doc_tokens]
        return _ordered(request.candidates, scores, top_n)

    def _chunk_tokens(self, candidates: Sequence[ScoredChunk]) -> list[np.ndarray]:
        with self._lock:
            missing = [c.chunk for c in candidates if c.chunk.id not in self._cache]
        if missing:
            computed = self._token_vectors([c.text for c in missing])
            with self._lock:
                for chunk, tokens in zip(missing, computed, strict=True):
                    self._cache[chunk.id] = tokens.astype(np.float16)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        with self._lock:
            return [self._cache[c.chunk.id].astype(np.float32) for c in candidates]

    def _token_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        outputs = self._embedder.model.encode(
            list(texts), output_value="token_embeddings", convert_to_numpy=False, batch_size=16
        )
        result = []
        for tokens in outputs:
            array = tokens.float().cpu().numpy()
            norms = np.linalg.norm(array, axis=1, keepdims=True)
            result.append(array / np.maximum(norms, 1e-12))
        return result


class ColbertReranker:
    """ColBERT through colbert-ai; only built when a checkpoint exists on this machine."""

    name = "colbert"

    def __init__(self, checkpoint: str, doc_maxlen: int = 512, query_maxlen: int = 32) -> None:
        from colbert.infra import ColBERTConfig
        from colbert.modeling.checkpoint import Checkpoint

        config = ColBERTConfig(
            checkpoint=checkpoint, doc_maxlen=doc_maxlen, query_maxlen=query_maxlen, gpus=0
        )
        self._config = config
        self._checkpoint: Any = Checkpoint(checkpoint, colbert_config=config, verbose=0)

    def rerank(self, request: RerankInput, top_n: int) -> list[ScoredChunk]:
        import torch
        from colbert.modeling.colbert import colbert_score

        texts = [c.chunk.text for c in request.candidates]
        with torch.inference_mode():
            query = self._checkpoint.queryFromText([request.query])
            ids, attention = self._checkpoint.doc_tokenizer.tensorize(texts)
            docs, mask = self._checkpoint.doc(ids, attention, keep_dims="return_mask")
            scores = colbert_score(query, docs, mask, config=self._config)
        return _ordered(request.candidates, scores.tolist(), top_n)


def find_colbert_checkpoint(configured: str) -> tuple[str | None, str]:
    """A usable local ColBERT checkpoint and the reason it was (not) found."""
    if configured:
        if Path(configured).is_dir():
            return configured, f"COLBERT_CHECKPOINT folder {configured}"
        cached = _cached_hub_model(configured)
        if cached:
            return cached, f"{configured} found in the local model cache"
        return None, f"COLBERT_CHECKPOINT {configured!r} is neither a folder nor in the local cache"
    cached = _cached_hub_model("colbert-ir/colbertv2.0")
    if cached:
        return cached, "colbert-ir/colbertv2.0 found in the local model cache"
    return None, "no ColBERT checkpoint on this machine (set COLBERT_CHECKPOINT to use one)"


def _cached_hub_model(repo_id: str) -> str | None:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(repo_id, "config.json")
    except ValueError:  # not a valid hub id (e.g. a path that does not exist)
        return None
    return str(Path(found).parent) if isinstance(found, str) else None
