"""What ingest embeds and stores per chunk: sentence vectors, chunk vectors, page-head vectors and
the Milvus rows. Shared by ingestion and by split-brain repair, so both compute the same vectors.

Sentence vectors come one of two ways (`sentence_vectors` setting): "separate" encodes every
distinct sentence on its own and each page's head once more; "pooled" encodes each page's text
once and pools each sentence's tokens (`embed.pooled`), the head being the page's first window.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from llama_index.core.schema import TextNode

from citerag.embed.embedder import Embedder
from citerag.embed.pooled import TokenEncoder, pooled_heads, pooled_pages
from citerag.embed.providers import HostedEmbedder
from citerag.enrich.fields import LIST_FIELDS
from citerag.enrich.figure_descriptions import FIGURE_DESCRIPTION
from citerag.errors import ConfigError
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
from citerag.types import Page, ParsedDocument

PREVIEW_CHARS = 240
# Roughly what MiniLM reads (256 word pieces): a page's head is its title, period and first rows.
PAGE_HEAD_CHARS = 1200
SENTENCE_VECTOR_MODES = ("separate", "pooled")
Vectors = dict[str, np.ndarray]


def document_vectors(
    embedder: Embedder, chunks: Sequence[TextNode], parsed: ParsedDocument, mode: str
) -> tuple[Vectors, Vectors]:
    """The sentence vectors of every chunk (by chunk id) and the page heads (by page key)."""
    if _pooled(mode):
        sentences, heads = pooled_vectors(embedder, chunks)
        missing = [p for p in parsed.pages if p.text.strip() and _head_key(parsed, p) not in heads]
        if missing:
            heads.update(page_head_vectors(embedder, replace(parsed, pages=missing), mode))
        return sentences, heads
    return sentence_vectors(embedder, chunks), page_head_vectors(embedder, parsed)


def sentence_vectors(
    embedder: Embedder, chunks: Sequence[TextNode], mode: str = "separate"
) -> Vectors:
    """Each chunk's sentence vectors, each distinct sentence embedded once."""
    if _pooled(mode):
        return pooled_vectors(embedder, chunks)[0]
    return separate_vectors(embedder, chunks)


def separate_vectors(embedder: Embedder, chunks: Sequence[TextNode]) -> Vectors:
    """Embed each distinct sentence text once: where overlapping chunks share a sentence, and
    where a text recurs (table rules, repeated rows and notes)."""
    rows: dict[str, int] = {}
    for chunk in chunks:
        for a, b in sentences_of(chunk):
            rows.setdefault(chunk.text[a:b], len(rows))
    vectors = embedder.embed(list(rows))
    result = {}
    for chunk in chunks:
        own = [rows[chunk.text[a:b]] for a, b in sentences_of(chunk)]
        result[chunk.node_id] = vectors[own] if own else np.zeros((0, vectors.shape[1]), np.float32)
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


def page_head_vectors(
    embedder: Embedder, parsed: ParsedDocument, mode: str = "separate"
) -> Vectors:
    pages = [p for p in parsed.pages if p.text.strip()]
    if _pooled(mode):
        heads = pooled_heads(_encoder(embedder), [p.text for p in pages], PAGE_HEAD_CHARS)
        vectors = _filled(heads, [p.text[:PAGE_HEAD_CHARS] for p in pages], embedder)
    else:
        vectors = embedder.embed([p.text[:PAGE_HEAD_CHARS] for p in pages])
    return {
        page_vector_key(parsed.doc_id, page.number): vector.reshape(1, -1)
        for page, vector in zip(pages, vectors, strict=True)
    }


def pooled_vectors(embedder: Embedder, chunks: Sequence[TextNode]) -> tuple[Vectors, Vectors]:
    """Sentence vectors pooled from one encoding of each page's text, and the page heads.

    The page text is rebuilt from the chunks (their offsets into it), so repair, which has the
    chunks, computes what ingest did. Figure descriptions are not page text: encoded apart."""
    own = [c for c in chunks if block_type_of(c) == FIGURE_DESCRIPTION]
    result = separate_vectors(embedder, own) if own else {}
    by_page: dict[int, list[TextNode]] = defaultdict(list)
    for chunk in chunks:
        if block_type_of(chunk) != FIGURE_DESCRIPTION:
            by_page[page_of(chunk)].append(chunk)
    pages = sorted(by_page)
    inputs = [_page_text_and_spans(by_page[page]) for page in pages]
    pooled = pooled_pages(_encoder(embedder), inputs, PAGE_HEAD_CHARS)
    heads: Vectors = {}
    for page, (text, spans), vectors in zip(pages, inputs, pooled, strict=True):
        rows = dict(
            zip(
                spans,
                _filled(vectors.sentences, [text[a:b] for a, b in spans], embedder),
                strict=True,
            )
        )
        for chunk in by_page[page]:
            start = start_of(chunk)
            own_rows = [rows[(start + a, start + b)] for a, b in sentences_of(chunk)]
            result[chunk.node_id] = (
                np.stack(own_rows) if own_rows else np.zeros((0, vectors.head.shape[0]), np.float32)
            )
        doc_id = doc_id_of(by_page[page][0])
        head = _filled(vectors.head.reshape(1, -1), [text[:PAGE_HEAD_CHARS]], embedder)
        heads[page_vector_key(doc_id, page)] = head
    return result, heads


def _page_text_and_spans(chunks: Sequence[TextNode]) -> tuple[str, list[tuple[int, int]]]:
    """The page text as far as the chunks cover it (gaps, which are whitespace, as spaces) and
    the distinct sentence spans in it."""
    end = max(start_of(c) + len(c.text) for c in chunks)
    text = [" "] * end
    spans: dict[tuple[int, int], None] = {}
    for chunk in chunks:
        start = start_of(chunk)
        text[start : start + len(chunk.text)] = chunk.text
        spans.update(((start + a, start + b), None) for a, b in sentences_of(chunk))
    return "".join(text), sorted(spans)


def _filled(vectors: np.ndarray, texts: Sequence[str], embedder: Embedder) -> np.ndarray:
    """Rows left zero by pooling (text the tokenizer reads as nothing) encoded on their own."""
    empty = [i for i, row in enumerate(vectors) if not row.any()]
    if empty:
        vectors = vectors.copy()
        vectors[empty] = embedder.embed([texts[i] for i in empty])
    return vectors


def _encoder(embedder: Embedder) -> TokenEncoder:
    if isinstance(embedder, HostedEmbedder):
        raise ConfigError(
            f"sentence_vectors 'pooled' needs a local model's token vectors, and the embeddings "
            f"are hosted ({embedder.model_id}); set SENTENCE_VECTORS=separate."
        )
    return TokenEncoder(embedder.model, embedder.dim)


def _pooled(mode: str) -> bool:
    if mode not in SENTENCE_VECTOR_MODES:
        shown = ", ".join(repr(m) for m in SENTENCE_VECTOR_MODES)
        raise ConfigError(f"sentence_vectors is {mode!r}; choose one of {shown}.")
    return mode == "pooled"


def _head_key(parsed: ParsedDocument, page: Page) -> str:
    return page_vector_key(parsed.doc_id, page.number)


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
            lists={name: list(chunk.metadata.get(name) or []) for name in LIST_FIELDS},
        )
        for chunk, vector in zip(chunks, vectors, strict=True)
    ]
