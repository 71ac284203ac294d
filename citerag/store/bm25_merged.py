"""Reading a document's keyword folder consistently, and the collection's merged segment: every
document's segment of a kind concatenated, rows in document-id order, kept on disk and
memory-mapped, so a serving process keeps the merged postings in the (shared, evictable) page
cache instead of its own heap.

The merged folder `<collection>/.merged` holds, per kind, a segment's arrays plus its entry ids
(UTF-8 bytes, their offsets, and a 64-bit hash each), and `merged.json`: the merged documents in
order, the version of the folder each came from, and their rows and total length per kind. It
is written under a staging name and renamed into place; a process that has the previous one
mapped keeps reading it (the old files live on until their last mapping goes), and files are
opened relative to one open directory, so a reader never mixes two merges.

A document folder's version is its inode and modification time: a folder is only ever replaced
whole (`atomic_dirs.swap_in`), so a new version is a new folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import BinaryIO, overload

import numpy as np

from citerag.store.bm25_segment import ARRAYS, Segment
from citerag.store.keywords import KINDS

MERGED = ".merged"
META = "merged.json"
IDS_FILE = "ids.json"
FORMAT = 1
ID_ARRAYS = ("idbytes", "idstarts", "idhashes")

Version = tuple[int, int]  # a folder's inode and modification time (ns)


@contextmanager
def opened_folder(folder: Path) -> Iterator[tuple[Version, int]]:
    """The folder's version and a descriptor to open its files by: one folder, even if it is
    replaced meanwhile. FileNotFoundError when it is not there."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        info = os.fstat(descriptor)
        yield (info.st_ino, info.st_mtime_ns), descriptor
    finally:
        os.close(descriptor)


def folder_version(folder: Path) -> Version:
    info = os.stat(folder)
    return info.st_ino, info.st_mtime_ns


def _file(directory: int, name: str) -> BinaryIO:
    return os.fdopen(os.open(name, os.O_RDONLY, dir_fd=directory), "rb")


def document_folders(collection_folder: Path) -> dict[str, Version]:
    """The document folders in a collection's folder now, with their versions (hidden names,
    staging copies and the merge's own, left out)."""
    try:
        entries = list(os.scandir(collection_folder))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    folders = {}
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        folders[entry.name] = (info.st_ino, info.st_mtime_ns)
    return folders


def read_document(folder: Path) -> tuple[Version, dict[str, Segment]]:
    """A document folder's version and segments. OSError or ValueError when it is gone or
    broken (removed meanwhile by another process)."""
    with opened_folder(folder) as (version, directory):
        ids = _ids(directory)
        kinds: dict[str, Segment] = {}
        for kind in KINDS:
            arrays = {name: _loaded(directory, f"{kind}.{name}.npy") for name in ARRAYS}
            kinds[kind] = Segment(ids=tuple(ids[kind]), **arrays)
            if len(kinds[kind].lengths) != len(kinds[kind].ids):
                raise ValueError(f"{folder}: {kind} ids and rows differ in number")
    return version, kinds


def read_stats(folder: Path) -> tuple[Version, dict[str, tuple[int, int]]]:
    """A document folder's version and, per kind, its entries and their total length (what
    the collection's statistics need), without its postings."""
    with opened_folder(folder) as (version, directory):
        lengths = {kind: _loaded(directory, f"{kind}.lengths.npy") for kind in KINDS}
    stats: dict[str, tuple[int, int]] = {k: (len(a), int(a.sum())) for k, a in lengths.items()}
    return version, stats


def _ids(directory: int) -> dict[str, list[str]]:
    with _file(directory, IDS_FILE) as handle:
        ids = json.loads(handle.read().decode("utf-8"))
    if not isinstance(ids, dict):
        raise ValueError("ids.json holds no object")
    return ids


def _loaded(directory: int, name: str) -> np.ndarray:
    with _file(directory, name) as handle:
        return np.load(handle, allow_pickle=False)


def id_hashes(ids: Sequence[str]) -> np.ndarray:
    """A 64-bit polynomial hash of each id's code points, computed by numpy for all at once
    (a merge stores one per entry; a search hashes its allowed ids). Not collision-proof: a
    search checks the ids it returns."""
    text = np.array(list(ids), dtype=str)
    if not len(text):
        return np.zeros(0, dtype=np.uint64)
    width = text.dtype.itemsize // 4
    points = text.view(np.uint32).reshape(len(text), width).astype(np.uint64)
    return (points * _POWERS[:width]).sum(axis=1, dtype=np.uint64)


_POWERS = np.cumprod(np.full(512, 0x100000001B3, dtype=np.uint64), dtype=np.uint64)


class MappedIds(Sequence[str]):
    """A merged segment's entry ids, mapped: UTF-8 bytes with their offsets (to read an id),
    and each id's `id_hashes` value (to find the rows of given ids without reading ids)."""

    def __init__(self, *arrays: np.ndarray) -> None:
        data, starts, hashes = arrays  # ID_ARRAYS, in order
        self._bytes = memoryview(data.data)
        self._starts = starts
        self._hashes = hashes

    def __len__(self) -> int:
        return len(self._starts) - 1

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return self.of(np.arange(*index.indices(len(self))))
        start, end = self._starts[index : index + 2].tolist()
        return str(self._bytes[start:end], "utf-8")

    def of(self, rows: np.ndarray) -> list[str]:
        """The ids of `rows`."""
        ends = self._starts[rows + 1].tolist()
        starts = self._starts[rows].tolist()
        return [str(self._bytes[a:b], "utf-8") for a, b in zip(starts, ends, strict=True)]

    def rows_among(self, rows: np.ndarray, allowed: Collection[str]) -> np.ndarray:
        """The `rows` whose id hash is one of `allowed`'s: those rows, and rarely (a hash
        collision) another; the caller checks the ids it keeps."""
        return rows[np.isin(self._hashes[rows], id_hashes(list(allowed)))]


@dataclass(frozen=True)
class Merged:
    """One merge of a collection: its segments (mapped) and what it was made of."""

    segments: dict[str, Segment]
    versions: dict[str, Version]  # doc id -> the folder version merged, in doc-id order
    rows: dict[str, np.ndarray]  # kind -> rows per merged document
    lengths: dict[str, np.ndarray]  # kind -> total entry length per merged document
    key: Version  # the merged folder's own version

    @cached_property
    def doc_order(self) -> tuple[str, ...]:
        return tuple(self.versions)

    @cached_property
    def place(self) -> dict[str, int]:
        return {doc_id: i for i, doc_id in enumerate(self.doc_order)}

    def starts(self, kind: str) -> np.ndarray:
        """Each merged document's first row of `kind`, and the row count after the last."""
        return self._starts[kind]

    @cached_property
    def _starts(self) -> dict[str, np.ndarray]:
        out = {}
        for kind, rows in self.rows.items():
            out[kind] = np.zeros(len(rows) + 1, dtype=np.int64)
            np.cumsum(rows, out=out[kind][1:])
        return out

    def span(self, kind: str, doc_id: str) -> tuple[int, int]:
        at = self.place[doc_id]
        starts = self.starts(kind)
        return int(starts[at]), int(starts[at + 1])


def empty_merged() -> Merged:
    """The merge of no document (a collection never merged: every document is searched one
    by one until there are more than a few)."""
    empty, none = Segment.build([], []), np.zeros(0, dtype=np.int64)
    nothing: dict[str, np.ndarray] = dict.fromkeys(KINDS, none)
    segments: dict[str, Segment] = dict.fromkeys(KINDS, empty)
    return Merged(segments, {}, nothing, nothing, (0, 0))


def open_merged(folder: Path) -> Merged | None:
    """The merge in `folder` (a collection's `.merged`), mapped; None when there is none or it
    is unreadable (a newer version's format, or removed meanwhile)."""
    try:
        with opened_folder(folder) as (key, directory):
            with _file(directory, META) as handle:
                meta = json.loads(handle.read().decode("utf-8"))
            if meta.get("format") != FORMAT:
                return None
            versions = {str(d): (int(ino), int(ns)) for d, ino, ns in meta["docs"]}
            segments: dict[str, Segment] = {}
            rows: dict[str, np.ndarray] = {}
            lengths: dict[str, np.ndarray] = {}
            for kind in KINDS:
                arrays = {n: _mapped(directory, f"{kind}.{n}.npy") for n in ARRAYS + ID_ARRAYS}
                ids = MappedIds(
                    arrays.pop("idbytes"), arrays.pop("idstarts"), arrays.pop("idhashes")
                )
                segments[kind] = Segment(ids=ids, **arrays)
                counts = np.array(meta[kind], dtype=np.int64).reshape(-1, 2)
                rows[kind], lengths[kind] = counts[:, 0], counts[:, 1]
                if len(rows[kind]) != len(versions) or rows[kind].sum() != len(ids):
                    return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return Merged(segments, versions, rows, lengths, key)


def _mapped(directory: int, name: str) -> np.ndarray:
    """A .npy file mapped read-only (read whole when empty: an empty map is refused)."""
    with _file(directory, name) as handle:
        major, _ = np.lib.format.read_magic(handle)
        if major == 1:
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
        if fortran or dtype.hasobject or len(shape) != 1:
            raise ValueError(f"{name}: not a flat array")
        if not shape[0]:
            return np.zeros(shape, dtype=dtype)
        mapped = np.memmap(handle, dtype=dtype, mode="r", offset=handle.tell(), shape=shape)
        return mapped.view(np.ndarray)
