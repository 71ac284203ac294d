"""What ingest embeds and stores per chunk: sentence vectors, chunk vectors, page-head vectors and
the Milvus rows. Shared by ingestion and by split-brain repair, so both compute the same vectors.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from llama_index.core.schema import TextNode

from citerag.embed.embedder import Embedder
from citerag.nodes import (
    block_type_of,
    doc_id_of,
    doc_name_of,
    label_of,
    page_of,
    page_vector_key,
    section_of,
    sentences_of,
    start_of,
    table_context_of,
)
from citerag.store.base import VectorRow
from citerag.types import ParsedDocument

PREVIEW_CHARS = 240
# Roughly what MiniLM reads (256 word pieces): a page's head is its title, period and first rows.
PAGE_HEAD_CHARS = 1200


def sentence_vectors(embedder: Embedder, chunks: Sequence[TextNode]) -> dict[str, np.ndarray]:
    """Embed each distinct sentence once, even where overlapping chunks share it."""
    keys: dict[tuple[int, int, int], int] = {}
    texts: list[str] = []
    for chunk in chunks:
        page, start = page_of(chunk), start_of(chunk)
        for a, b in sentences_of(chunk):
            key = (page, start + a, start + b)
            if key not in keys:
                keys[key] = len(texts)
                texts.append(chunk.text[a:b])
    vectors = embedder.embed(texts)
    result = {}
    for chunk in chunks:
        page, start = page_of(chunk), start_of(chunk)
        rows = [keys[(page, start + a, start + b)] for a, b in sentences_of(chunk)]
        result[chunk.node_id] = (
            vectors[rows] if rows else np.zeros((0, vectors.shape[1]), np.float32)
        )
    return result


def chunk_vectors(
    embedder: Embedder, chunks: Sequence[TextNode], sentences: dict[str, np.ndarray]
) -> np.ndarray:
    """The normalized mean of a chunk's sentence vectors, plus its table context's vector.

    MiniLM reads 256 word pieces at most, so embedding a 512-token chunk whole would drop
    its tail; the sentence mean covers all of it, costs no second model pass, and matched
    embedding sentence-aligned windows on the Paul Graham questions. A table chunk's rows
    say little alone ("Other, net 1,055"): its context (statement title, period, header)
    counts as much as all its rows together.
    """
    means = np.stack([sentences[c.node_id].mean(axis=0) for c in chunks])
    contexts = sorted({table_context_of(c) for c in chunks} - {""})
    if contexts:
        context_vectors = dict(zip(contexts, embedder.embed(contexts), strict=True))
        for row, chunk in enumerate(chunks):
            context = table_context_of(chunk)
            if context:
                means[row] = normalized(means[row]) + context_vectors[context]
    return normalized(means.astype(np.float32))


def page_head_vectors(embedder: Embedder, parsed: ParsedDocument) -> dict[str, np.ndarray]:
    pages = [p for p in parsed.pages if p.text.strip()]
    vectors = embedder.embed([p.text[:PAGE_HEAD_CHARS] for p in pages])
    return {
        page_vector_key(parsed.doc_id, page.number): vector.reshape(1, -1)
        for page, vector in zip(pages, vectors, strict=True)
    }


def normalized(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def vector_rows(chunks: Sequence[TextNode], vectors: np.ndarray) -> list[VectorRow]:
    return [
        VectorRow(
            chunk_id=chunk.node_id,
            vector=vector,
            doc_id=doc_id_of(chunk),
            doc_name=doc_name_of(chunk),
            page=page_of(chunk),
            node_type=block_type_of(chunk),
            section=section_of(chunk),
            label=label_of(chunk),
            preview=chunk.text[:PREVIEW_CHARS],
        )
        for chunk, vector in zip(chunks, vectors, strict=True)
    ]
