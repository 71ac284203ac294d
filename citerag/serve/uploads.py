"""Uploads: checked before anything is kept, ingested in the background, one at a time.

An upload is refused (413 over the size cap, 415 when it is not a PDF, 422 when PyMuPDF cannot
use it, with the CLI's sentence) before it is staged for the engine. A staged file goes into
`uploads/<collection>/<name>` (where the viewer renders its pages) only once its ingest
succeeded; a failed ingest leaves neither the file nor anything in the engine. Jobs are kept on
disk (`upload_jobs`): after a crash the next server resumes or fails them, and cleans staging.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import uuid
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from citerag.errors import InputError, RagError
from citerag.ingest.pipeline import STAGES as INGEST_STAGES
from citerag.ingest.pipeline import Progress
from citerag.ingest.shelf import Ingests, ingest_one
from citerag.ingest.sync import file_sha256
from citerag.parse.validate import inspect_pdf
from citerag.serve.api_errors import ApiError
from citerag.serve.upload_jobs import JobRecords, UploadJob, interrupted_reason, sweep_staging

log = logging.getLogger(__name__)
PDF_MAGIC = b"%PDF-"
MAGIC_WINDOW = 1024  # readers accept a PDF header anywhere in its first kilobyte
STAGES = ("queued", *INGEST_STAGES, "done")
KEPT_JOBS = 200


class FileStore:
    """The uploaded PDFs, one folder per collection, beside the engine's storage."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, collection: str, name: str) -> Path:
        return self.root / collection / name

    def staging(self, job_id: str) -> Path:
        return self.root / ".staging" / job_id

    def staged(self, job: UploadJob) -> Path:
        return self.staging(job.id) / job.name

    def holds(self, job: UploadJob) -> bool:
        """Whether the kept file is this job's bytes (its ingest finished before a crash)."""
        kept = self.path(job.collection, job.name)
        return bool(job.sha256) and kept.is_file() and file_sha256(kept) == job.sha256

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
    """Stages checked uploads and ingests them on one background thread; every change of a
    job is written to its record, and the unfinished jobs of a crashed server are taken up."""

    def __init__(self, engine: Ingests, files: FileStore) -> None:
        self._engine = engine
        self._files = files
        self._records = JobRecords(files.root / ".jobs")
        self._jobs: OrderedDict[str, UploadJob] = OrderedDict()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest")
        self._take_up_records()

    def submit(self, data: bytes, name: str, collection: str) -> UploadJob:
        job = UploadJob(id=uuid.uuid4().hex, collection=collection, name=name)
        staged = self._stage(job, data)
        self._remember(job)
        self._pool.submit(self._run, job, staged, True)
        return job

    def get(self, job_id: str) -> UploadJob:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise ApiError(404, f"There is no upload job {job_id!r}; it may have expired.")
        return job

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _take_up_records(self) -> None:
        """Load the kept jobs; resume or fail the unfinished ones; clean staging."""
        resumed: set[str] = set()
        for job in self._records.load():
            self._remember(job, save=False)
            if job.finished:
                continue
            staged = self._files.staged(job)
            source = staged if staged.is_file() else None
            keep = source is not None
            if source is None and self._files.holds(job):
                source = self._files.path(job.collection, job.name)
            reason = interrupted_reason(job, source)
            if reason or source is None:
                self._finish(job, "failed", reason)
                continue
            log.warning("resuming the upload of %s (the server stopped during it)", job.name)
            job.status, job.message = "queued", "Resumed after the server restarted."
            self._save(job)
            resumed.add(job.id)
            self._pool.submit(self._run, job, source, keep)
        sweep_staging(self._files.root / ".staging", resumed)

    def _remember(self, job: UploadJob, save: bool = True) -> None:
        with self._lock:
            self._jobs[job.id] = job
            while len(self._jobs) > KEPT_JOBS:
                expired, _ = self._jobs.popitem(last=False)
                self._records.remove(expired)
        if save:
            self._save(job)

    def _save(self, job: UploadJob) -> None:
        with self._lock:
            try:
                self._records.save(job)
            except OSError as error:  # the job goes on; only a crash would lose it
                log.warning("could not write the record of upload job %s (%s)", job.id, error)

    def _stage(self, job: UploadJob, data: bytes) -> Path:
        """The bytes written under the upload's own name and opened as the CLI would (422)."""
        folder = self._files.staging(job.id)
        folder.mkdir(parents=True)
        staged = folder / job.name
        staged.write_bytes(data)
        try:
            job.sha256 = inspect_pdf(staged).sha256
        except InputError as error:
            shutil.rmtree(folder, ignore_errors=True)
            raise ApiError(422, str(error)) from None
        return staged

    def _run(self, job: UploadJob, source: Path, keep: bool) -> None:
        """Ingest `source`; `keep`: it is the staged copy, moved into place once ingested."""
        job.status, job.attempts = "running", job.attempts + 1
        self._save(job)
        try:
            result = ingest_one(self._engine, source, job.collection, self._progress(job))
            if result.failed:
                self._finish(job, "failed", result.message)
                return
            if keep:
                self._files.keep(source, job.collection, job.name)
            job.outcome = result.to_dict()
            job.stage, job.progress = "done", 1.0
            self._finish(job, "done")
        except RagError as error:
            self._finish(job, "failed", str(error))
        except Exception as error:  # noqa: BLE001 - a job reports any failure, never dies silent
            log.exception("ingesting upload %s failed", job.name)
            self._finish(job, "failed", f"Ingesting {job.name} failed ({error}).")

    def _finish(self, job: UploadJob, status: str, message: str = "") -> None:
        """The final state, written before its staging folder goes."""
        job.status = status
        job.message = message or job.message
        self._save(job)
        shutil.rmtree(self._files.staging(job.id), ignore_errors=True)

    def _progress(self, job: UploadJob) -> Progress:
        def step(stage: str) -> None:
            job.stage = stage
            if stage in STAGES:
                job.progress = STAGES.index(stage) / (len(STAGES) - 1)
            self._save(job)

        return step
