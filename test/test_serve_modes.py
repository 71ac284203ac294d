"""Answer modes and section trees over HTTP, with the fake engine (no models): `mode` and
`topKFiles` reach the engine exactly as `main.py query --mode` sends them, sub-questions come
back in the metadata, and `GET /api/documents/{name}/tree` is `main.py tree --json`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from serve_fakes import ANSWER, KEY, FakeEngine, make_client, small_tree

import main
from citerag.errors import InputError
from citerag.mcp_server.library import Library
from citerag.query.request import AnswerRequest, Mode
from citerag.store.base import PageRange

SUB_QUESTIONS = [
    {"question": "How are scores fused?", "tool": "facts", "filters": {}, "citations": [1]},
    {"question": "What is on page 2?", "tool": "pages", "filters": {}, "citations": [2]},
]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[TestClient, FakeEngine]]:
    client, engine = make_client(tmp_path)
    with client:
        yield client, engine


def chat(question: str = "How?", **extra: Any) -> dict[str, Any]:
    return {"model": "demo", "messages": [{"role": "user", "content": question}], **extra}


@pytest.mark.parametrize(
    ("mode", "plan"), [(None, True), ("subquestions", True), ("hybrid", True), ("single", False)]
)
def test_query_modes_plan_or_not_and_keep_top_k_and_pages(
    api: tuple[TestClient, FakeEngine], mode: str | None, plan: bool
) -> None:
    client, engine = api
    body = {"query": "How?", "collection": "demo", "topK": 2, "pages": "1-3"}
    if mode is not None:
        body["mode"] = mode
    response = client.post("/api/rag/query", json=body)
    assert response.status_code == 200, response.text
    assert engine.asked == [("How?", "demo", 2, PageRange(1, 3))]
    assert engine.plans == [plan]


def test_tree_mode_runs_the_tree_pipeline_with_top_k_files(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, engine = api
    body = {"query": "Where?", "collection": "demo", "mode": "tree", "topKFiles": 2}
    result = client.post("/api/rag/query", json=body).json()
    assert result["metadata"]["retrievalMethod"] == "tree"
    whole = client.post("/v1/chat/completions", json=chat("Where?", mode="tree", top_k_files=4))
    assert whole.json()["metadata"]["retrievalMethod"] == "tree"
    default = client.post(
        "/api/rag/query", json={"query": "Where?", "collection": "demo", "mode": "tree"}
    )
    assert default.status_code == 200
    assert engine.tree_asked == [
        ("Where?", "demo", 2),
        ("Where?", "demo", 4),
        ("Where?", "demo", 3),
    ]
    assert engine.asked == []


def test_chat_completions_take_the_mode_as_an_extra_body_field(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, engine = api
    reply = client.post("/v1/chat/completions", json=chat(mode="single", top_k=2, pages="2-2"))
    assert reply.json()["choices"][0]["message"]["content"] == ANSWER
    client.post("/v1/chat/completions", json=chat())
    assert engine.plans == [False, True]
    assert engine.asked[0] == ("How?", "demo", 2, PageRange(2, 2))


def test_bad_modes_and_file_counts_are_422_naming_the_field(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, engine = api
    for body, field in [
        ({"query": "q", "collection": "demo", "mode": "graph"}, "'mode'"),
        ({"query": "q", "collection": "demo", "mode": "tree", "topKFiles": 0}, "'topKFiles'"),
    ]:
        response = client.post("/api/rag/query", json=body)
        assert response.status_code == 422 and field in response.json()["error"]["message"]
    response = client.post("/v1/chat/completions", json=chat(mode="graph"))
    assert response.status_code == 422 and "'mode'" in response.json()["error"]["message"]
    assert engine.asked == []


def test_sub_questions_come_back_whole_and_at_the_end_of_the_stream(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, engine = api
    engine.sub_questions = SUB_QUESTIONS
    body = {"query": "How?", "collection": "demo"}
    assert client.post("/api/rag/query", json=body).json()["metadata"]["subQuestions"] == (
        SUB_QUESTIONS
    )
    with client.stream("POST", "/v1/chat/completions", json=chat(stream=True)) as response:
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    last = json.loads(events[-2])
    assert last["metadata"]["subQuestions"] == SUB_QUESTIONS
    single = client.post("/api/rag/query", json={**body, "mode": "single"}).json()
    assert single["metadata"]["subQuestions"] == []


@pytest.fixture
def cli_and_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[TestClient, FakeEngine, FakeEngine]:
    """The API over one fake engine, and `main.py` opening another."""
    client, served_engine = make_client(tmp_path / "api")
    cli_engine = FakeEngine(served_engine.settings)

    @contextmanager
    def open_engine(article: str | None = None) -> Iterator[FakeEngine]:
        yield cli_engine

    monkeypatch.setattr(main, "open_engine", open_engine)
    return client, served_engine, cli_engine


def test_the_cli_and_the_api_ask_the_engine_the_same_way(
    cli_and_api: tuple[TestClient, FakeEngine, FakeEngine],
) -> None:
    client, served_engine, cli_engine = cli_and_api
    cases = [
        (["--mode", "single", "--top-k", "2", "--pages", "1-2"], {"mode": "single", "topK": 2}),
        (["--top-k", "2", "--pages", "1-2"], {"topK": 2}),
        (["--mode", "tree", "--top-k-files", "2"], {"mode": "tree", "topKFiles": 2}),
    ]
    with client:
        for cli, api in cases:
            assert main.main(["query", "How?", "--collection", "demo", "--json", *cli]) == 0
            body = {"query": "How?", "collection": "demo", "pages": "1-2", **api}
            assert client.post("/api/rag/query", json=body).status_code == 200
    assert cli_engine.asked == served_engine.asked and cli_engine.plans == served_engine.plans
    assert served_engine.plans == [False, True]
    assert cli_engine.tree_asked == served_engine.tree_asked == [("How?", "demo", 2)]


def test_an_unknown_mode_is_one_sentence_for_library_callers() -> None:
    assert Mode.named("subquestions") is Mode.HYBRID
    with pytest.raises(InputError, match="Unknown mode 'graph'; use one of hybrid, single"):
        AnswerRequest.of("q", "demo", mode="graph")


def test_the_tree_endpoint_is_the_pageindex_json(api: tuple[TestClient, FakeEngine]) -> None:
    client, engine = api
    engine.docstore.trees[("demo", "a.pdf")] = small_tree("a.pdf").to_record()
    response = client.get("/api/documents/a.pdf/tree", params={"collection": "demo"})
    assert response.status_code == 200, response.text
    assert response.json() == small_tree("a.pdf").to_pageindex()
    root = response.json()["structure"][0]
    assert (root["title"], root["nodes"][0]["node_id"]) == ("Method", "0001")
    assert "text" not in root  # as `main.py tree --json`: titles, pages, summaries


@pytest.mark.parametrize(
    ("path", "collection", "status", "words"),
    [
        ("ghost.pdf", "demo", 404, "No document named 'ghost.pdf'"),
        ("a.pdf", "demo", 404, "no section tree"),
        ("a.pdf", "nowhere", 404, "'nowhere' does not exist"),
        ("%2E%2E", "demo", 400, "not allowed"),
        ("..%2F..%2Fconfig.py", "demo", 404, "no such endpoint"),
        (".hidden.pdf", "demo", 400, "not allowed"),
        ("a.pdf", "../etc", 400, "Collection name"),
    ],
)
def test_tree_requests_that_find_nothing_or_are_unsafe(
    api: tuple[TestClient, FakeEngine], path: str, collection: str, status: int, words: str
) -> None:
    client, _ = api
    response = client.get(f"/api/documents/{path}/tree", params={"collection": collection})
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"]
    assert words in message and message.endswith(".")


def test_the_tree_endpoint_needs_the_key_when_one_is_set(tmp_path: Path) -> None:
    client, engine = make_client(tmp_path, api_key=KEY)
    engine.docstore.trees[("demo", "a.pdf")] = small_tree("a.pdf").to_record()
    url = "/api/documents/a.pdf/tree?collection=demo"
    with client:
        assert client.get(url).status_code == 401
        assert client.get(url, headers={"X-API-Key": KEY}).status_code == 200


def test_openapi_documents_the_modes_and_the_tree(api: tuple[TestClient, FakeEngine]) -> None:
    spec = api[0].get("/openapi.json").json()
    query = spec["components"]["schemas"]["QueryRequest"]["properties"]
    assert query["mode"]["enum"] == ["subquestions", "hybrid", "single", "tree"]
    assert query["mode"]["default"] == "subquestions" and "topKFiles" in query
    assert "/api/documents/{name}/tree" in spec["paths"]


def test_the_cli_the_api_and_mcp_hand_the_engine_one_equal_request(
    cli_and_api: tuple[TestClient, FakeEngine, FakeEngine],
) -> None:
    """Every option travels in one `AnswerRequest`, built alike from the CLI's flags, the
    API's body and the MCP answer tool's arguments, and it is that object the engine's
    `answer` receives."""
    client, served_engine, cli_engine = cli_and_api
    cli = ["--mode", "single", "--top-k", "2", "--pages", "1-2", "--where", "company=3M"]
    api = {"mode": "single", "topK": 2, "pages": "1-2", "where": {"company": "3M"}}
    with client:
        assert main.main(["query", "How?", "--collection", "demo", "--json", *cli]) == 0
        body = {"query": "How?", "collection": "demo", **api}
        assert client.post("/api/rag/query", json=body).status_code == 200
    [from_cli], [from_api] = cli_engine.requests, served_engine.requests
    assert (
        from_cli
        == from_api
        == AnswerRequest.of(
            "How?", "demo", mode="single", top_k=2, pages=PageRange(1, 2), where={"company": "3M"}
        )
    )
    assert from_cli.mode is Mode.SINGLE and not from_cli.plan
    assert served_engine.asked == [("How?", "demo", 2, PageRange(1, 2))]
    library = Library(cli_engine, default_collection="demo")
    tool = library.request("How?", None, top_k=2, pages="1-2", mode="single")
    library.answer(tool)
    assert (
        cli_engine.requests[-1]
        == tool
        == AnswerRequest.of("How?", "demo", mode="single", top_k=2, pages=PageRange(1, 2))
    )


def test_a_chat_turn_reaches_the_engine_with_its_history(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, engine = api
    messages = [
        {"role": "user", "content": "What were Acme's revenues in 2020?"},
        {"role": "assistant", "content": "$4.2B [1]"},
        {"role": "user", "content": "and in 2019?"},
    ]
    body = {"model": "demo", "messages": messages, "mode": "tree", "top_k_files": 2}
    assert client.post("/v1/chat/completions", json=body).status_code == 200
    [request] = engine.requests
    assert (request.question, request.mode, request.top_k_files) == ("and in 2019?", Mode.TREE, 2)
    assert [turn.role for turn in request.history] == ["user", "assistant"]
    asked, collection, files = engine.tree_asked[0]
    assert "Acme" in asked and "2019" in asked  # condensed before the mode ran
