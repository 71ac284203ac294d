"""Writing a collection's merged keyword segment with bounded memory: documents are read one at
a time and their postings spread over BUCKETS buckets by the top bits of the term hash (hashes
are uniform, so the buckets are even), kept in files once they pass SPILL bytes; each bucket is
then sorted on its own and appended. The result is the arrays `Segment.concat` would give over
the same segments (terms sorted, a term's postings in row order), while the heap holds one
document, SPILL bytes of postings and one bucket rather than every document's segment at once.

One merge of a collection runs at a time across the processes sharing its folder: a merger holds
an exclusive `flock` on `<collection>/.merge.lock` (the kernel lets it go when the process dies,
so a killed merger never blocks the next one; its staging folder is removed by the next writer).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import numpy as np

from citerag.store.atomic_dirs import remove_dead_copies, swap_in
from citerag.store.bm25_merged import (
    FORMAT,
    MERGED,
    META,
    Merged,
    Version,
    id_hashes,
    open_merged,
)
from citerag.store.bm25_segment import Segment
from citerag.store.keywords import KINDS

LOCK = ".merge.lock"
BUCKET_BITS = 6
BUCKETS = 1 << BUCKET_BITS
BUFFER = 2**16  # per output array under way
SPILL = 16 * 2**20  # postings held per kind before they go to the bucket files
_POSTING = np.dtype([("term", "<u8"), ("row", "<i8"), ("tf", "<i8")])
_EDGES = np.arange(1, BUCKETS, dtype=np.uint64) << np.uint64(64 - BUCKET_BITS)


class _Column:
    """One output array, appended piece by piece to a raw file, then written as .npy."""

    def __init__(self, path: Path, dtype: np.dtype | type) -> None:
        self.path, self.dtype, self.count = path, np.dtype(dtype), 0
        self._raw = path.with_name(path.name + ".raw")
        self._handle: BinaryIO = open(self._raw, "wb", buffering=BUFFER)  # noqa: SIM115

    def add(self, values: np.ndarray) -> None:
        self._handle.write(np.ascontiguousarray(values, dtype=self.dtype).data)
        self.count += len(values)

    def finish(self) -> None:
        self._handle.close()
        header = {
            "descr": np.lib.format.dtype_to_descr(self.dtype),
            "fortran_order": False,
            "shape": (self.count,),
        }
        with open(self.path, "wb") as out, open(self._raw, "rb") as raw:
            np.lib.format.write_array_header_1_0(out, header)
            shutil.copyfileobj(raw, out, 2**20)
        self._raw.unlink()


class _Kind:
    """The merge of one kind under way."""

    def __init__(self, staging: Path, kind: str) -> None:
        self.staging, self.kind = staging, kind
        self.rows, self.max_tf = 0, 0
        # Postings per bucket, in memory until they pass SPILL bytes, then in a file each.
        self.pending: list[list[np.ndarray]] = [[] for _ in range(BUCKETS)]
        self.pending_bytes = 0
        self.spilled = [False] * BUCKETS
        self.lengths = _Column(staging / f"{kind}.lengths.npy", np.int64)
        self.idbytes = _Column(staging / f"{kind}.idbytes.npy", np.uint8)
        self.idstarts = _Column(staging / f"{kind}.idstarts.npy", np.int64)
        self.idstarts.add(np.zeros(1, dtype=np.int64))
        self.idhashes = _Column(staging / f"{kind}.idhashes.npy", np.uint64)
        self.id_end = 0

    def add(self, segment: Segment) -> None:
        encoded = [i.encode("utf-8") for i in segment.ids]
        sizes = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
        self.idbytes.add(np.frombuffer(b"".join(encoded), dtype=np.uint8))
        self.idstarts.add(self.id_end + np.cumsum(sizes))
        self.id_end += int(sizes.sum())
        self.idhashes.add(id_hashes(segment.ids))
        self.lengths.add(segment.lengths)
        postings = np.empty(len(segment.rows), dtype=_POSTING)
        postings["term"] = np.repeat(segment.terms, np.diff(segment.indptr))
        postings["row"] = segment.rows.astype(np.int64) + self.rows
        postings["tf"] = segment.tf
        self.max_tf = max(self.max_tf, int(segment.tf.max(initial=0)))
        cuts = np.searchsorted(segment.terms, _EDGES)
        bounds = np.concatenate([[0], segment.indptr[cuts], [len(postings)]])
        for bucket, (start, end) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            if end > start:
                self.pending[bucket].append(postings[start:end])
        self.pending_bytes += postings.nbytes
        self.rows += len(segment)
        if self.pending_bytes > SPILL:
            self._spill()

    def _spill(self) -> None:
        for bucket, parts in enumerate(self.pending):
            if parts:
                with open(self._bucket_file(bucket), "ab") as out:
                    for part in parts:
                        out.write(part.data)
                self.spilled[bucket] = True
                parts.clear()
        self.pending_bytes = 0

    def _bucket_file(self, bucket: int) -> Path:
        return self.staging / f"{self.kind}.bucket{bucket}"

    def _bucket(self, bucket: int) -> np.ndarray:
        """The bucket's postings in the order they were added (spilled ones first)."""
        parts = self.pending[bucket]
        if self.spilled[bucket]:
            path = self._bucket_file(bucket)
            parts.insert(0, np.fromfile(path, dtype=_POSTING))
            path.unlink()
        postings = np.concatenate(parts) if parts else np.zeros(0, dtype=_POSTING)
        self.pending[bucket] = []
        return postings

    def finish(self) -> None:
        row_type = np.min_scalar_type(max(self.rows - 1, 0))
        columns = {
            name: _Column(self.staging / f"{self.kind}.{name}.npy", dtype)
            for name, dtype in (
                ("terms", np.uint64),
                ("indptr", np.int64),
                ("rows", row_type),
                ("tf", np.min_scalar_type(self.max_tf)),
            )
        }
        columns["indptr"].add(np.zeros(1, dtype=np.int64))
        done = 0
        for bucket in range(BUCKETS):
            postings = self._bucket(bucket)
            postings = postings[np.argsort(postings["term"], kind="stable")]
            terms, counts = np.unique(postings["term"], return_counts=True)
            columns["terms"].add(terms)
            columns["indptr"].add(done + np.cumsum(counts))
            columns["rows"].add(postings["row"])
            columns["tf"].add(postings["tf"])
            done += len(postings)
            del postings
        for column in [*columns.values(), self.lengths, self.idbytes, self.idstarts]:
            column.finish()
        self.idhashes.finish()


def write_merged(
    collection_folder: Path, parts: Iterable[tuple[str, Version, dict[str, Segment]]]
) -> Merged:
    """`parts` (in doc-id order, read as they are needed) merged into
    `collection_folder/.merged`, replacing the one there; returned mapped from its files."""
    remove_dead_copies(collection_folder)
    staging = collection_folder / f".{MERGED}.tmp-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        kinds = {kind: _Kind(staging, kind) for kind in KINDS}
        docs: list[list[object]] = []
        counts: dict[str, list[list[int]]] = {kind: [] for kind in KINDS}
        for doc_id, version, segments in parts:
            docs.append([doc_id, *version])
            for kind, merging in kinds.items():
                merging.add(segments[kind])
                counts[kind].append([len(segments[kind]), segments[kind].total_length])
        for merging in kinds.values():
            merging.finish()
        meta: dict[str, object] = {"format": FORMAT, "docs": docs, **counts}
        (staging / META).write_text(json.dumps(meta), encoding="utf-8")
        mapped = open_merged(staging)
        if mapped is None:
            raise OSError(f"{staging}: the merged keyword segment just written cannot be read")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    swap_in(staging, collection_folder / MERGED)
    return mapped


@contextmanager
def merge_lock(collection_folder: Path, wanted: Callable[[], bool]) -> Iterator[bool]:
    """Whether this caller holds the collection's merge lock: it waits while another merger
    (a process, or another index in this one) holds it, and gives up (False) once `wanted`
    turns false."""
    collection_folder.mkdir(parents=True, exist_ok=True)
    # A descriptor of its own: flock excludes open files, not processes, so two indexes in one
    # process exclude each other as two processes do.
    descriptor = os.open(collection_folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not wanted():
                    yield False
                    return
                time.sleep(0.05)
        yield True
    finally:
        os.close(descriptor)  # lets the lock go
