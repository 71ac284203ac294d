"""Ingesting files one by one into one engine: what the CLI's `ingest` and the HTTP upload share.

`ingest_one` turns a file the user cannot ingest (an InputError: corrupt, encrypted, scanned,
unreadable) into a failed `FileResult` carrying its sentence, so a shelf goes on past it; any
other error (a server down, a model missing, Ctrl-C) still stops the run. The Ingestor removes
what a failed document wrote, so nothing half-written stays either way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from citerag.errors import InputError
from citerag.ingest.discover import Found
from citerag.ingest.pipeline import IngestOutcome, Progress
from citerag.text.names import display_name
from citerag.types import JSONObject

FAILED = "failed"
WRITTEN = ("ingested", "replaced", "repaired")  # statuses whose chunks this run stored
# Files parsed ahead of the one being ingested: parsing costs a file its own time, so with one
# file ahead a slow parse after a quick embed left the embedder waiting (6 s over the library).
PARSE_AHEAD = 3


class Ingests(Protocol):
    """The part of `citerag.engine.Engine` that ingests a file."""

    def ingest(
        self, path: Path, collection: str, progress: Progress | None = None
    ) -> IngestOutcome: ...


@runtime_checkable
class PreparesIngest(Protocol):
    """An engine that can start on the next file (parse it) while ingesting this one."""

    def prepare(self, path: Path) -> None: ...


class FileProgress(Protocol):
    """Shows one file's stages; closed when the file is done, failed or interrupted."""

    def __call__(self, stage: str) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class FileResult:
    name: str
    path: Path
    status: str  # ingested, skipped, replaced, repaired or failed
    pages: int = 0
    chunks: int = 0
    seconds: float = 0.0
    doc_id: str = ""
    message: str = ""  # why it failed: one sentence
    same_as: str = ""  # skipped: the name these bytes are already stored under
    stages: dict[str, float] = field(default_factory=dict)  # seconds per ingest stage

    @property
    def failed(self) -> bool:
        return self.status == FAILED

    def to_dict(self) -> JSONObject:
        """The fields of the ingest outcome (as the upload API reports it)."""
        return {
            "name": self.name,
            "doc_id": self.doc_id,
            "status": self.status,
            "pages": self.pages,
            "chunks": self.chunks,
            "seconds": self.seconds,
            **({"same_as": self.same_as} if self.same_as else {}),
        }


def failed(path: Path, message: str, seconds: float = 0.0) -> FileResult:
    return FileResult(display_name(path.name), path, FAILED, seconds=seconds, message=message)


def ingest_one(
    engine: Ingests, path: Path, collection: str, progress: Progress | None = None
) -> FileResult:
    """Ingest one file; a file that cannot be used comes back failed with its sentence."""
    started = time.perf_counter()
    try:
        outcome = engine.ingest(path, collection, progress)
    except InputError as error:
        return failed(path, str(error), time.perf_counter() - started)
    return FileResult(
        outcome.name,
        path,
        outcome.status,
        outcome.pages,
        outcome.chunks,
        time.perf_counter() - started,
        outcome.doc_id,
        same_as=outcome.same_as,
        stages=outcome.stages,
    )


def ingest_shelf(
    engine: Ingests,
    found: Sequence[Found],
    collection: str,
    progress_for: Callable[[int, Found], FileProgress],
    report: Callable[[FileResult], None],
) -> list[FileResult]:
    """Each found file in turn (`progress_for` gets its 1-based position); problems found on
    the way are reported as failed files in their place."""
    results = []
    usable = [item.path for item in found if item.ok]
    reached = prepared = 0  # usable files reached / handed to the background parser, in order
    for position, item in enumerate(found, start=1):
        if not item.ok:
            result = failed(item.path, item.problem)
        else:
            reached += 1
            if isinstance(engine, PreparesIngest):
                for path in usable[prepared : reached + PARSE_AHEAD]:
                    engine.prepare(path)
                prepared = max(prepared, reached + PARSE_AHEAD)
            progress = progress_for(position, item)
            try:
                result = ingest_one(engine, item.path, collection, progress)
            finally:
                progress.close()
        report(result)
        results.append(result)
    return results


@dataclass(frozen=True)
class ShelfTotals:
    files: int
    written: int  # ingested, replaced or repaired
    skipped: int
    failed: int
    pages: int  # of every file not failed (as the file lines say)
    chunks: int
    written_pages: int
    seconds: float  # wall clock of the whole run
    stages: dict[str, float] = field(default_factory=dict)  # summed over the files

    @classmethod
    def of(cls, results: Sequence[FileResult], seconds: float) -> ShelfTotals:
        written = [r for r in results if r.status in WRITTEN]
        return cls(
            files=len(results),
            written=len(written),
            skipped=sum(r.status == "skipped" for r in results),
            failed=sum(r.failed for r in results),
            pages=sum(r.pages for r in results),
            chunks=sum(r.chunks for r in results),
            written_pages=sum(r.pages for r in written),
            seconds=seconds,
            stages=_summed_stages(results),
        )

    @property
    def pages_per_second(self) -> float:
        """Pages ingested by this run (skipped ones cost nothing) per second of the run."""
        return self.written_pages / self.seconds if self.seconds > 0 else 0.0


def _summed_stages(results: Sequence[FileResult]) -> dict[str, float]:
    summed: dict[str, float] = {}
    for result in results:
        for stage, seconds in result.stages.items():
            summed[stage] = summed.get(stage, 0.0) + seconds
    return summed
