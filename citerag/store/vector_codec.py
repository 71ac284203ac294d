"""How the docstores keep sentence and page-head vectors: compactly, read back as float32.

Every stored matrix names its encoding beside its bytes, so a store written under one default
keeps reading after the default changes. Rows that name none were written before the name was
kept, when every row was float16.

- "float16": 2 bytes a value (768 bytes for a 384-dimension vector).
- "int8": per row one float32 scale, then one signed byte a value: the row divided by its
  largest absolute value times 127, rounded (symmetric, so zero stays zero): 388 bytes for 384
  dimensions. Cosines against a unit query move by about 1e-3.
- "float32": 4 bytes a value, exact.

Bytes are little-endian whatever the machine, so a store can move between machines.
"""

from __future__ import annotations

from typing import Any, Final, get_args

import numpy as np

from citerag.settings.choices import SentenceVectorEncoding

ENCODINGS: Final = get_args(SentenceVectorEncoding)
# What rows without a named encoding hold: the only encoding before it was named.
UNNAMED_ROWS: Final[SentenceVectorEncoding] = "float16"
# The default for new rows; benchmarks/results/vector_encoding.md has the measurements.
DEFAULT_ENCODING: Final[SentenceVectorEncoding] = "float16"

INT8_LEVELS: Final = 127
_SCALE: Final[np.dtype[Any]] = np.dtype("<f4")
_FLOAT: Final[dict[str, np.dtype[Any]]] = {"float16": np.dtype("<f2"), "float32": np.dtype("<f4")}


def checked_encoding(name: str | None) -> SentenceVectorEncoding:
    """The encoding a row names (none: the unnamed rows' float16), or a ValueError saying which
    names this version reads."""
    if name is None:
        return UNNAMED_ROWS
    for known in ENCODINGS:
        if name == known:
            return known
    raise ValueError(
        f"a stored vector is encoded as {name!r}, which this version cannot read "
        f"(it reads {', '.join(ENCODINGS)}); open the store with the version that wrote it."
    )


def encode_vectors(matrix: np.ndarray, encoding: SentenceVectorEncoding) -> tuple[int, int, bytes]:
    """(rows, dimension, bytes) of a 2-D matrix in `encoding`."""
    values = np.asarray(matrix, dtype=np.float32)
    if values.ndim != 2:
        raise ValueError(f"sentence vectors must be a 2-D array, got shape {values.shape}")
    rows, dim = values.shape
    if encoding == "int8":
        peaks = np.abs(values).max(axis=1) if dim else np.zeros(rows, np.float32)
        scales = (peaks / INT8_LEVELS).astype(_SCALE)
        safe = np.where(scales > 0, scales, 1.0).astype(np.float32)[:, None]
        levels = np.clip(np.rint(values / safe), -INT8_LEVELS, INT8_LEVELS).astype(np.int8)
        return rows, dim, scales.tobytes() + levels.tobytes()
    return rows, dim, values.astype(_FLOAT[encoding]).tobytes()


def decode_vectors(
    blob: bytes, rows: int, dim: int, encoding: SentenceVectorEncoding
) -> np.ndarray:
    """The float32 matrix (rows x dim) that `encode_vectors` stored as `blob`."""
    if encoding == "int8":
        scale_bytes = rows * _SCALE.itemsize
        scales = np.frombuffer(blob, dtype=_SCALE, count=rows)
        levels = np.frombuffer(blob, dtype=np.int8, offset=scale_bytes).reshape(rows, dim)
        return levels.astype(np.float32) * scales.astype(np.float32)[:, None]
    return np.frombuffer(blob, dtype=_FLOAT[encoding]).reshape(rows, dim).astype(np.float32)


def bytes_per_vector(dim: int, encoding: SentenceVectorEncoding) -> int:
    """What one vector of `dim` values takes in `encoding`, before the store's own overhead."""
    if encoding == "int8":
        return _SCALE.itemsize + dim
    return _FLOAT[encoding].itemsize * dim
