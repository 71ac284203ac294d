"""A real `python main.py serve` on 127.0.0.1 for the end-to-end API and viewer tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from helpers import PROJECT_DIR

START_SECONDS = 180
INGEST_SECONDS = 300
CLEARED = ("MILVUS_URI", "MONGODB_URI", "LLM_PROVIDER", "RAG_RERANKER", "RAG_API_KEY")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class ServerProcess:
    """A `main.py serve` process and its base URL."""

    process: subprocess.Popen[bytes]
    base: str
    log: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would: no shutdown code runs."""
        self.process.kill()
        self.process.wait()


def start_server(storage: Path, **env: str) -> ServerProcess:
    """`python main.py serve` on a free loopback port over `storage`, once it answers."""
    port = free_port()
    environ = {k: v for k, v in os.environ.items() if k not in CLEARED}
    environ.update(RAG_STORAGE_DIR=str(storage), HF_HUB_OFFLINE="1", **env)
    log = storage.parent / f"server-{port}.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "main.py", "serve", "--port", str(port)],
            cwd=PROJECT_DIR,
            env=environ,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = ServerProcess(process, f"http://127.0.0.1:{port}", log)
    try:
        _wait_until_up(server.base, process, log)
    except BaseException:
        server.stop()
        raise
    return server


@contextmanager
def running_server(storage: Path, **env: str) -> Iterator[str]:
    """The server's base URL while it runs on `storage`; stopped after."""
    server = start_server(storage, **env)
    try:
        yield server.base
    finally:
        server.stop()


def _wait_until_up(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited: {log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    tail = log.read_text()[-3000:]
    raise AssertionError(f"the server did not start in {START_SECONDS} s: {tail}")


def upload(
    base: str, pdf: Path, collection: str, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """Upload a PDF; the accepted job (202)."""
    with pdf.open("rb") as handle:
        response = httpx.post(
            f"{base}/api/collections/{collection}/documents",
            files={"file": (pdf.name, handle, "application/pdf")},
            headers=headers,
            timeout=60,
        )
    assert response.status_code == 202, response.text
    job: dict[str, Any] = response.json()
    return job


def wait_for_job(base: str, job_id: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """The job once it is done or failed."""
    deadline = time.monotonic() + INGEST_SECONDS
    while time.monotonic() < deadline:
        job: dict[str, Any] = httpx.get(
            f"{base}/api/uploads/{job_id}", headers=headers, timeout=10
        ).json()
        if job["status"] in {"done", "failed"}:
            return job
        time.sleep(0.5)
    raise AssertionError(f"upload job {job_id} took over {INGEST_SECONDS} s")


def upload_and_wait(
    base: str, pdf: Path, collection: str, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """Upload a PDF and wait for its background ingest; the finished job."""
    return wait_for_job(base, upload(base, pdf, collection, headers)["id"], headers)
