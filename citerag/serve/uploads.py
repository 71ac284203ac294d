"""Uploads: checked before anything is kept, ingested in the background, one at a time.

An upload is refused (413 over the size cap, 415 when it is not a PDF, 422 when PyMuPDF cannot
use it, with the CLI's sentence) before it is staged for the engine. A staged file goes into
`uploads/<collection>/<name>` (where the viewer renders its pages) only once its ingest
succeeded; a failed ingest leaves neither the file nor anything in the engine.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
import uuid
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from citerag.errors import InputError, RagError
from citerag.ingest.pipeline import STAGES as INGEST_STAGES
from citerag.ingest.pipeline import Progress
from citerag.ingest.shelf import Ingests, ingest_one
from citerag.parse.validate import inspect_pdf
from citerag.serve.errors import ApiError

log = logging.getLogger(__name__)
PDF_MAGIC = b"%PDF-"
MAGIC_WINDOW = 1024  # readers accept a PDF header anywhere in its first kilobyte
STAGES = ("queued", *INGEST_STAGES, "done")
KEPT_JOBS = 200


@dataclass
class UploadJob:
    id: str
    collection: str
    name: str
    status: str = "queued"  # queued, running, done, failed
    stage: str = "queued"
    progress: float = 0.0
    message: str = ""
    outcome: dict[str, Any] | None = None
    created: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class FileStore:
    """The uploaded PDFs, one folder per collection, beside the engine's storage."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, collection: str, name: str) -> Path:
        return self.root / collection / name

    def staging(self, job_id: str) -> Path:
        return self.root / ".staging" / job_id

    def keep(self, staged: Path, collection: str, name: str) -> None:
        target = self.path(collection, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staged, target)

    def discard(self, collection: str, name: str) -> None:
        self.path(collection, name).unlink(missing_ok=True)


def check_upload(data: bytes, name: str, cap_bytes: int) -> None:
    """Size and type, from the bytes alone: 413 or 415 before anything is written."""
    if len(data) > cap_bytes:
        raise ApiError(413, f"{name} is {mb(len(data))}; the limit is {mb(cap_bytes)}.")
    if not name.lower().endswith(".pdf") or PDF_MAGIC not in data[:MAGIC_WINDOW]:
        raise ApiError(415, f"{name} is not a PDF; upload a PDF file (.pdf).")


def mb(size: int) -> str:
    return f"{size / 1_048_576:.1f} MB"


class UploadJobs:
    """Stages checked uploads and ingests them on one background thread."""

    def __init__(self, engine: Ingests, files: FileStore) -> None:
        self._engine = engine
        self._files = files
        self._jobs: OrderedDict[str, UploadJob] = OrderedDict()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest")

    def submit(self, data: bytes, name: str, collection: str) -> UploadJob:
        job = UploadJob(id=uuid.uuid4().hex, collection=collection, name=name)
        staged = self._stage(job, data)
        with self._lock:
            self._jobs[job.id] = job
            while len(self._jobs) > KEPT_JOBS:
                self._jobs.popitem(last=False)
        self._pool.submit(self._run, job, staged)
        return job

    def get(self, job_id: str) -> UploadJob:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise ApiError(404, f"There is no upload job {job_id!r}; it may have expired.")
        return job

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _stage(self, job: UploadJob, data: bytes) -> Path:
        """The bytes written under the upload's own name and opened as the CLI would (422)."""
        folder = self._files.staging(job.id)
        folder.mkdir(parents=True)
        staged = folder / job.name
        staged.write_bytes(data)
        try:
            inspect_pdf(staged)
        except InputError as error:
            shutil.rmtree(folder, ignore_errors=True)
            raise ApiError(422, str(error)) from None
        return staged

    def _run(self, job: UploadJob, staged: Path) -> None:
        job.status = "running"
        try:
            result = ingest_one(self._engine, staged, job.collection, self._progress(job))
            if result.failed:
                job.status, job.message = "failed", result.message
                return
            self._files.keep(staged, job.collection, job.name)
            job.outcome = result.to_dict()
            job.status, job.stage, job.progress = "done", "done", 1.0
        except RagError as error:
            job.status, job.message = "failed", str(error)
        except Exception as error:  # noqa: BLE001 - a job reports any failure, never dies silent
            log.exception("ingesting upload %s failed", job.name)
            job.status, job.message = "failed", f"Ingesting {job.name} failed ({error})."
        finally:
            shutil.rmtree(staged.parent, ignore_errors=True)

    @staticmethod
    def _progress(job: UploadJob) -> Progress:
        def step(stage: str) -> None:
            job.stage = stage
            if stage in STAGES:
                job.progress = STAGES.index(stage) / (len(STAGES) - 1)

        return step
