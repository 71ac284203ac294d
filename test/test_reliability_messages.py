"""The CLI and the API refuse the same questions with the same sentence (issue 19.5): a question
without words, a top_k over the limit, pages past the end of every document."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers import long_pdf
from serve_fakes import FakeEngine, make_client

import main
from citerag.engine import Engine
from citerag.errors import InputError
from citerag.plan.limits import MAX_TOP_K, check_pages_exist, checked_question, checked_top_k
from citerag.serve import create_app
from citerag.settings import Settings
from citerag.store.base import PageRange

NO_WORDS = (
    "The question has no words (only control characters, punctuation or symbols); "
    "ask something about the documents in words."
)
OVER_LIMIT = f"A top_k of 100000 is outside 1 to {MAX_TOP_K} sources; ask for {MAX_TOP_K} or fewer."
WORDLESS = ["\x00\x00\x00", "\x00 \x1b \x07 -- ?", "?!? ...", "\u00a0\x7f\x85"]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[TestClient, FakeEngine]]:
    client, engine = make_client(tmp_path)
    with client:
        yield client, engine


def refusal(response: object, status: int) -> str:
    assert getattr(response, "status_code", None) == status, getattr(response, "text", "")
    message: str = response.json()["error"]["message"]  # type: ignore[attr-defined]
    return message


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main.main(list(argv))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("question", WORDLESS)
def test_a_question_without_words_is_refused_not_answered(
    api: tuple[TestClient, FakeEngine], capsys: pytest.CaptureFixture[str], question: str
) -> None:
    client, engine = api
    asked = client.post("/api/rag/query", json={"query": question, "collection": "demo"})
    assert refusal(asked, 422) == NO_WORDS
    chat = {"model": "demo", "messages": [{"role": "user", "content": question}]}
    assert refusal(client.post("/v1/chat/completions", json=chat), 422) == NO_WORDS
    assert engine.asked == []
    assert cli(capsys, "query", question, "--collection", "demo") == (2, f"error: {NO_WORDS}\n")


def test_control_characters_inside_a_real_question_are_dropped() -> None:
    assert checked_question("What\x00 is the\x1b revenue?") == "What  is the  revenue?"
    with pytest.raises(InputError, match="question is empty"):
        checked_question(" \t ")


def test_top_k_over_the_limit_is_the_same_sentence_in_cli_and_api(
    api: tuple[TestClient, FakeEngine], capsys: pytest.CaptureFixture[str]
) -> None:
    client, engine = api
    body = {"query": "How?", "collection": "demo", "topK": 100000}
    assert refusal(client.post("/api/rag/query", json=body), 422) == OVER_LIMIT
    chat = {"model": "demo", "top_k": 100000, "messages": [{"role": "user", "content": "How?"}]}
    assert refusal(client.post("/v1/chat/completions", json=chat), 422) == OVER_LIMIT
    assert engine.asked == []
    code, err = cli(capsys, "query", "How?", "--collection", "demo", "--top-k", "100000")
    assert (code, err) == (2, f"error: {OVER_LIMIT}\n")
    at_limit = client.post("/api/rag/query", json={**body, "topK": MAX_TOP_K})
    assert at_limit.status_code == 200 and engine.asked[-1][2] == MAX_TOP_K


def test_top_k_below_one_is_refused_too() -> None:
    with pytest.raises(InputError, match="outside 1 to"):
        checked_top_k(0)
    assert checked_top_k(None) is None


def test_pages_past_every_document_name_the_pages_there_are() -> None:
    with pytest.raises(InputError) as refused:
        check_pages_exist(PageRange(30, 40), "fin", [28, 12])
    assert str(refused.value) == (
        "Pages 30-40 are past the end of every document in collection 'fin'; its documents "
        "have pages 1-28, so ask within those."
    )
    check_pages_exist(PageRange(20, 40), "fin", [28, 12])  # overlaps the longest: allowed
    check_pages_exist(PageRange(30, 40), "fin", [])  # no documents: the collection's own error


@pytest.mark.slow
def test_pages_past_the_end_are_the_same_sentence_in_cli_and_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = tmp_path / "storage"
    for variable in ("MILVUS_URI", "MONGODB_URI", "LLM_PROVIDER", "RAG_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("RAG_STORAGE_DIR", str(storage))
    monkeypatch.setenv("RAG_RERANKER", "none")
    pdf = long_pdf(tmp_path / "filing.pdf", pages=28, lines_per_page=6)
    code, err = cli(capsys, "ingest", str(pdf), "--collection", "fin")
    assert code == 0, err
    expected = (
        "Pages 30-40 are past the end of every document in collection 'fin'; its documents "
        "have pages 1-28, so ask within those."
    )
    code, err = cli(capsys, "query", "revenue", "--collection", "fin", "--pages", "30-40")
    assert (code, err) == (2, f"error: {expected}\n")
    engine = Engine(Settings(storage_dir=storage, reranker="none"))
    try:
        with TestClient(create_app(engine)) as client:
            body = {"query": "revenue", "collection": "fin", "pages": "30-40", "mode": "single"}
            assert refusal(client.post("/api/rag/query", json=body), 400) == expected
            inside = client.post("/api/rag/query", json={**body, "pages": "27-40"})
            assert inside.status_code == 200, inside.text
            assert {s["pageNumber"] for s in inside.json()["sources"]} <= {27, 28}
    finally:
        engine.close()
