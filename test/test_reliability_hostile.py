"""Hostile PDFs, made by the test, through the upload API: each is refused in one sentence (the
CLI's own) with nothing kept, or ingested within bounds (a 1 MB 'sentence': bounded chunks and
a bounded answer; a page near the area limit: renders refused past the pixel budget)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from fastapi.testclient import TestClient
from helpers import (
    blank_pdf,
    corrupt_pdf,
    encrypted_pdf,
    huge_page_pdf,
    long_sentence_pdf,
    scanned_pdf,
    text_pdf,
)
from serve_fakes import FakeEngine, make_client

from citerag.answer.contract import MAX_SOURCE_CHARS, Source, windowed
from citerag.engine import Engine
from citerag.errors import InputError
from citerag.parse.validate import inspect_pdf
from citerag.serve import create_app
from citerag.settings import Settings
from citerag.types import Highlight

Builder = Callable[[Path], Path]


def empty_file(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def html_named_pdf(path: Path) -> Path:
    path.write_bytes(b"<!doctype html><p>a web page saved as .pdf</p>")
    return path


def truncated_pdf(path: Path) -> Path:
    whole = text_pdf(path.with_name("whole.pdf"), pages=3).read_bytes()
    path.write_bytes(whole[: len(whole) // 3])
    return path


REFUSED: list[tuple[str, Builder, int, str]] = [
    ("empty", empty_file, 415, "not a PDF"),
    ("html", html_named_pdf, 415, "not a PDF"),
    ("corrupt", corrupt_pdf, 422, "not a readable PDF"),
    ("encrypted", encrypted_pdf, 422, "encrypted"),
    ("scanned", scanned_pdf, 422, "no text layer"),
    ("blank", blank_pdf, 422, "no text layer"),
    ("oversize page", huge_page_pdf, 422, "larger than this engine reads"),
]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[TestClient, FakeEngine]]:
    client, engine = make_client(tmp_path, max_upload_mb=2)
    with client:
        yield client, engine


def kept_files(storage: Path) -> list[Path]:
    """The PDFs the server kept or staged (job records aside)."""
    root = storage / "uploads"
    found = root.rglob("*") if root.exists() else iter(())
    return [p for p in found if p.is_file() and ".jobs" not in p.parts]


def post_pdf(client: TestClient, pdf: Path, collection: str = "hostile") -> Any:
    files = {"file": (pdf.name, pdf.read_bytes(), "application/pdf")}
    return client.post(f"/api/collections/{collection}/documents", files=files)


@pytest.mark.parametrize(("kind", "build", "status", "words"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_hostile_pdf_is_refused_in_one_sentence_and_nothing_is_kept(
    api: tuple[TestClient, FakeEngine],
    tmp_path: Path,
    kind: str,
    build: Builder,
    status: int,
    words: str,
) -> None:
    client, engine = api
    pdf = build(tmp_path / "hostile.pdf")
    response = post_pdf(client, pdf)
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"]
    assert words in message and message.endswith(".") and "\n" not in message
    if status == 422:  # the sentence the CLI prints for the same file
        with pytest.raises(InputError) as cli_error:
            inspect_pdf(pdf)
        assert message == str(cli_error.value).replace(str(pdf), pdf.name)
    assert engine.ingested == [] and kept_files(tmp_path / "storage") == []
    assert client.get("/v1/models").json()["data"] == [
        {
            "id": "demo",
            "object": "model",
            "created": pytest.approx(time.time(), abs=60),
            "owned_by": "citerag",
        }
    ]


def test_a_truncated_pdf_is_refused_or_read_never_a_500(
    api: tuple[TestClient, FakeEngine], tmp_path: Path
) -> None:
    client, engine = api
    response = post_pdf(client, truncated_pdf(tmp_path / "cut.pdf"))
    assert response.status_code in {202, 422}, response.text
    if response.status_code == 422:
        assert engine.ingested == [] and kept_files(tmp_path / "storage") == []


def test_a_long_source_is_cut_to_a_window_around_its_highlights() -> None:
    content = " ".join(f"w{i}" for i in range(60_000))
    at = content.index("w40000 ")
    marked = Highlight("w40000", at, at + 6)
    far = Highlight("w10", content.index("w10 "), content.index("w10 ") + 3)
    source = Source("n", "a.pdf", 1, "T" * 1000, content, 1.0, 1, [marked, far])
    data = source.to_dict()
    assert len(data["content"]) <= MAX_SOURCE_CHARS and len(data["title"]) <= 300
    assert [h["text"] for h in data["highlights"]] == ["w40000"]
    for h in data["highlights"]:
        assert data["content"][h["startOffset"] : h["endOffset"]] == h["text"]
    assert data["content"].split(" ")[0].startswith("w") and data["content"][0] != " "
    short, kept = windowed("short text", [Highlight("text", 6, 10)], MAX_SOURCE_CHARS)
    assert (short, kept) == ("short text", [Highlight("text", 6, 10)])


@pytest.fixture(scope="module")
def real_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Path]]:
    """The API over a real engine (Milvus Lite, SQLite, MiniLM) on a fresh storage folder."""
    storage = tmp_path_factory.mktemp("hostile") / "storage"
    engine = Engine(Settings(storage_dir=storage, reranker="none", max_upload_mb=8))
    try:
        with TestClient(create_app(engine)) as client:
            yield client, storage
    finally:
        engine.close()


def settle(client: TestClient, job: dict[str, Any]) -> dict[str, Any]:
    deadline = time.monotonic() + 600
    while job["status"] not in {"done", "failed"}:
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
        job = client.get(f"/api/uploads/{job['id']}").json()
    return job


@pytest.mark.slow
def test_a_one_megabyte_sentence_is_ingested_in_bounded_chunks_and_answers_stay_small(
    real_api: tuple[TestClient, Path], tmp_path: Path
) -> None:
    client, _ = real_api
    pdf = long_sentence_pdf(tmp_path / "runaway.pdf")
    accepted = post_pdf(client, pdf, "runaway")
    assert accepted.status_code == 202, accepted.text
    job = settle(client, accepted.json())
    assert job["status"] == "done", job
    assert job["outcome"]["chunks"] > 100  # ~1 MB in chunks of at most 1024 tokens
    for mode in ("single", "subquestions", "tree"):
        body = {"query": "word12345 word12346", "collection": "runaway", "mode": mode}
        answered = client.post("/api/rag/query", json=body)
        assert answered.status_code == 200, answered.text
        result = answered.json()
        assert result["sources"], mode
        assert all(len(s["content"]) <= MAX_SOURCE_CHARS for s in result["sources"]), mode
        assert len(json.dumps(result)) < 25 * MAX_SOURCE_CHARS, mode


@pytest.mark.slow
def test_a_page_near_the_area_limit_is_kept_but_renders_only_within_the_pixel_budget(
    real_api: tuple[TestClient, Path], tmp_path: Path
) -> None:
    client, _ = real_api
    pdf = tmp_path / "poster.pdf"
    with pymupdf.open() as doc:
        page = doc.new_page(width=3_000, height=3_000)
        page.insert_text((72, 72), "A poster page states the quarterly revenue figures.")
        doc.save(pdf)
    job = settle(client, post_pdf(client, pdf, "posters").json())
    assert job["status"] == "done", job
    image = "/api/collections/posters/documents/poster.pdf/pages/1/image"
    refused = client.get(image, params={"zoom": 4})
    assert refused.status_code == 422
    assert "zoom" in refused.json()["error"]["message"]
    fits = client.get(image, params={"zoom": 0.5})
    assert fits.status_code == 200 and fits.content.startswith(b"\x89PNG")
