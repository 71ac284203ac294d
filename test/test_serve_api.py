"""The HTTP layer over a fake engine: statuses, one-sentence JSON errors, nothing stored on a
refusal, the key, CORS and the stream's shape. No models load here (the real engine is in
test_serve_openai.py)."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from serve_fakes import ANSWER, KEY, FakeEngine, make_client, text_pdf

import main
from citerag.errors import BackendUnavailable, InputError
from citerag.parse.validate import inspect_pdf
from citerag.serve.app import create_app
from citerag.settings import Settings
from citerag.store.base import PageRange


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[TestClient, FakeEngine]]:
    client, engine = make_client(tmp_path, max_upload_mb=0.05)
    with client:
        yield client, engine


def assert_one_sentence_error(response: Any, status: int, *words: str) -> str:
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"]
    assert message.endswith(".") and "\n" not in message
    for word in words:
        assert word in message
    return str(message)


def uploaded_files(tmp_path: Path) -> list[Path]:
    """The PDFs kept or staged (the jobs' own records, under `.jobs`, are not uploads)."""
    root = tmp_path / "storage" / "uploads"
    found = root.rglob("*") if root.exists() else iter(())
    return [p for p in found if p.is_file() and ".jobs" not in p.relative_to(root).parts]


def upload(client: TestClient, name: str, data: bytes, collection: str = "demo") -> Any:
    files = {"file": (name, data, "application/pdf")}
    return client.post(f"/api/collections/{collection}/documents", files=files)


def test_query_returns_the_answer_contract(api: tuple[TestClient, FakeEngine]) -> None:
    client, engine = api
    response = client.post(
        "/api/rag/query", json={"query": "How?", "collection": "demo", "topK": 3, "pages": "1-2"}
    )
    assert response.status_code == 200
    body = response.json()
    assert body["answer"] == ANSWER
    assert [s["citationNumber"] for s in body["sources"]] == [1, 2]
    assert set(body["metadata"]) >= {"processingTime", "model", "numChunksRetrieved"}
    assert engine.asked == [("How?", "demo", 3, PageRange(1, 2))]


def test_streamed_pieces_join_to_the_answer_and_sources_come_last(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, _ = api
    body = {"model": "demo", "stream": True, "messages": [{"role": "user", "content": "How?"}]}
    with client.stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == ANSWER
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert [s["id"] for s in chunks[-1]["sources"]] == ["n1", "n2"]
    assert all("sources" not in c for c in chunks[:-1])


def test_usage_is_reported_only_when_an_llm_counted_tokens(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, engine = api
    body = {"model": "demo", "messages": [{"role": "user", "content": "How?"}]}
    assert client.post("/v1/chat/completions", json=body).json()["usage"] is None
    engine.model, engine.tokens = "gpt-4o-mini", 321
    whole = client.post("/v1/chat/completions", json=body).json()
    assert whole["usage"]["total_tokens"] == 321
    assert whole["metadata"]["model"] == "gpt-4o-mini"
    with client.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as response:
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert json.loads(events[-2])["usage"]["total_tokens"] == 321


def test_unsupported_numbers_reach_the_api_whole_and_streamed(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, engine = api
    claim = {"number": "$3.4 billion", "claim": "It was $3.4 billion [1].", "citations": [1]}
    engine.unsupported_numbers = [claim]
    query = client.post("/api/rag/query", json={"query": "How?", "collection": "demo"}).json()
    assert query["metadata"]["unsupportedNumbers"] == [claim]
    body = {"model": "demo", "stream": True, "messages": [{"role": "user", "content": "How?"}]}
    with client.stream("POST", "/v1/chat/completions", json=body) as response:
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert json.loads(events[-2])["metadata"]["unsupportedNumbers"] == [claim]


def test_unknown_collection_is_404_and_never_reaches_the_engine(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, engine = api
    response = client.post("/api/rag/query", json={"query": "q", "collection": "nowhere"})
    assert_one_sentence_error(response, 404, "'nowhere'")
    chat = {"model": "nowhere", "messages": [{"role": "user", "content": "q"}]}
    assert_one_sentence_error(client.post("/v1/chat/completions", json=chat), 404)
    assert engine.asked == []


@pytest.mark.parametrize("collection", ["../etc", "a/b", "", "x" * 65, "demo;drop"])
def test_unsafe_collection_names_are_400(
    api: tuple[TestClient, FakeEngine], tmp_path: Path, collection: str
) -> None:
    client, engine = api
    response = client.post("/api/rag/query", json={"query": "q", "collection": collection})
    assert_one_sentence_error(response, 400, "Collection name")
    assert engine.asked == []


@pytest.mark.parametrize("name", ["../evil.pdf", "..\\evil.pdf", "dir/evil.pdf", ".hidden.pdf"])
def test_upload_names_with_folders_are_400_and_nothing_is_stored(
    api: tuple[TestClient, FakeEngine], tmp_path: Path, name: str
) -> None:
    client, engine = api
    data = text_pdf(tmp_path / "ok.pdf").read_bytes()
    assert_one_sentence_error(upload(client, name, data), 400, "not allowed")
    assert engine.ingested == [] and uploaded_files(tmp_path) == []


def test_dot_dot_in_a_document_path_never_escapes(
    api: tuple[TestClient, FakeEngine], tmp_path: Path
) -> None:
    client, engine = api
    assert client.delete("/api/collections/demo/documents/%2E%2E").status_code == 400
    escaped = client.get("/api/collections/demo/documents/..%2F..%2Fconfig.py/pages/1/image")
    assert escaped.status_code in (400, 404)
    assert escaped.headers["content-type"].startswith("application/json")
    assert engine.docstore.documents == {"demo": ["a.pdf"]}


def test_oversized_upload_is_413_and_nothing_is_stored(
    api: tuple[TestClient, FakeEngine], tmp_path: Path
) -> None:
    client, engine = api
    big = b"%PDF-1.7\n" + b"0" * 200_000
    assert_one_sentence_error(upload(client, "big.pdf", big), 413, "limit")
    slightly = b"%PDF-1.7\n" + b"0" * 53_000  # under the body slack, over the 0.05 MB cap
    assert_one_sentence_error(upload(client, "big.pdf", slightly), 413, "big.pdf")
    assert engine.ingested == [] and uploaded_files(tmp_path) == []


def test_a_chunked_oversized_body_is_413(api: tuple[TestClient, FakeEngine]) -> None:
    client, engine = api

    def body() -> Iterator[bytes]:
        for _ in range(40):
            yield b"x" * 10_000

    response = client.post(
        "/api/collections/demo/documents",
        content=body(),
        headers={"content-type": "multipart/form-data; boundary=zzz"},
    )
    assert_one_sentence_error(response, 413)
    assert engine.ingested == []


@pytest.mark.parametrize(
    ("name", "data"),
    [("notes.txt", b"plain text"), ("fake.pdf", b"<html>not a pdf</html>"), ("x.txt", b"%PDF-1")],
)
def test_non_pdf_is_415_and_nothing_is_stored(
    api: tuple[TestClient, FakeEngine], tmp_path: Path, name: str, data: bytes
) -> None:
    client, engine = api
    assert_one_sentence_error(upload(client, name, data), 415, "not a PDF")
    assert engine.ingested == [] and uploaded_files(tmp_path) == []


def test_corrupt_pdf_is_422_with_the_validators_sentence(
    api: tuple[TestClient, FakeEngine], tmp_path: Path
) -> None:
    client, engine = api
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\n garbage")
    with pytest.raises(InputError) as cli_error:
        inspect_pdf(broken)
    message = assert_one_sentence_error(upload(client, "broken.pdf", broken.read_bytes()), 422)
    assert message == str(cli_error.value)
    assert engine.ingested == [] and uploaded_files(tmp_path) == []


def test_upload_is_ingested_in_the_background_and_then_listed(
    api: tuple[TestClient, FakeEngine], tmp_path: Path
) -> None:
    client, engine = api
    data = text_pdf(tmp_path / "new.pdf").read_bytes()
    response = upload(client, "new.pdf", data, collection="fresh")
    assert response.status_code == 202
    status_url = response.json()["statusUrl"]
    assert response.headers["location"] == status_url
    job = wait_for_job(client, status_url)
    assert job["status"] == "done" and job["outcome"]["pages"] == 1
    assert engine.ingested == [("fresh", "new.pdf")]
    assert (tmp_path / "storage" / "uploads" / "fresh" / "new.pdf").read_bytes() == data
    listed = client.get("/api/documents", params={"collection": "fresh"}).json()
    assert [(d["collection"], d["name"]) for d in listed] == [("fresh", "new.pdf")]
    assert client.delete("/api/collections/fresh/documents/new.pdf").json()["deleted"] == 1
    assert uploaded_files(tmp_path) == []
    assert_one_sentence_error(client.delete("/api/collections/fresh/documents/new.pdf"), 404)


def wait_for_job(client: TestClient, url: str, seconds: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job: dict[str, Any] = client.get(url).json()
        if job["status"] in {"done", "failed"}:
            return job
        time.sleep(0.02)
    raise AssertionError(f"upload job {url} did not finish in {seconds} s")


def test_unknown_upload_job_is_404(api: tuple[TestClient, FakeEngine]) -> None:
    assert_one_sentence_error(api[0].get("/api/uploads/nope"), 404, "'nope'")


def test_listing_an_unknown_collection_is_404(api: tuple[TestClient, FakeEngine]) -> None:
    assert_one_sentence_error(api[0].get("/api/documents?collection=ghost"), 404)


def test_invalid_bodies_are_422_sentences_naming_the_field(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, _ = api
    missing = client.post("/api/rag/query", json={"collection": "demo"})
    assert_one_sentence_error(missing, 422, "'query'")
    no_user = client.post(
        "/v1/chat/completions",
        json={"model": "demo", "messages": [{"role": "system", "content": "be brief"}]},
    )
    assert_one_sentence_error(no_user, 422, "user message")
    unknown = client.post("/api/rag/query", json={"query": "q", "mode": "fastest"})
    assert_one_sentence_error(unknown, 422, "'mode'")
    extra = client.post("/api/rag/query", json={"query": "q", "rerank": True})
    assert_one_sentence_error(extra, 422, "'rerank'")
    bad_pages = client.post("/api/rag/query", json={"query": "q", "pages": "7-3"})
    assert_one_sentence_error(bad_pages, 400, "page range")


def test_engine_failures_map_to_statuses(api: tuple[TestClient, FakeEngine]) -> None:
    client, engine = api
    engine.failure = BackendUnavailable("Milvus at http://x cannot be reached; start it.")
    response = client.post("/api/rag/query", json={"query": "q", "collection": "demo"})
    assert_one_sentence_error(response, 503, "Milvus")
    engine.failure = InputError("Pages 30-40 are past the end of every document; ask within.")
    response = client.post("/api/rag/query", json={"query": "q", "collection": "demo"})
    assert_one_sentence_error(response, 400, "Pages 30-40")


def test_a_configured_key_is_required_on_the_api_only(tmp_path: Path) -> None:
    client, engine = make_client(tmp_path, api_key=KEY)
    body = {"query": "q", "collection": "demo"}
    with client:
        assert_one_sentence_error(client.post("/api/rag/query", json=body), 401, "API key")
        wrong = client.post("/api/rag/query", json=body, headers={"Authorization": "Bearer no"})
        assert_one_sentence_error(wrong, 401, "wrong")
        data = text_pdf(tmp_path / "ok.pdf").read_bytes()
        assert_one_sentence_error(upload(client, "ok.pdf", data), 401)
        assert engine.asked == [] and engine.ingested == [] and uploaded_files(tmp_path) == []
        bearer = {"Authorization": f"Bearer {KEY}"}
        assert client.post("/api/rag/query", json=body, headers=bearer).status_code == 200
        header = {"X-API-Key": KEY}
        assert client.get("/api/documents", headers=header).status_code == 200
        assert client.get("/").status_code == 200  # the viewer page asks for the key itself
        assert client.get("/healthz").status_code == 200


def test_cors_allows_only_configured_origins(tmp_path: Path) -> None:
    client, _ = make_client(tmp_path, cors_origins="http://app.example")
    preflight = {"Access-Control-Request-Method": "POST"}
    with client:
        allowed = client.options(
            "/api/rag/query", headers={"Origin": "http://app.example", **preflight}
        )
        assert allowed.headers.get("access-control-allow-origin") == "http://app.example"
        other = client.options("/api/rag/query", headers={"Origin": "http://evil", **preflight})
        assert "access-control-allow-origin" not in other.headers


def test_openapi_documents_every_endpoint(api: tuple[TestClient, FakeEngine]) -> None:
    client, _ = api
    paths = client.get("/openapi.json").json()["paths"]
    assert {
        "/api/rag/query",
        "/v1/chat/completions",
        "/v1/models",
        "/api/collections/{collection}/documents",
        "/api/uploads/{job_id}",
        "/api/documents",
        "/api/documents/{name}/tree",
        "/api/collections/{collection}/documents/{name}",
        "/api/collections/{collection}/documents/{name}/pages/{page}/image",
        "/api/collections/{collection}/documents/{name}/pages/{page}/boxes",
    } <= set(paths)


def test_the_docs_page_loads_its_scripts_from_this_server(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, _ = api
    page = client.get("/docs").text
    assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets)
    for asset in assets:
        assert asset.startswith("/"), f"/docs fetches {asset} from elsewhere"
        assert client.get(asset).status_code == 200


def test_unknown_endpoint_is_a_json_404(api: tuple[TestClient, FakeEngine]) -> None:
    assert_one_sentence_error(api[0].get("/api/nothing"), 404, "/docs")


def test_serve_on_a_busy_port_is_one_sentence_before_the_engine_opens(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main.main(["serve", "--port", str(port)]) != 0
    err = capsys.readouterr().err
    assert err.startswith(f"error: Cannot listen on 127.0.0.1:{port}") and err.count("\n") == 1


def test_a_malformed_json_body_is_named_as_such_not_as_a_field(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, _ = api
    broken = client.post(
        "/api/rag/query",
        content=b'{"query": "q", "collection": "demo",',
        headers={"Content-Type": "application/json"},
    )
    message = assert_one_sentence_error(broken, 422, "not valid JSON")
    assert "'" not in message.split("JSON")[0]  # no byte offset quoted as a field name


def test_an_upload_name_with_a_quote_is_stored_as_written(
    api: tuple[TestClient, FakeEngine], tmp_path: Path
) -> None:
    client, _ = api
    data = text_pdf(tmp_path / "ok.pdf").read_bytes()
    response = upload(client, 'the "final" report.pdf', data)
    assert response.status_code == 202, response.text
    job = wait_for_job(client, response.json()["statusUrl"])
    assert job["name"] == 'the "final" report.pdf'
    assert [p.name for p in uploaded_files(tmp_path)] == ['the "final" report.pdf']


def test_a_question_without_a_collection_asks_the_served_articles_collection(
    tmp_path: Path,
) -> None:
    """`serve --article NAME` answers in that article's collection unless a request names one."""
    engine = FakeEngine(Settings(storage_dir=tmp_path / "storage"))
    engine.docstore.documents["netflix_10k"] = ["n.pdf"]
    with TestClient(create_app(engine, default_collection="netflix_10k")) as client:
        assert client.post("/api/rag/query", json={"query": "How?"}).status_code == 200
        named = {"query": "How?", "collection": "demo"}
        assert client.post("/api/rag/query", json=named).status_code == 200
    assert [collection for _, collection, _, _ in engine.asked] == ["netflix_10k", "demo"]


def test_a_query_keeps_the_documents_whose_cards_match(api: tuple[TestClient, FakeEngine]) -> None:
    client, engine = api
    body = {"query": "Revenue?", "collection": "demo", "where": {"company": "3M", "year": "2018"}}
    assert client.post("/api/rag/query", json=body).status_code == 200
    assert engine.wheres[-1] == {"company": "3M", "year": "2018"}
    refused = client.post("/api/rag/query", json={**body, "where": {"colour": "red"}})
    assert_one_sentence_error(refused, 422, "Cannot filter documents on 'colour'")
    assert len(engine.asked) == 1  # the refused question reached no engine
