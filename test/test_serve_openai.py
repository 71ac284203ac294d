"""The real server (`python main.py serve`, the embedded stack) answered by the official
`openai` client and plain HTTP: streamed and whole answers agree, sources arrive with the
stream, and bad requests change nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pymupdf
import pytest
from helpers import DEMO_PDF
from serve_helpers import running_server, upload_and_wait

import main

pytestmark = pytest.mark.slow
QUESTION = "What does the retrieval stage combine before reranking?"
CITATION = re.compile(r"\[(\d+)\]")


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("serve") / "storage"


@pytest.fixture(scope="module")
def base(storage: Path) -> Iterator[str]:
    with running_server(storage, RAG_MAX_UPLOAD_MB="1") as url:
        job = upload_and_wait(url, DEMO_PDF, "demo")
        assert job["status"] == "done", job
        yield url


@pytest.fixture(scope="module")
def client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key="not-needed", max_retries=0)


def ask(client: openai.OpenAI, question: str = QUESTION, **options: Any) -> Any:
    return client.chat.completions.create(
        model="demo", messages=[{"role": "user", "content": question}], **options
    )


def test_streamed_text_joined_equals_the_whole_answer_and_sources_arrive(
    client: openai.OpenAI,
) -> None:
    whole = ask(client)
    answer = whole.choices[0].message.content
    assert answer and CITATION.search(answer)
    chunks = list(ask(client, stream=True))
    joined = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert joined == answer
    assert len(chunks) > 3  # the answer came in pieces, not as one chunk
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    streamed_sources = last.model_extra["sources"]
    assert [s["id"] for s in streamed_sources] == [s["id"] for s in whole.model_extra["sources"]]
    numbers = {s["citationNumber"] for s in streamed_sources}
    assert {int(n) for n in CITATION.findall(joined)} <= numbers
    for source in streamed_sources:
        for h in source["highlights"]:
            assert source["content"][h["startOffset"] : h["endOffset"]] == h["text"]


def test_the_answer_names_what_retrieval_combines(client: openai.OpenAI) -> None:
    answer = ask(client).choices[0].message.content.lower()
    assert "bm25" in answer or "dense" in answer or "keyword" in answer, answer


def test_models_are_the_collections(client: openai.OpenAI) -> None:
    assert "demo" in [model.id for model in client.models.list()]


def test_an_unknown_collection_is_a_404_the_client_raises(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError, match="Collection 'ghost' does not exist"):
        client.chat.completions.create(
            model="ghost", messages=[{"role": "user", "content": QUESTION}]
        )


def test_query_endpoint_returns_the_contract_within_a_page_range(base: str) -> None:
    body = {"query": QUESTION, "collection": "demo", "topK": 2, "pages": "2-3"}
    result = httpx.post(f"{base}/api/rag/query", json=body, timeout=60).json()
    assert set(result) == {"answer", "sources", "metadata"}
    assert 1 <= len(result["sources"]) <= 2
    assert all(2 <= s["pageNumber"] <= 3 for s in result["sources"])
    assert result["metadata"]["model"].startswith("extractive")


def test_modes_answer_as_the_cli_does_and_the_tree_is_served(base: str) -> None:
    url = f"{base}/api/rag/query"
    planned = httpx.post(url, json={"query": QUESTION, "collection": "demo"}, timeout=60).json()
    assert planned["metadata"]["subQuestions"], planned["metadata"]
    cited = {s["citationNumber"] for s in planned["sources"]}
    assert all(set(q["citations"]) <= cited for q in planned["metadata"]["subQuestions"])
    body = {"query": QUESTION, "collection": "demo", "mode": "single"}
    single = httpx.post(url, json=body, timeout=60).json()
    assert single["sources"] and single["metadata"]["subQuestions"] == []
    body = {"query": QUESTION, "collection": "demo", "mode": "tree", "topKFiles": 1}
    tree = httpx.post(url, json=body, timeout=60).json()
    assert tree["metadata"]["retrievalMethod"] == "tree" and tree["sources"], tree
    assert {s["documentName"] for s in tree["sources"]} == {DEMO_PDF.name}
    exported = httpx.get(f"{base}/api/documents/{DEMO_PDF.name}/tree?collection=demo").json()
    assert exported["doc_name"] and exported["structure"][0]["node_id"] == "0000"
    missing = httpx.get(f"{base}/api/documents/ghost.pdf/tree?collection=demo")
    assert missing.status_code == 404


def test_a_cited_page_renders_and_its_highlights_have_boxes(base: str) -> None:
    body = {"query": QUESTION, "collection": "demo"}
    source = httpx.post(f"{base}/api/rag/query", json=body, timeout=60).json()["sources"][0]
    url = f"{base}/api/collections/demo/documents/{source['documentName']}/pages/"
    image = httpx.get(f"{url}{source['pageNumber']}/image", timeout=30)
    assert image.headers["content-type"] == "image/png"
    assert image.content.startswith(b"\x89PNG")
    texts = [h["text"] for h in source["highlights"]]
    boxes = httpx.post(f"{url}{source['pageNumber']}/boxes", json={"highlights": texts}).json()
    assert len(boxes["highlights"]) == len(texts) >= 1
    for found in boxes["highlights"]:
        box = found["box"]
        assert box is not None, found["text"]
        assert 0 <= box["x0"] < box["x1"] <= boxes["width"]
        assert 0 <= box["y0"] < box["y1"] <= boxes["height"]
    assert httpx.get(f"{url}99/image").status_code == 404


def documents(base: str) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = httpx.get(f"{base}/api/documents", timeout=30).json()
    return listed


def uploads(storage: Path) -> list[Path]:
    return sorted(p for p in (storage / "uploads").rglob("*") if p.is_file())


def post_file(base: str, name: str, data: bytes, collection: str = "demo") -> httpx.Response:
    files = {"file": (name, data, "application/pdf")}
    return httpx.post(f"{base}/api/collections/{collection}/documents", files=files, timeout=60)


def test_bad_uploads_are_refused_and_nothing_is_stored(
    base: str,
    storage: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before, files_before = documents(base), uploads(storage)
    oversized = post_file(base, "big.pdf", b"%PDF-1.7\n" + b"0" * 1_200_000)
    assert oversized.status_code == 413
    assert post_file(base, "notes.pdf", b"just some notes").status_code == 415
    assert post_file(base, "../escape.pdf", DEMO_PDF.read_bytes()).status_code == 400
    assert post_file(base, "x.pdf", DEMO_PDF.read_bytes(), "bad..name").status_code == 400
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\n this file was cut short")
    corrupt = post_file(base, broken.name, broken.read_bytes())
    assert corrupt.status_code == 422
    monkeypatch.setenv("RAG_STORAGE_DIR", str(tmp_path / "cli-storage"))
    assert main.main(["ingest", str(broken), "--collection", "demo"]) != 0
    cli_sentence = capsys.readouterr().err.strip().removeprefix("error: ")
    assert corrupt.json()["error"]["message"] == cli_sentence
    assert documents(base) == before and uploads(storage) == files_before


def test_upload_list_view_and_delete_a_new_document(
    base: str, storage: Path, tmp_path: Path
) -> None:
    pdf = tmp_path / "notes.pdf"
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "The quarterly notes mention a lighthouse in Oslo.")
    doc.save(pdf)
    job = upload_and_wait(base, pdf, "notes")
    assert job["status"] == "done" and job["progress"] == 1.0
    listed = httpx.get(f"{base}/api/documents", params={"collection": "notes"}).json()
    assert [(d["name"], d["chunksInMilvus"] > 0) for d in listed] == [("notes.pdf", True)]
    page = httpx.get(f"{base}/api/collections/notes/documents/notes.pdf/pages/1/image")
    assert page.status_code == 200
    deleted = httpx.delete(f"{base}/api/collections/notes/documents/notes.pdf")
    assert deleted.json()["deleted"] == 1
    assert not (storage / "uploads" / "notes" / "notes.pdf").exists()
    gone = httpx.get(f"{base}/api/documents", params={"collection": "notes"})
    assert gone.status_code == 404  # its last document went, so the collection did too
    assert all(d["collection"] != "notes" for d in documents(base))
