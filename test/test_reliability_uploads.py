"""Upload jobs outlive the server (issue 19.3): each job is kept on disk, and a server started
after a crash resumes or fails the jobs the dead one left, and cleans their staging folders.

The fast tests write the records a killed server leaves; test_reliability_kill.py kills a real
server with SIGKILL during an ingest."""

from __future__ import annotations

import time
from pathlib import Path

from helpers import text_pdf
from serve_fakes import FakeEngine, make_client

from citerag.parse.validate import inspect_pdf
from citerag.serve.upload_jobs import MAX_ATTEMPTS, JobRecords, UploadJob
from citerag.serve.uploads import FileStore, UploadJobs
from citerag.settings import Settings

JOB_ID = "0123456789abcdef0123456789abcdef"


def files_of(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "storage" / "uploads")


def fake_engine(tmp_path: Path) -> FakeEngine:
    return FakeEngine(Settings(storage_dir=tmp_path / "storage"))


def left_by_a_crash(
    files: FileStore, pdf: Path, staged: bool = True, attempts: int = 1
) -> UploadJob:
    """The record and staging folder a server killed during this job's ingest leaves."""
    job = UploadJob(
        id=JOB_ID,
        collection="docs",
        name=pdf.name,
        status="running",
        stage="embed",
        sha256=inspect_pdf(pdf).sha256,
        attempts=attempts,
    )
    if staged:
        files.staging(JOB_ID).mkdir(parents=True)
        files.staged(job).write_bytes(pdf.read_bytes())
    JobRecords(files.root / ".jobs").save(job)
    return job


def settled(jobs: UploadJobs, job_id: str = JOB_ID) -> UploadJob:
    deadline = time.monotonic() + 10
    while not jobs.get(job_id).finished and time.monotonic() < deadline:
        time.sleep(0.02)
    jobs.shutdown()
    return jobs.get(job_id)


def staging_folders(files: FileStore) -> list[str]:
    root = files.root / ".staging"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def test_a_finished_job_is_answered_by_the_next_server(tmp_path: Path) -> None:
    client, _ = make_client(tmp_path)
    with client:
        pdf = text_pdf(tmp_path / "kept.pdf")
        files = {"file": ("kept.pdf", pdf.read_bytes(), "application/pdf")}
        job_id = client.post("/api/collections/demo/documents", files=files).json()["id"]
        deadline = time.monotonic() + 10
        while client.get(f"/api/uploads/{job_id}").json()["status"] != "done":
            assert time.monotonic() < deadline, "the upload did not finish"
            time.sleep(0.02)
    restarted, _ = make_client(tmp_path)
    with restarted:
        job = restarted.get(f"/api/uploads/{job_id}").json()
    assert (job["status"], job["name"]) == ("done", "kept.pdf")
    assert job["outcome"]["status"] == "ingested"
    assert staging_folders(files_of(tmp_path)) == []


def test_an_interrupted_job_is_resumed_from_its_staged_copy(tmp_path: Path) -> None:
    files, engine = files_of(tmp_path), fake_engine(tmp_path)
    left_by_a_crash(files, text_pdf(tmp_path / "report.pdf"))
    job = settled(UploadJobs(engine, files))
    assert job.status == "done", job.message
    assert job.message == "Resumed after the server restarted."
    assert engine.ingested == [("docs", "report.pdf")]
    assert files.path("docs", "report.pdf").is_file()
    assert staging_folders(files) == []
    assert JobRecords(files.root / ".jobs").load()[0].status == "done"


def test_a_job_that_crashed_the_server_twice_is_failed_not_tried_again(tmp_path: Path) -> None:
    files, engine = files_of(tmp_path), fake_engine(tmp_path)
    left_by_a_crash(files, text_pdf(tmp_path / "report.pdf"), attempts=MAX_ATTEMPTS)
    job = settled(UploadJobs(engine, files))
    assert job.status == "failed"
    assert job.message == (
        f"The server stopped {MAX_ATTEMPTS} times while ingesting report.pdf; ingest it with "
        "`python main.py ingest` to see why, or upload it again."
    )
    assert engine.ingested == []
    assert staging_folders(files) == []


def test_a_job_whose_staged_copy_is_gone_is_failed_with_the_reason(tmp_path: Path) -> None:
    files, engine = files_of(tmp_path), fake_engine(tmp_path)
    left_by_a_crash(files, text_pdf(tmp_path / "report.pdf"), staged=False)
    job = settled(UploadJobs(engine, files))
    assert (job.status, job.message) == (
        "failed",
        "The server stopped before report.pdf was ingested and its staged copy is gone; "
        "upload it again.",
    )
    assert engine.ingested == []


def test_a_job_killed_after_its_file_was_kept_finishes_from_the_kept_file(
    tmp_path: Path,
) -> None:
    files, engine = files_of(tmp_path), fake_engine(tmp_path)
    pdf = text_pdf(tmp_path / "report.pdf")
    left_by_a_crash(files, pdf, staged=False)
    files.path("docs", "report.pdf").parent.mkdir(parents=True)
    files.path("docs", "report.pdf").write_bytes(pdf.read_bytes())
    assert settled(UploadJobs(engine, files)).status == "done"


def test_an_older_file_of_the_same_name_is_not_taken_for_the_upload(tmp_path: Path) -> None:
    files, engine = files_of(tmp_path), fake_engine(tmp_path)
    left_by_a_crash(files, text_pdf(tmp_path / "report.pdf"), staged=False)
    older = text_pdf(tmp_path / "older.pdf", subject="Another text altogether.")
    files.path("docs", "report.pdf").parent.mkdir(parents=True)
    files.path("docs", "report.pdf").write_bytes(older.read_bytes())
    assert settled(UploadJobs(engine, files)).status == "failed"


def test_staging_folders_no_unfinished_job_owns_are_removed_at_start(tmp_path: Path) -> None:
    files = files_of(tmp_path)
    orphan = files.staging("ffffffffffffffffffffffffffffffff")
    orphan.mkdir(parents=True)
    (orphan / "left.pdf").write_bytes(b"%PDF-1.7 left by a server killed while staging")
    UploadJobs(fake_engine(tmp_path), files).shutdown()
    assert staging_folders(files) == []


def test_an_unreadable_job_record_is_dropped_not_fatal(tmp_path: Path) -> None:
    files = files_of(tmp_path)
    broken = files.root / ".jobs" / f"{JOB_ID}.json"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"id": "0123', encoding="utf-8")
    client, _ = make_client(tmp_path)
    with client:
        response = client.get(f"/api/uploads/{JOB_ID}")
    assert response.status_code == 404
    assert not broken.exists()
