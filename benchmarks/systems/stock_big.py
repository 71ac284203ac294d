"""Stock dense retrieval over a project collection's own chunks (latency at the same scale)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding

from citerag.engine import Engine

TOP_K = 10


def stock_dense_over(
    engine: Engine,
    collection: str,
    embed_model: BaseEmbedding,
    vectors: Mapping[str, np.ndarray],
) -> BaseRetriever:
    """A `VectorStoreIndex` (in-memory, LlamaIndex defaults) over the collection's nodes, given
    the vectors they were stored with (so nothing is embedded twice)."""
    nodes = engine.docstore.ready_chunks(collection)
    for node in nodes:
        node.embedding = vectors[node.node_id].tolist()
    index = VectorStoreIndex(nodes, embed_model=embed_model, show_progress=False)
    return index.as_retriever(similarity_top_k=TOP_K)
