"""Lite's page copy (`lite_pages`) on disk, so a new process loads it instead of reading every
page row back through Lite (28 s for 90,721 rows on the 2-core machine).

One folder per page collection inside Lite's own folder: a copy of Lite's rows goes where Lite's
files go (copied, moved and deleted with them), so it can never describe another Lite. It holds
ids.npy and doc_ids.npy (unicode arrays), matrix.npy (normalized float32 rows) and meta.json:
row count, dimension, CRC-32 of the matrix, and `lite_files`, the names, sizes and modification
times of Lite's files of that collection when it was stored. A set is written in a hidden
staging folder and renamed into place (`atomic_dirs`), and removed by a rename: a reader sees a
whole set or none. A set that cannot be read, disagrees with itself or fails its checksum is
removed with a warning; the caller then reads Lite, which is slow but exact.
"""

from __future__ import annotations

import json
import logging
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from citerag.store.atomic_dirs import remove_dead_copies, retire, swap_in, write_json_atomically

log = logging.getLogger(__name__)

FORMAT = 1
FOLDER = "citerag_pages"  # inside Lite's folder, beside its own `collections`


# Every file of a Lite collection: (path inside its folder, bytes, modification time in ns).
LiteFiles = list[list[str | int]]


@dataclass(frozen=True)
class StoredPages:
    ids: list[str]
    doc_ids: list[str]
    matrix: np.ndarray  # float32, one row per id
    lite_files: LiteFiles | None  # Lite's files of the collection when this was stored


def pages_folder(uri: str) -> Path:
    """Where the copies of the Lite at `uri` live: inside its folder (Milvus Lite 3 keeps a
    folder), beside it when it is a single file."""
    lite = Path(uri).expanduser()
    return lite / FOLDER if lite.is_dir() else lite.with_name(f"{lite.name}.pages")


class PageFiles:
    """The stored copies under `folder`, one set per page collection name, of the Lite at
    `lite`."""

    def __init__(self, folder: Path, lite: Path | None = None) -> None:
        self.folder = folder
        self._lite = lite

    def lite_files(self, name: str) -> LiteFiles | None:
        """Lite's files of collection `name` now, None where Lite keeps no such folder (a
        collection not made yet, or a Lite that keeps its data otherwise).

        Milvus Lite 3 writes every change (insert, delete, compaction) as new segment files and
        a new manifest.json, and leaves them alone when it only opens, searches or closes, so
        the same files mean the same rows."""
        folder = self._lite / "collections" / name if self._lite else None
        if folder is None or not folder.is_dir():
            return None
        found: LiteFiles = []
        try:
            for path in sorted(folder.rglob("*")):
                status = path.stat()
                if path.is_file():
                    found.append(
                        [str(path.relative_to(folder)), status.st_size, status.st_mtime_ns]
                    )
        except OSError:  # a file replaced meanwhile: unknown, so Lite's rows are counted
            return None
        return found

    def load(self, name: str) -> StoredPages | None:
        """The stored copy of `name`, or None when there is none or it is damaged."""
        path = self.folder / name
        if not path.is_dir():
            return None
        try:
            return _read(path)
        except (OSError, ValueError, KeyError, TypeError, EOFError) as error:
            log.warning(
                "The stored copy of Lite's page rows at %s cannot be used (%s); reading the "
                "rows from Milvus Lite instead, and storing them again",
                path,
                error,
            )
            self.remove(name)
            return None

    def save(
        self, name: str, ids: tuple[str, ...], doc_ids: tuple[str, ...], matrix: np.ndarray
    ) -> None:
        """Store a copy of `name`'s rows, replacing the one stored."""
        self.folder.mkdir(parents=True, exist_ok=True)
        remove_dead_copies(self.folder)
        staging = self.folder / f".{name}.tmp-{os.getpid()}"
        staging.mkdir(exist_ok=True)
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        _save_array(staging / "ids.npy", np.asarray(ids, dtype=np.str_))
        _save_array(staging / "doc_ids.npy", np.asarray(doc_ids, dtype=np.str_))
        _save_array(staging / "matrix.npy", matrix)
        meta = {
            "format": FORMAT,
            "rows": len(ids),
            "dim": int(matrix.shape[1]) if matrix.ndim == 2 else 0,
            "crc32": zlib.crc32(matrix.data),
            "lite_files": self.lite_files(name),
        }
        write_json_atomically(staging / "meta.json", meta)
        swap_in(staging, self.folder / name)

    def remove(self, name: str) -> None:
        """Forget `name`'s stored copy (before Lite's rows change, so none outlives them)."""
        retire(self.folder / name)


def _read(path: Path) -> StoredPages:
    meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    if meta["format"] != FORMAT:
        raise ValueError(f"format {meta['format']!r}, not {FORMAT}")
    rows, dim = int(meta["rows"]), int(meta["dim"])
    ids = np.load(path / "ids.npy", allow_pickle=False)
    doc_ids = np.load(path / "doc_ids.npy", allow_pickle=False)
    matrix = np.load(path / "matrix.npy", allow_pickle=False)
    if ids.shape != (rows,) or doc_ids.shape != (rows,) or ids.dtype.kind != "U":
        raise ValueError(f"ids of shape {ids.shape} and {doc_ids.shape} for {rows} rows")
    if doc_ids.dtype.kind != "U" or matrix.dtype != np.float32 or matrix.shape != (rows, dim):
        raise ValueError(f"a {matrix.dtype} matrix of shape {matrix.shape} for {rows}x{dim}")
    if zlib.crc32(np.ascontiguousarray(matrix).data) != int(meta["crc32"]):
        raise ValueError("the matrix fails its checksum")
    lite_files = meta.get("lite_files")
    if lite_files is not None and not isinstance(lite_files, list):
        raise ValueError(f"Lite's files recorded as {type(lite_files).__name__}")
    return StoredPages(ids.tolist(), doc_ids.tolist(), matrix, lite_files)


def _save_array(path: Path, array: np.ndarray) -> None:
    with path.open("wb") as out:
        np.save(out, array, allow_pickle=False)
        out.flush()
        os.fsync(out.fileno())  # the rename must never show a set whose data is not on disk
