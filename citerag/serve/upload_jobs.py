"""Upload jobs kept on disk, so a job outlives the process that accepted it.

Each job is one JSON file, `uploads/.jobs/<id>.json`, replaced atomically at every change of
status or stage. When the server starts again after a crash, a job it left `queued` or
`running` is resumed from its staged PDF (a re-run of an ingest cut short replaces what it had
written), or marked `failed` with the reason when its staged copy is gone or it was already
interrupted `MAX_ATTEMPTS` times. Staging folders no unfinished job owns are removed.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from citerag.store.atomic_dirs import write_json_atomically
from citerag.types import JSONObject

log = logging.getLogger(__name__)
MAX_ATTEMPTS = 2  # a PDF whose ingest took the server down twice is not tried a third time
UNFINISHED = ("queued", "running")
_JOB_FILE = re.compile(r"^[0-9a-f]{32}\.json$")


@dataclass
class UploadJob:
    id: str
    collection: str
    name: str
    status: str = "queued"  # queued, running, done, failed
    stage: str = "queued"
    progress: float = 0.0
    message: str = ""
    outcome: JSONObject | None = None
    created: float = field(default_factory=time.time)
    sha256: str = ""  # of the uploaded bytes: tells a kept copy of them from an older file
    attempts: int = 0  # ingests started; one more than finished means a crash cut it short

    @property
    def finished(self) -> bool:
        return self.status not in UNFINISHED

    def to_dict(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UploadJob:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


class JobRecords:
    """The jobs' files under `folder`: written whole, read back at start."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def save(self, job: UploadJob) -> None:
        write_json_atomically(self.folder / f"{job.id}.json", job.to_dict())

    def remove(self, job_id: str) -> None:
        (self.folder / f"{job_id}.json").unlink(missing_ok=True)

    def load(self) -> list[UploadJob]:
        """Every readable record, oldest first; an unreadable one is logged and removed."""
        jobs = []
        paths = self.folder.iterdir() if self.folder.is_dir() else iter(())
        for path in paths:
            if not _JOB_FILE.match(path.name):
                continue
            try:
                jobs.append(UploadJob.from_dict(json.loads(path.read_text(encoding="utf-8"))))
            except (OSError, ValueError, TypeError) as error:
                log.warning("upload job record %s is unreadable (%s); removing it", path, error)
                path.unlink(missing_ok=True)
        return sorted(jobs, key=lambda job: job.created)


def interrupted_reason(job: UploadJob, source: Path | None) -> str:
    """Why an unfinished job found at start cannot be resumed from `source`; "" when it can."""
    if job.attempts >= MAX_ATTEMPTS:
        return (
            f"The server stopped {job.attempts} times while ingesting {job.name}; ingest it with "
            "`python main.py ingest` to see why, or upload it again."
        )
    if source is None:
        return (
            f"The server stopped before {job.name} was ingested and its staged copy is gone; "
            "upload it again."
        )
    return ""


def sweep_staging(staging_root: Path, kept_ids: set[str]) -> None:
    """Remove the staging folders of jobs that are finished, failed or unknown."""
    if not staging_root.is_dir():
        return
    for folder in staging_root.iterdir():
        if folder.name not in kept_ids:
            shutil.rmtree(folder, ignore_errors=True)
