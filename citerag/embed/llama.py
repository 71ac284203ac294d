"""The project's embedder as a LlamaIndex `BaseEmbedding`, so any LlamaIndex app can use it."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from citerag.embed.embedder import Embedder


class LocalEmbedding(BaseEmbedding):
    """A local SentenceTransformer (MiniLM from PyPI by default), normalized vectors."""

    _embedder: Embedder = PrivateAttr()

    def __init__(self, embedder: Embedder | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("model_name", "local-sentence-transformer")
        kwargs.setdefault("embed_batch_size", 64)
        super().__init__(**kwargs)
        self._embedder = embedder or Embedder()

    @classmethod
    def class_name(cls) -> str:
        return "CiteragLocalEmbedding"

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embedder.embed([query])[0].tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embedder.embed([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embedder.embed(texts).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embedding(text)
