"""Two `main.py serve` processes on one Milvus server and one MongoDB, each with its own storage
folder (no file shared): right after a PDF is uploaded through the first, both cite the same
sources for the same question; after it is deleted through the second, neither cites it."""

from __future__ import annotations

import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import DEMO_PDF
from serve_helpers import running_server, upload_and_wait

pytestmark = [pytest.mark.server, pytest.mark.slow]
QUESTION = "What does the retrieval stage combine before reranking?"
COLLECTION = f"two_servers_{uuid.uuid4().hex[:8]}"


def sources(base: str) -> list[tuple[str, str, int]]:
    response = httpx.post(
        f"{base}/api/rag/query",
        json={"query": QUESTION, "collection": COLLECTION},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return [(s["id"], s["documentName"], s["pageNumber"]) for s in body["sources"]]


def indexed(server: Path) -> list[str]:
    """The documents whose keyword entries a server's own storage folder holds."""
    folder = server / "storage" / "keywords" / COLLECTION
    return (
        sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
        if folder.is_dir()
        else []
    )


def test_two_servers_give_the_same_sources_after_an_upload_and_a_delete(
    tmp_path: Path, milvus_server_uri: str, mongo_wire_uri: str
) -> None:
    shared = {
        "MILVUS_URI": milvus_server_uri,
        "MONGODB_URI": mongo_wire_uri,
        "MONGODB_DATABASE": f"two_servers_{uuid.uuid4().hex[:8]}",
    }
    for server in ("one", "two"):
        (tmp_path / server).mkdir()
    with ExitStack() as servers:
        first = servers.enter_context(running_server(tmp_path / "one" / "storage", **shared))
        second = servers.enter_context(running_server(tmp_path / "two" / "storage", **shared))
        job = upload_and_wait(first, DEMO_PDF, COLLECTION)
        assert job["status"] == "done", job

        from_first, from_second = sources(first), sources(second)
        assert from_first and from_first == from_second
        assert {name for _, name, _ in from_first} == {DEMO_PDF.name}
        # The second server wrote the document's keyword entries from the shared docstore.
        assert indexed(tmp_path / "two") == indexed(tmp_path / "one") != []

        deleted = httpx.delete(
            f"{second}/api/collections/{COLLECTION}/documents/{DEMO_PDF.name}", timeout=60
        )
        assert deleted.status_code == 200 and deleted.json()["deleted"] == 1, deleted.text
        for base in (first, second):
            response = httpx.post(
                f"{base}/api/rag/query",
                json={"query": QUESTION, "collection": COLLECTION},
                timeout=120,
            )
            cited = response.json().get("sources", []) if response.status_code == 200 else []
            assert not [s for s in cited if s["documentName"] == DEMO_PDF.name], response.text
        assert indexed(tmp_path / "two") == []  # the first drops its copy on its next refresh
