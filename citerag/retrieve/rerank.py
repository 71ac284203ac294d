"""Rerankers as LlamaIndex node postprocessors: reorder fused candidates by a finer score.

`RerankPostprocessor` blends a scorer's order with the retrieval order. Scorers:
- `ColbertScorer`: ColBERT late interaction through colbert-ai, from a local checkpoint.
- `MaxSimScorer`: the same late interaction (MaxSim) over MiniLM token embeddings.
- `BestSentenceScorer`: the best cosine between the question and one sentence of the chunk.
A reranker named "none" keeps the fused order.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import Field, PrivateAttr

from citerag.embed.embedder import Embedder
from citerag.extras import require

log = logging.getLogger(__name__)


class Scorer(Protocol):
    name: str

    def score(self, query: QueryBundle, nodes: Sequence[NodeWithScore]) -> list[float]: ...


# The reranker's order is fused with the retrieval order, the retrieval counting twice: alone,
# each local reranker lowered context recall@10 on the Paul Graham questions (0.72 vs 0.78);
# blended, recall holds (benchmarks/results/retrieval.md).
RETRIEVAL_WEIGHT = 2.0
BLEND_K = 60


def blend(nodes: Sequence[NodeWithScore], scores: Sequence[float]) -> list[NodeWithScore]:
    """Nodes (given in retrieval order) reordered by a weighted reciprocal-rank blend."""
    by_score = sorted(range(len(nodes)), key=lambda i: -scores[i])
    blended = [RETRIEVAL_WEIGHT / (BLEND_K + i + 1) for i in range(len(nodes))]
    for rank, index in enumerate(by_score, start=1):
        blended[index] += 1.0 / (BLEND_K + rank)
    order = sorted(range(len(nodes)), key=lambda i: -blended[i])
    return [NodeWithScore(node=nodes[i].node, score=blended[i]) for i in order]


class RerankPostprocessor(BaseNodePostprocessor):
    """Keeps the best `top_n` nodes by the scorer's order blended with the retrieval order."""

    top_n: int = Field(default=10, gt=0)
    _scorer: Scorer | None = PrivateAttr(default=None)

    def __init__(self, scorer: Scorer | None, top_n: int = 10, **kwargs: Any) -> None:
        super().__init__(**{**kwargs, "top_n": top_n})
        self._scorer = scorer

    @classmethod
    def class_name(cls) -> str:
        return "CiteragRerank"

    @property
    def name(self) -> str:
        return self._scorer.name if self._scorer else "none"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if self._scorer is None or query_bundle is None or len(nodes) < 2:
            return list(nodes[: self.top_n])
        return blend(nodes, self._scorer.score(query_bundle, nodes))[: self.top_n]


def query_vector_of(query: QueryBundle) -> np.ndarray | None:
    return None if query.embedding is None else np.asarray(query.embedding, dtype=np.float32)


class BestSentenceScorer:
    name = "sentence"

    def __init__(self, sentence_vectors: Callable[[Sequence[str]], Mapping[str, np.ndarray]]):
        self._sentence_vectors = sentence_vectors

    def score(self, query: QueryBundle, nodes: Sequence[NodeWithScore]) -> list[float]:
        query_vector = query_vector_of(query)
        vectors = self._sentence_vectors([n.node.node_id for n in nodes])
        scores = []
        for candidate in nodes:
            found = vectors.get(candidate.node.node_id)
            usable = query_vector is not None and found is not None and len(found)
            scores.append(float(np.max(found @ query_vector)) if usable else -1.0)  # type: ignore[operator]
        return scores


class MaxSimScorer:
    """Late interaction over MiniLM token embeddings, with a per-process cache of chunk tokens."""

    name = "maxsim"

    def __init__(self, embedder: Embedder, cache_size: int = 4096) -> None:
        self._embedder = embedder
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def score(self, query: QueryBundle, nodes: Sequence[NodeWithScore]) -> list[float]:
        query_tokens = self._token_vectors([query.query_str])[0]
        doc_tokens = self._chunk_tokens(nodes)
        return [float(np.max(query_tokens @ d.T, axis=1).mean()) for d in doc_tokens]

    def _chunk_tokens(self, nodes: Sequence[NodeWithScore]) -> list[np.ndarray]:
        with self._lock:
            missing = [n.node for n in nodes if n.node.node_id not in self._cache]
        if missing:
            computed = self._token_vectors([n.get_content() for n in missing])
            with self._lock:
                for node, tokens in zip(missing, computed, strict=True):
                    self._cache[node.node_id] = tokens.astype(np.float16)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        with self._lock:
            return [self._cache[n.node.node_id].astype(np.float32) for n in nodes]

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


class ColbertScorer:
    """ColBERT through colbert-ai; only built when a checkpoint exists on this machine."""

    name = "colbert"

    def __init__(self, checkpoint: str, doc_maxlen: int = 512, query_maxlen: int = 32) -> None:
        require("colbert", "colbert", "ColBERT (colbert-ai)")
        from colbert.infra import ColBERTConfig
        from colbert.modeling.checkpoint import Checkpoint

        config = ColBERTConfig(
            checkpoint=checkpoint, doc_maxlen=doc_maxlen, query_maxlen=query_maxlen, gpus=0
        )
        self._config = config
        self._checkpoint = Checkpoint(checkpoint, colbert_config=config, verbose=0)

    def score(self, query: QueryBundle, nodes: Sequence[NodeWithScore]) -> list[float]:
        import torch
        from colbert.modeling.colbert import colbert_score

        texts = [n.node.get_content() for n in nodes]
        with torch.inference_mode():
            encoded_query = self._checkpoint.queryFromText([query.query_str])
            ids, attention = self._checkpoint.doc_tokenizer.tensorize(texts)
            docs, mask = self._checkpoint.doc(ids, attention, keep_dims="return_mask")
            scores = colbert_score(encoded_query, docs, mask, config=self._config)
        return [float(s) for s in scores.tolist()]


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
