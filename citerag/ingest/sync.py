"""`main.py ingest FOLDER --sync`: the collection becomes what the folder holds.

Files are recognised by their bytes (the document id is the hash of the bytes and of the
settings that shape the chunks), documents by the source path each one keeps:

- a file whose bytes are not stored is ingested (added, or replacing the older bytes stored
  under its name: the Ingestor does that);
- stored bytes under another name, whose source lies inside this folder, are a rename: the
  stored document takes the file's name and path (`citerag.ingest.rename`), nothing embedded;
- a document whose source lies inside this folder but whose bytes no file there holds is removed
  (documents from elsewhere, uploads, other folders, are never touched);
- a file still being written (`settling`, which the watcher finds) is left for a later sync,
  and so is the document stored under its name.

Every step is one the plain ingest already makes crash-safe, or a rename that a re-run finishes,
so a kill at any point, then a re-run, leaves the collection equal to the folder.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from citerag.errors import InputError
from citerag.ingest.discover import discover_pdfs
from citerag.ingest.pipeline import ingest_key
from citerag.ingest.rename import can_finish, rename_document
from citerag.ingest.shelf import FileProgress, FileResult, Ingests, failed, ingest_one
from citerag.settings import Settings
from citerag.store.base import Stores
from citerag.text.names import display_name
from citerag.types import DocumentRecord

RENAMED = "renamed"
REMOVED = "removed"
WAITING = "waiting"  # still being written: left for the next sync
_COUNTED = {
    "ingested": "added",
    "replaced": "replaced",
    "repaired": "repaired",  # stored incompletely before, so removed and ingested again
    RENAMED: "renamed",
    REMOVED: "removed",
    "skipped": "unchanged",
    "failed": "failed",
    WAITING: "waiting",
}
HASH_BLOCK = 1 << 20


class SyncEngine(Ingests, Protocol):
    """The part of `citerag.engine.Engine` a sync uses."""

    settings: Settings
    stores: Stores


@dataclass(frozen=True)
class SyncTotals:
    added: int = 0
    replaced: int = 0
    repaired: int = 0
    renamed: int = 0
    removed: int = 0
    unchanged: int = 0
    failed: int = 0
    waiting: int = 0

    @classmethod
    def of(cls, results: Sequence[FileResult]) -> SyncTotals:
        counts = dict.fromkeys(_COUNTED.values(), 0)
        for result in results:
            counts[_COUNTED[result.status]] += 1
        return cls(**counts)


@dataclass(frozen=True)
class _File:
    path: Path
    source: str  # the absolute path a document keeps
    doc_id: str

    @property
    def name(self) -> str:
        """The name its document is stored under (ingest makes a file's name safe first)."""
        return display_name(self.path.name)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def source_of(folder: Path, path: Path) -> str:
    """The absolute path a document found at `path` (inside `folder`) keeps as its source."""
    return storable(str(folder.resolve() / path.relative_to(folder)))


def storable(path: str) -> str:
    """`path` as a docstore can hold it: a name that is not UTF-8 keeps its undecodable bytes as
    backslash escapes, so one file always gives the same text to compare."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def is_inside(source: str, folder: Path) -> bool:
    return bool(source) and Path(source).is_relative_to(folder.resolve())


def check_sync_folder(folder: Path) -> Path:
    if not folder.is_dir():
        raise InputError(
            f"{folder} is not a folder; give --sync the folder whose PDFs the collection "
            "should hold."
        )
    return folder


def sync_folder(
    engine: SyncEngine,
    folder: Path,
    collection: str,
    progress_for: Callable[[Path], FileProgress],
    report: Callable[[FileResult], None],
    settling: Collection[str] = (),
) -> list[FileResult]:
    """Make `collection` hold what `folder` holds; a result per file (and per removed document)
    goes to `report` as it is done. `settling`: sources of files still being written."""
    check_sync_folder(folder)
    results: list[FileResult] = []

    def done(result: FileResult) -> None:
        report(result)
        results.append(result)

    files = _folder_files(engine.settings, folder, settling, done)
    docstore = engine.stores.docstore
    records = {r.doc_id: r for r in docstore.list_documents(collection, include_pending=True)}
    kept: set[str] = set()
    for group in _by_bytes(files).values():
        record = records.get(group[0].doc_id)
        primary = _primary(group, record)
        for twin in group:
            if twin is not primary:
                same = FileResult(twin.path.name, twin.path, "skipped", same_as=primary.path.name)
                done(same)
        result = _sync_file(engine, collection, folder, primary, record, progress_for)
        if keeps(result):
            kept.add(result.doc_id)
        done(result)
    waiting = {Path(source).name for source in settling}
    for record in docstore.list_documents(collection, include_pending=True):
        if (
            is_inside(record.source, folder)
            and record.doc_id not in kept
            and record.source not in settling
            and record.name not in waiting
        ):
            engine.stores.remove_document(collection, record.doc_id)
            done(FileResult(record.name, Path(record.source), REMOVED, record.pages))
    return results


def keeps(result: FileResult) -> bool:
    """Whether the file's document is now stored under the file's own name."""
    return not result.failed and (result.status == RENAMED or not result.same_as)


def _folder_files(
    settings: Settings,
    folder: Path,
    settling: Collection[str],
    done: Callable[[FileResult], None],
) -> list[_File]:
    """The folder's PDFs with their document ids; what cannot be used is reported failed."""
    files = []
    for item in discover_pdfs([folder]):
        if not item.ok:
            done(failed(item.path, item.problem))
            continue
        source = source_of(folder, item.path)
        if source in settling:
            done(FileResult(item.path.name, item.path, WAITING))
            continue
        try:
            digest = file_sha256(item.path)
        except OSError as error:
            reason = error.strerror or str(error)
            done(failed(item.path, f"{item.path} cannot be read ({reason}); check it and rerun."))
            continue
        files.append(_File(item.path, source, ingest_key(digest, settings)))
    return files


def _by_bytes(files: Sequence[_File]) -> dict[str, list[_File]]:
    groups: dict[str, list[_File]] = {}
    for item in files:
        groups.setdefault(item.doc_id, []).append(item)
    return groups


def _primary(group: Sequence[_File], record: DocumentRecord | None) -> _File:
    """The file a document of these bytes is stored under: the one of its current name, else
    the first (the others are copies: one document holds one set of bytes)."""
    if record is not None:
        for item in group:
            if item.name == record.name:
                return item
    return group[0]


def _sync_file(
    engine: SyncEngine,
    collection: str,
    folder: Path,
    item: _File,
    record: DocumentRecord | None,
    progress_for: Callable[[Path], FileProgress],
) -> FileResult:
    started = time.perf_counter()
    renamed_from = _rename_if_moved(engine.stores, folder, item, record)
    renamed_in = time.perf_counter() - started
    progress = progress_for(item.path)
    try:
        result = ingest_one(engine, item.path, collection, progress)
    finally:
        progress.close()
    if keeps(result):
        keep_source(engine.stores, collection, result.doc_id, item.source)
    if renamed_from and result.status == "skipped":
        return replace(result, status=RENAMED, same_as=renamed_from, seconds=renamed_in)
    return result


def _rename_if_moved(
    stores: Stores, folder: Path, item: _File, record: DocumentRecord | None
) -> str:
    """The name the file's bytes were stored under when they now take the file's name (a file
    of this folder renamed or moved, or such a rename cut short); "" when nothing was renamed.
    The file is ingested after: when the stored rows are not whole, ingest replaces them."""
    if record is None or not is_inside(record.source, folder):
        return ""
    if record.name == item.name and record.status == "ready":
        return ""  # nothing to rename: the cheap check first, every unchanged file passes here
    if not can_finish(stores, record):
        return ""
    rename_document(stores, record, item.name, item.source)
    return record.name if record.name != item.name else ""


def keep_source(stores: Stores, collection: str, doc_id: str, source: str) -> None:
    """Record where the document came from (after its ingest: a kill between the two leaves a
    document without a source, which the next sync finds skipped and records then)."""
    record = stores.docstore.get_document(collection, doc_id)
    if record is not None and record.status == "ready" and record.source != source:
        stores.docstore.put_document(replace(record, source=source))


def keep_sources(stores: Stores, collection: str, results: Sequence[FileResult]) -> None:
    """The sources of the files a plain `ingest` stored (so a later --sync of their folder
    knows them, and answers can name their printed page labels)."""
    for result in results:
        if keeps(result) and result.doc_id:
            source = storable(str(result.path.parent.resolve() / result.path.name))
            keep_source(stores, collection, result.doc_id, source)
