"""A real server killed with SIGKILL during an upload's background ingest (issue 19.3): the next
server on the same storage answers for the job, finishes it and cleans its staging folder; the
collection is listed by /v1/models only once it holds a document."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import long_pdf, text_pdf
from serve_helpers import start_server, upload, wait_for_job

pytestmark = pytest.mark.slow
MID_INGEST = {"chunk", "enrich", "tree", "embed", "store"}


def wait_for_stage(base: str, job_id: str, stages: set[str]) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        job: dict[str, Any] = httpx.get(f"{base}/api/uploads/{job_id}", timeout=10).json()
        if job["status"] == "running" and job["stage"] in stages:
            return job
        assert job["status"] in {"queued", "running"}, job
        time.sleep(0.05)
    raise AssertionError(f"upload job {job_id} never reached {sorted(stages)}")


def models(base: str) -> list[str]:
    return [m["id"] for m in httpx.get(f"{base}/v1/models", timeout=30).json()["data"]]


def test_an_upload_killed_mid_ingest_is_finished_by_the_next_server(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    server = start_server(storage)
    try:
        big = upload(server.base, long_pdf(tmp_path / "annual.pdf"), "killed")
        queued = upload(server.base, text_pdf(tmp_path / "memo.pdf", subject="Memo"), "waiting")
        wait_for_stage(server.base, big["id"], MID_INGEST)
        assert models(server.base) == []  # nothing is ready yet
    finally:
        server.kill()
    staging = storage / "uploads" / ".staging"
    assert sorted(p.name for p in staging.iterdir()) == sorted([big["id"], queued["id"]])

    restarted = start_server(storage)
    try:
        finished = wait_for_job(restarted.base, big["id"])
        second = wait_for_job(restarted.base, queued["id"])
        assert (finished["status"], finished["name"]) == ("done", "annual.pdf"), finished
        assert finished["message"] == "Resumed after the server restarted."
        assert finished["outcome"]["pages"] == 40 and finished["outcome"]["chunks"] > 0
        assert second["status"] == "done", second
        assert list(staging.iterdir()) == []
        assert models(restarted.base) == ["killed", "waiting"]
        listed = httpx.get(f"{restarted.base}/api/documents", timeout=60).json()
        assert sorted((d["collection"], d["name"]) for d in listed) == [
            ("killed", "annual.pdf"),
            ("waiting", "memo.pdf"),
        ]
        assert all(d["chunksInMilvus"] == d["chunksInDocstore"] > 0 for d in listed), listed
        asked = httpx.post(
            f"{restarted.base}/api/rag/query",
            json={"query": "What is the revenue of unit 7?", "collection": "killed"},
            timeout=120,
        )
        assert asked.status_code == 200, asked.text
        assert {s["documentName"] for s in asked.json()["sources"]} == {"annual.pdf"}
    finally:
        restarted.stop()


def test_an_upload_that_crashed_the_server_twice_is_failed_and_its_collection_not_listed(
    tmp_path: Path,
) -> None:
    storage = tmp_path / "storage"
    job_id = ""
    for _crash in range(2):
        server = start_server(storage)
        try:
            if not job_id:
                job_id = upload(server.base, long_pdf(tmp_path / "poison.pdf"), "poison")["id"]
            wait_for_stage(server.base, job_id, MID_INGEST)
        finally:
            server.kill()
    restarted = start_server(storage)
    try:
        job = httpx.get(f"{restarted.base}/api/uploads/{job_id}", timeout=10).json()
        assert job["status"] == "failed"
        assert job["message"].startswith("The server stopped 2 times while ingesting poison.pdf")
        assert not (storage / "uploads" / ".staging" / job_id).exists()
        assert "poison" not in models(restarted.base)
        asked = httpx.post(
            f"{restarted.base}/api/rag/query", json={"query": "revenue", "collection": "poison"}
        )
        assert asked.status_code == 404, asked.text
        assert "'poison' does not exist or has no documents" in asked.json()["error"]["message"]
    finally:
        restarted.stop()
