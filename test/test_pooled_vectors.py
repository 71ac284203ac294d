"""Sentence vectors pooled from one encoding of the page: spans map to their own word pieces
(across window boundaries too), the head is the page's first window, every chunk gets one vector
per sentence, and documents embedded this way are keyed apart from separately embedded ones."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from llama_index.core.embeddings import MockEmbedding
from transformers import AutoTokenizer

from citerag.chunk.chunker import chunk_document
from citerag.embed.embedder import Embedder, default_model_path
from citerag.embed.pooled import (
    TokenEncoder,
    plan_windows,
    pooled_heads,
    pooled_pages,
    span_tokens,
    tokenize_page,
)
from citerag.embed.providers import HostedEmbedder
from citerag.errors import ConfigError
from citerag.ingest.pipeline import ingest_key
from citerag.ingest.vectors import document_vectors, page_head_vectors, sentence_vectors
from citerag.nodes import page_vector_key, sentences_of
from citerag.settings import Settings
from citerag.types import BBox, Block, Page, ParsedDocument

DIM = 8
SENTENCES = [
    "Netflix's streaming revenues grew by a quarter in 2020.",
    "The author wrote short stories before college.",
    "Cash provided by operating activities rose to two billion dollars.",
]


class OneHotEncoder(TokenEncoder):
    """Each word piece's embedding is a one-hot of its position on the page, so a pooled
    vector shows exactly which tokens went into it; [CLS]/[SEP] are a fixed other vector."""

    def __init__(self, window: int) -> None:
        self._tokenizer = AutoTokenizer.from_pretrained(str(default_model_path()))
        self.window = self.body_window = window
        self.dim = 512
        self.windows: list[list[int]] = []
        self._position = 0

    def encode(self, windows: Sequence[list[int]]) -> list[np.ndarray]:
        self.windows = [list(w) for w in windows]
        outputs = []
        for window in windows:
            rows = np.zeros((len(window) + 2, self.dim), dtype=np.float32)
            rows[0, -1] = rows[-1, -1] = 1.0
            for i in range(len(window)):
                rows[i + 1, self._position] = 1.0
                self._position += 1
            outputs.append(rows)
        return outputs


def _page_text() -> tuple[str, list[tuple[int, int]]]:
    text, spans, cursor = "", [], 0
    for sentence in SENTENCES:
        spans.append((cursor, cursor + len(sentence)))
        text += sentence + " "
        cursor = len(text)
    return text.rstrip(), spans


def test_spans_map_to_the_word_pieces_of_their_characters() -> None:
    tokenizer = AutoTokenizer.from_pretrained(str(default_model_path()))
    text, spans = _page_text()
    page = tokenize_page(tokenizer, text)
    ranges = [span_tokens(page, span) for span in spans]
    assert ranges[0][0] == 0 and ranges[-1][1] == len(page.ids)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))  # no gaps
    for (first, last), (a, b) in zip(ranges, spans, strict=True):
        alone = tokenizer(text[a:b], add_special_tokens=False)["input_ids"]
        assert page.ids[first:last] == alone


def test_windows_cover_every_token_once_and_cut_at_sentence_starts() -> None:
    windows = plan_windows(count=100, sentence_starts=[0, 10, 30, 45, 90], size=40, head=25)
    assert windows[0] == (0, 25)  # the head window
    assert windows[1] == (25, 45)  # cut where the sentence at 45 begins
    covered = [t for a, b in windows for t in range(a, b)]
    assert covered == list(range(100))
    assert all(b - a <= 40 for a, b in windows)
    # A sentence longer than a window is cut at the window's size.
    assert plan_windows(count=100, sentence_starts=[0], size=40, head=40) == [
        (0, 40),
        (40, 80),
        (80, 100),
    ]


def test_a_sentence_across_a_window_boundary_pools_its_tokens_from_both_windows() -> None:
    text, spans = _page_text()
    encoder = OneHotEncoder(window=6)  # smaller than any sentence: each one is cut
    [page] = pooled_pages(encoder, [(text, spans)], head_chars=len(text))
    tokenized = tokenize_page(encoder.tokenizer, text)
    assert len(encoder.windows) > len(spans)
    for row, span in enumerate(spans):
        first, last = span_tokens(tokenized, span)
        expected = np.zeros(encoder.dim, dtype=np.float32)
        expected[first:last] = 1.0
        np.testing.assert_allclose(page.sentences[row], expected / np.linalg.norm(expected))
    # The head is the first window as the model pools it: its tokens with [CLS] and [SEP].
    head = np.zeros(encoder.dim, dtype=np.float32)
    head[:6], head[-1] = 1.0, 2.0
    np.testing.assert_allclose(page.head, head / np.linalg.norm(head), rtol=1e-6)


def test_heads_alone_are_the_heads_of_the_whole_page_encoding() -> None:
    text, spans = _page_text()
    [page] = pooled_pages(OneHotEncoder(window=6), [(text, spans)], head_chars=30)
    heads = pooled_heads(OneHotEncoder(window=6), [text], head_chars=30)
    np.testing.assert_allclose(heads[0], page.head)


def test_a_page_the_tokenizer_reads_as_nothing_gives_zero_rows() -> None:
    [page] = pooled_pages(OneHotEncoder(window=6), [("\u200b", [(0, 1)])], head_chars=10)
    assert not page.sentences.any() and not page.head.any()


def test_the_sentence_vector_path_is_part_of_the_document_key() -> None:
    sha = "cd" * 32
    separate = ingest_key(sha, Settings())
    assert ingest_key(sha, Settings(sentence_vectors="separate")) == separate
    assert ingest_key(sha, Settings(sentence_vectors="pooled")) != separate


def test_an_unknown_sentence_vector_path_is_named_with_the_choices() -> None:
    with pytest.raises(ConfigError, match="sentence_vectors is 'late'; choose one of"):
        sentence_vectors(Embedder(), [], mode="late")


def _document() -> ParsedDocument:
    box = BBox(0, 0, 100, 10)
    pages = [
        Page(
            number=n,
            width=100,
            height=100,
            blocks=[Block(kind="text", text=" ".join(SENTENCES[n - 1 :] * 30), bbox=box)],
        )
        for n in (1, 2)
    ]
    return ParsedDocument(doc_id="ef" * 32, name="doc.pdf", parser="pymupdf", pages=pages)


def test_hosted_embeddings_cannot_be_pooled_and_say_what_to_set() -> None:
    hosted = HostedEmbedder(MockEmbedding(embed_dim=DIM), "openai:mock", "http://127.0.0.1:9")
    chunks = chunk_document(_document(), chunk_size=256, chunk_overlap=32)
    with pytest.raises(ConfigError, match="hosted .*SENTENCE_VECTORS=separate"):
        sentence_vectors(hosted, chunks, mode="pooled")


@pytest.mark.slow
def test_pooled_sentence_vectors_are_nearest_their_own_encoding() -> None:
    embedder = Embedder()
    parsed = _document()
    chunks = chunk_document(parsed, chunk_size=256, chunk_overlap=32)
    pooled, heads = document_vectors(embedder, chunks, parsed, "pooled")
    separate, separate_heads = document_vectors(embedder, chunks, parsed, "separate")
    assert set(pooled) == set(separate) == {c.node_id for c in chunks}
    assert set(heads) == set(separate_heads) == {page_vector_key(parsed.doc_id, n) for n in (1, 2)}
    own = embedder.embed(SENTENCES)
    for chunk in chunks:
        assert pooled[chunk.node_id].shape == (len(sentences_of(chunk)), embedder.dim)
        for row, (a, b) in zip(pooled[chunk.node_id], sentences_of(chunk), strict=True):
            assert int(np.argmax(own @ row)) == SENTENCES.index(chunk.text[a:b])
    for key, head in heads.items():  # the same window of text as the separate head reads
        assert float(head[0] @ separate_heads[key][0]) > 0.98
    # Repair embeds from the chunks (or the parse) alone and gets what ingest stored.
    for key, head in page_head_vectors(embedder, parsed, "pooled").items():
        np.testing.assert_allclose(head, heads[key], atol=1e-5)
    again = sentence_vectors(embedder, chunks, "pooled")
    for chunk in chunks:
        np.testing.assert_allclose(again[chunk.node_id], pooled[chunk.node_id], atol=1e-5)
