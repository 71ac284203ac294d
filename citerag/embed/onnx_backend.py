"""The SentenceTransformer model run by ONNX Runtime instead of PyTorch, exported once per model.

On CPU, ONNX Runtime encodes MiniLM 2-3.5x faster than PyTorch (measured here) with the same
vectors (float32: the largest difference per component is below 1e-6) and loads in a tenth of a
second instead of seconds (OpenVINO, where installed, runs the same export faster still:
`embed.graph_runners`). The export is made locally from the model's own weights (nothing is
downloaded), written to a temporary folder and renamed into place, so processes that export at
the same time never read half a model.

`onnx-int8` adds dynamic int8 quantisation: faster again, but the vectors move (cosine about
0.99 to float32), so it is a choice, measured in `benchmarks/results/library.md`, never a silent
default; documents ingested with it are keyed apart from float32 ones.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import platform
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from citerag.errors import ModelUnavailable

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)
FLOAT_FILE = "onnx/model.onnx"


def default_cache_root() -> Path:
    """Where exported models live when no storage folder is given (XDG's cache folder)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "citerag" / "models"


def onnx_available() -> bool:
    """Whether ONNX Runtime and optimum are installed (found, not imported: optimum's import
    takes seconds that the packed graph, which needs only ONNX Runtime, does not)."""
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "optimum"))


def quantization_config() -> str:
    """The int8 kernel set this processor runs fastest (sentence-transformers' names)."""
    if platform.machine().lower() in {"arm64", "aarch64"}:
        return "arm64"
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="ignore")
    except OSError:
        flags = ""
    return "avx512_vnni" if "avx512_vnni" in flags else "avx2"


def export_folder(source: Path, cache_root: Path) -> Path:
    """A folder per model: its name, and a digest of its path and weights' size and time."""
    weights = sorted(source.glob("*.safetensors")) + sorted(source.glob("*.bin"))
    stamp = [str(source.resolve())] + [
        f"{w.name}:{w.stat().st_size}:{w.stat().st_mtime_ns}" for w in weights
    ]
    digest = hashlib.sha256("|".join(stamp).encode()).hexdigest()[:16]
    return cache_root / f"{source.name}-onnx-{digest}"


def load_onnx_model(source: Path, cache_root: Path, quantized: bool) -> SentenceTransformer:
    """The ONNX SentenceTransformer for `source`, exporting (and quantizing) it on first use."""
    folder = export_folder(source, cache_root)
    file_name = _model_file(folder, quantized)
    if file_name is None:
        _export(source, folder, quantized)
        file_name = _model_file(folder, quantized)
    if file_name is None:
        raise ModelUnavailable(
            f"Exporting {source} to ONNX left no model file in {folder}; set "
            "EMBEDDING_BACKEND=torch to embed with PyTorch instead."
        )
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(
        str(folder), device="cpu", backend="onnx", model_kwargs={"file_name": file_name}
    )


def _model_file(folder: Path, quantized: bool) -> str | None:
    if not quantized:
        return FLOAT_FILE if (folder / FLOAT_FILE).is_file() else None
    found = sorted((folder / "onnx").glob(f"model_*int8_{quantization_config()}.onnx"))
    return f"onnx/{found[0].name}" if found else None


def _export(source: Path, folder: Path, quantized: bool) -> None:
    from sentence_transformers import SentenceTransformer, export_dynamic_quantized_onnx_model

    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    log.info("exporting the embedding model to ONNX in %s (once per model)", folder)
    try:
        with quiet_export():
            base = folder if (folder / FLOAT_FILE).is_file() else source
            model = SentenceTransformer(str(base), device="cpu", backend="onnx")
            model.save_pretrained(str(scratch))
            if quantized:
                export_dynamic_quantized_onnx_model(model, quantization_config(), str(scratch))
        move_into_place(scratch, folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def quiet_export() -> Iterator[None]:
    """The exporters' advice ("save the exported model", deprecations) is for their own users:
    this module does save it, so their records and warnings are held back while it runs."""
    noisy = [logging.getLogger(n) for n in ("sentence_transformers", "optimum", "transformers")]
    levels = [logger.level for logger in noisy]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for logger in noisy:
            logger.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for logger, level in zip(noisy, levels, strict=True):
                logger.setLevel(level)


def move_into_place(scratch: Path, folder: Path) -> None:
    """Swap the finished export in; another process that finished first keeps its own."""
    if not folder.exists():
        try:
            os.replace(scratch, folder)
            return
        except OSError:
            if not folder.exists():
                raise
    for path in scratch.rglob("*"):  # add what the existing export lacks (an int8 file)
        target = folder / path.relative_to(scratch)
        if path.is_file() and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            # Scratch sits beside the folder, on the same file system: a rename, never a reader
            # finding half a file.
            os.replace(path, target)
