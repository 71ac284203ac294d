"""Sentence vectors pooled from one encoding of the page ("late chunking").

Instead of encoding every sentence on its own (and each page's head once more), a page's text is
encoded once, in windows of what the model reads, and each sentence's vector is the normalized
mean of its own tokens' embeddings: the model's mean pooling, restricted to the sentence's
characters (the tokenizer's offset mapping), with the rest of the window as context. Windows
after the first hold up to `BODY_WINDOW` word pieces and are cut at sentence starts where one
fits, so a sentence is split between windows only when it is longer than a window. A page's
first window is its head (what a separate encoding of the head would read, up to 254 word
pieces), so the head vector is that window's mean, as the model pools it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Span = tuple[int, int]  # character offsets into the page text
BATCH_SIZE = 32
# Word pieces per window after the head: MiniLM was trained on inputs of 128 at most, and on
# the library's questions windows of 126 (+ [CLS], [SEP]) pooled as well as 254 or better.
BODY_WINDOW = 126


@dataclass(frozen=True)
class TokenizedPage:
    """A page's word pieces (no special tokens) and each one's character span."""

    ids: list[int]
    starts: np.ndarray
    ends: np.ndarray


def tokenize_page(tokenizer: Any, text: str) -> TokenizedPage:
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = np.asarray(encoded["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    return TokenizedPage(list(encoded["input_ids"]), offsets[:, 0], offsets[:, 1])


def span_tokens(page: TokenizedPage, span: Span) -> tuple[int, int]:
    """The half-open range of the tokens that overlap `span`'s characters."""
    first = int(np.searchsorted(page.ends, span[0], side="right"))
    last = int(np.searchsorted(page.starts, span[1], side="left"))
    return first, max(first, last)


def plan_windows(
    count: int, sentence_starts: Sequence[int], size: int, head: int
) -> list[tuple[int, int]]:
    """Consecutive token ranges covering `count` tokens: the first `head`, then windows of at
    most `size`, each cut at the last sentence start that fits (at `size` tokens
    when no sentence starts inside it)."""
    starts = sorted(set(sentence_starts))
    begin = min(count, head)
    windows = [(0, begin)] if begin else []
    while begin < count:
        limit = min(begin + size, count)
        cut = limit
        if limit < count:
            fitting = [s for s in starts if begin < s <= limit]
            cut = fitting[-1] if fitting else limit
        windows.append((begin, cut))
        begin = cut
    return windows


class TokenEncoder:
    """Runs a SentenceTransformer's transformer on given word pieces: token embeddings out."""

    def __init__(self, model: Any, dim: int) -> None:
        self._model = model
        self.dim = dim
        self._tokenizer = model.tokenizer
        # Room for the [CLS] and [SEP] the model adds around every input.
        self.window = int(model.max_seq_length) - 2
        self.body_window = min(self.window, BODY_WINDOW)

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    def encode(self, windows: Sequence[list[int]]) -> list[np.ndarray]:
        """Each window's embeddings, one row per input token plus [CLS] first and [SEP] last."""
        order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
        result: list[np.ndarray] = [np.zeros(0)] * len(windows)
        for begin in range(0, len(order), BATCH_SIZE):
            batch = order[begin : begin + BATCH_SIZE]
            outputs = self._forward([windows[i] for i in batch])
            for i, rows in zip(batch, outputs, strict=True):
                result[i] = rows
        return result

    def _forward(self, windows: Sequence[list[int]]) -> list[np.ndarray]:
        import torch

        cls, sep = self._tokenizer.cls_token_id, self._tokenizer.sep_token_id
        width = max(len(w) for w in windows) + 2
        ids = np.zeros((len(windows), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, window in enumerate(windows):
            ids[row, : len(window) + 2] = [cls, *window, sep]
            mask[row, : len(window) + 2] = 1
        device = getattr(self._model, "device", "cpu")
        features = {
            "input_ids": torch.from_numpy(ids).to(device),
            "attention_mask": torch.from_numpy(mask).to(device),
            "token_type_ids": torch.zeros_like(torch.from_numpy(ids)).to(device),
        }
        with torch.inference_mode():
            tokens = self._model[0](features)["token_embeddings"].float().cpu().numpy()
        return [tokens[row, : len(w) + 2] for row, w in enumerate(windows)]


@dataclass(frozen=True)
class PageVectors:
    """A page's sentence vectors (one row per span asked for) and its head vector."""

    sentences: np.ndarray
    head: np.ndarray


def pooled_pages(
    encoder: TokenEncoder, pages: Sequence[tuple[str, Sequence[Span]]], head_chars: int
) -> list[PageVectors]:
    """Sentence and head vectors of every (page text, sentence spans), all windows batched.

    The head is the page's word pieces that end within `head_chars` characters (a window at
    most). A sentence the tokenizer reads as nothing gets a zero vector, as does the head of a
    page without word pieces: the caller encodes those texts on their own."""
    tokenized = [tokenize_page(encoder.tokenizer, text) for text, _ in pages]
    ranges = [
        [span_tokens(t, span) for span in spans]
        for t, (_, spans) in zip(tokenized, pages, strict=True)
    ]
    plans = [
        plan_windows(
            len(t.ids),
            [a for a, b in r if b > a],
            encoder.body_window,
            min(_head(t, head_chars), encoder.window),
        )
        for t, r in zip(tokenized, ranges, strict=True)
    ]
    windows = [t.ids[a:b] for t, plan in zip(tokenized, plans, strict=True) for a, b in plan]
    encoded = iter(encoder.encode(windows))
    results = []
    for page_ranges, plan in zip(ranges, plans, strict=True):
        outputs = [next(encoded) for _ in plan]
        results.append(_page_vectors(outputs, page_ranges, encoder.dim))
    return results


def pooled_heads(encoder: TokenEncoder, texts: Sequence[str], head_chars: int) -> np.ndarray:
    """The head vector of each page text, as `pooled_pages` gives it, encoding only the head."""
    tokenized = [tokenize_page(encoder.tokenizer, text) for text in texts]
    heads = [t.ids[: min(_head(t, head_chars), encoder.window)] for t in tokenized]
    encoded = encoder.encode([ids for ids in heads if ids])
    rows = iter(encoded)
    result = np.zeros((len(texts), encoder.dim), dtype=np.float32)
    for row, ids in enumerate(heads):
        if ids:
            result[row] = next(rows).mean(axis=0)
    return _normalized(result)


def _head(page: TokenizedPage, head_chars: int) -> int:
    """How many word pieces end within the first `head_chars` characters (one at least)."""
    return max(1, int(np.searchsorted(page.ends, head_chars, side="right")))


def _page_vectors(
    windows: Sequence[np.ndarray], ranges: Sequence[tuple[int, int]], dim: int
) -> PageVectors:
    sentences = np.zeros((len(ranges), dim), dtype=np.float32)
    if not windows:  # a page the tokenizer reads as nothing
        return PageVectors(sentences, np.zeros(dim, dtype=np.float32))
    tokens = np.concatenate([w[1:-1] for w in windows])
    for row, (first, last) in enumerate(ranges):
        if last > first:
            sentences[row] = tokens[first:last].mean(axis=0)
    return PageVectors(_normalized(sentences), _normalized(windows[0].mean(axis=0)))


def _normalized(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0).astype(np.float32)
