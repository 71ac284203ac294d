"""Inputs that broke through (issue 28): each is now one sentence, a 4xx or a non-zero exit, with
nothing stored and no traceback.

- A lone surrogate (U+D800-U+DFFF) in a question, a chat turn or a highlight: 422 (exit 2).
- Tree files nested 400, 900 or 10,000 deep, with a 5,000-digit page, 200,000 nodes or a 2 MB
  title, and a history file of 100,000 `[`: refused within stated limits.
- A MILVUS_URI or MONGODB_URI that is not a URI: one sentence before pymilvus/pymongo read it.
- Smaller: an over-long earlier chat turn is a 422 naming the turn; a history file holding a JSON
  object is read (its `messages`) or refused; NUL bytes in a history file are dropped; a FIFO is
  read as a history file; misspelled `.env` settings are named with the nearest known one.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from helpers import PROJECT_DIR
from serve_fakes import FakeEngine, make_client

import citerag.query.conversation as conversation
import main
from citerag.errors import ConfigError, InputError
from citerag.plan.limits import (
    MAX_ANSWER_TURN_CHARS,
    MAX_QUESTION_CHARS,
    checked_highlight,
    checked_question,
    checked_turn,
)
from citerag.query.conversation import ChatTurn, read_history_file
from citerag.query.request import AnswerRequest
from citerag.serve.schemas import ChatRequest
from citerag.settings import (
    Settings,
    check_milvus_environment,
    settings_from_config,
    unknown_variable_warnings,
)
from citerag.text.bounded import json_depth
from citerag.tree.imported import (
    MAX_TITLE_CHARS,
    MAX_TREE_LEVELS,
    MAX_TREE_NODES,
    import_pageindex,
    read_pageindex_file,
)

SURROGATE = (
    "holds U+D800 at character 9, half of a UTF-16 surrogate pair and not a character; send the "
    "text as valid Unicode (UTF-8)."
)
BOXES = "/api/collections/demo/documents/a.pdf/pages/1/boxes"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[TestClient, FakeEngine]]:
    client, engine = make_client(tmp_path)
    with client:
        yield client, engine


def post_json(client: TestClient, url: str, body: dict[str, Any]) -> Any:
    """`body` as JSON with escapes (`"\\ud800"`), as a client that can send a lone surrogate
    does: httpx's own encoding writes UTF-8, which has no lone surrogates."""
    headers = {"content-type": "application/json"}
    return client.post(url, content=json.dumps(body).encode(), headers=headers)


def refusal(response: Any, status: int = 422) -> str:
    assert response.status_code == status, response.text
    message: str = response.json()["error"]["message"]
    assert "\n" not in message and message.endswith((".", "?"))
    return message


# --- 1. lone surrogates ------------------------------------------------------------------------


def test_a_lone_surrogate_in_a_question_is_a_422_in_every_route_and_the_engine_is_not_asked(
    api: tuple[TestClient, FakeEngine], caplog: pytest.LogCaptureFixture
) -> None:
    client, engine = api
    question = "bananas \ud800?"
    asked = post_json(client, "/api/rag/query", {"query": question, "collection": "demo"})
    assert refusal(asked) == f"The question {SURROGATE}"
    for mode in ("subquestions", "single", "tree"):
        chat = {"model": "demo", "mode": mode, "messages": [{"role": "user", "content": question}]}
        assert (
            refusal(post_json(client, "/v1/chat/completions", chat)) == f"The question {SURROGATE}"
        )
    streamed = {
        "model": "demo",
        "stream": True,
        "messages": [{"role": "user", "content": question}],
    }
    assert refusal(post_json(client, "/v1/chat/completions", streamed)).startswith("The question")
    assert engine.asked == [] and engine.tree_asked == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_lone_surrogate_in_an_earlier_turn_is_a_422_naming_the_turn(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, engine = api
    messages = [
        {"role": "user", "content": "What were the revenues in 2020?"},
        {"role": "assistant", "content": "bananas \ud800 [1]"},
        {"role": "user", "content": "and in 2019?"},
    ]
    response = post_json(client, "/v1/chat/completions", {"model": "demo", "messages": messages})
    assert refusal(response) == f"Message 2 (assistant) {SURROGATE}"
    assert engine.asked == []


def test_a_lone_surrogate_in_a_highlight_is_a_422_before_the_pdf_is_searched(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, _ = api
    body = {"highlights": ["Revenues grew.", "bananas \ud800?"]}
    assert refusal(post_json(client, BOXES, body)) == f"Highlight 2 {SURROGATE}"
    huge = {"highlights": ["x" * 20_000]}
    assert "Highlight 1 is 20000 characters long" in refusal(post_json(client, BOXES, huge))


def test_the_cli_refuses_a_surrogate_with_the_same_sentence(
    capsys: pytest.CaptureFixture[str],
) -> None:
    capsys.readouterr()
    assert main.main(["query", "bananas \ud800?", "--collection", "demo"]) == 2
    assert capsys.readouterr().err == f"error: The question {SURROGATE}\n"
    # an argument the terminal sent as bytes that are not UTF-8 (Python: surrogateescape)
    with pytest.raises(InputError, match=r"holds U\+DCE9 at character 4"):
        checked_question(os.fsdecode(b"caf\xe9 revenue?"))


def test_one_check_for_every_text_that_enters() -> None:
    assert checked_question("What\x00 is it?") == "What  is it?"
    assert checked_turn(" a\x00b ", "user", "Message 1 (user)") == "a b"
    assert checked_highlight("a\nb", "Highlight 1") == "a\nb"  # as sent: the viewer matches it
    for check in (
        lambda: checked_turn("\udfff", "assistant", "Message 4 (assistant)"),
        lambda: checked_highlight("\udfff", "Highlight 1"),
    ):
        with pytest.raises(InputError, match="U\\+DFFF"):
            check()
    assert checked_question("emoji \U0001f600 ok?") == "emoji \U0001f600 ok?"  # a real pair


# --- 3. nested and oversized JSON ----------------------------------------------------------------


def nested_tree_text(levels: int) -> str:
    """A PageIndex file whose one chain of sections is `levels` deep."""
    node = '{"title": "s", "start_index": 1, "end_index": 1, "nodes": ['
    leaf = '{"title": "s", "start_index": 1, "end_index": 1, "nodes": []}'
    return '{"structure": [' + node * (levels - 1) + leaf + "]}" * (levels - 1) + "]}"


@pytest.mark.parametrize("levels", [400, 900, 10_000])
def test_a_deeply_nested_tree_file_is_one_sentence(tmp_path: Path, levels: int) -> None:
    path = tmp_path / "tree.json"
    path.write_text(nested_tree_text(levels))
    with pytest.raises(InputError) as refused:
        read_pageindex_file(path)
    message = str(refused.value)
    assert message.startswith(f"Tree file {path} nests arrays and objects")
    assert f"a tree of {MAX_TREE_LEVELS} levels" in message and "\n" not in message


def test_a_tree_at_the_level_limit_is_read_and_one_below_it_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tree.json"
    path.write_text(nested_tree_text(MAX_TREE_LEVELS))
    imported = import_pageindex(read_pageindex_file(path), "x.pdf", "d", 3, [])
    assert len(imported.tree.node_ids()) == MAX_TREE_LEVELS
    chain: dict[str, Any] = {"title": "last", "start_index": 1}
    for _ in range(MAX_TREE_LEVELS):
        chain = {"title": "s", "start_index": 1, "nodes": [chain]}
    with pytest.raises(InputError, match=f"below level {MAX_TREE_LEVELS}, the deepest"):
        import_pageindex({"structure": [chain]}, "x.pdf", "d", 3, [])


NODE = '{"structure": [{"title": "a", %s}]}'
HUGE_PAGES = [
    (NODE % ('"start_index": ' + "7" * 5000), "5000 digits"),  # a JSON number
    (NODE % ('"start_index": "' + "7" * 5000 + '"'), "larger than any page number"),
    (NODE % ('"physical_index": "<physical_index_' + "9" * 5000 + '>"'), "larger than any page"),
]


@pytest.mark.parametrize(("text", "words"), HUGE_PAGES)
def test_a_five_thousand_digit_page_number_is_one_sentence(
    tmp_path: Path, text: str, words: str
) -> None:
    path = tmp_path / "tree.json"
    path.write_text(text)
    with pytest.raises(InputError, match=words) as refused:
        import_pageindex(read_pageindex_file(path), "x.pdf", "d", 3, [])
    assert len(str(refused.value)) < 300


def test_a_tree_of_too_many_nodes_or_a_huge_title_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tree.json"
    flat = [{"title": f"n{i}", "start_index": 1} for i in range(MAX_TREE_NODES + 1)]
    path.write_text(json.dumps({"structure": flat}))
    with pytest.raises(InputError, match=f"more than {MAX_TREE_NODES:,} nodes"):
        import_pageindex(read_pageindex_file(path), "x.pdf", "d", 3, [])
    path.write_text(json.dumps({"structure": [{"title": "T" * 2_000_000, "start_index": 1}]}))
    with pytest.raises(InputError, match=f"2,000,000 characters long.*at most {MAX_TITLE_CHARS:,}"):
        import_pageindex(read_pageindex_file(path), "x.pdf", "d", 3, [])


def test_the_cli_refuses_a_history_file_of_brackets_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_STORAGE_DIR", str(tmp_path / "storage"))
    history = tmp_path / "history.json"
    history.write_text("[" * 100_000)
    capsys.readouterr()
    assert main.main(["query", "and in 2019?", "--history", str(history)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: History file {history} nests arrays and objects 100,000")
    assert err.count("\n") == 1


def test_json_depth_skips_brackets_inside_strings() -> None:
    assert json_depth('{"a": "[[[{{{", "b": [1, [2]]}') == 3
    assert json_depth('"just [ a string"') == 0 and json_depth("[" * 5) == 5


# --- 4. URIs that are not URIs -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "value", "words"),
    [
        ("MILVUS_URI", "::::bad", "milvus_uri is '::::bad', neither a Milvus server's URI"),
        ("MILVUS_URI", "localhost:19530", "neither a Milvus server's URI"),
        ("MILVUS_URI", "http://[::1]:19530", "pymilvus cannot read from the environment"),
        ("MILVUS_URI", "storage/milvus.db", "pymilvus cannot read from the environment"),
        ("MONGODB_URI", "notmongo://x", "mongodb_uri is 'notmongo://x', not a MongoDB URI"),
        ("MONGODB_URI", "mongodb://", "not a MongoDB URI"),
    ],
)
def test_a_uri_that_is_not_one_is_a_config_sentence(variable: str, value: str, words: str) -> None:
    import config

    with pytest.raises(ConfigError, match=words.replace("[", r"\[")) as refused:
        settings_from_config(config, environ={variable: value})
    assert "\n" not in str(refused.value)


def test_valid_uris_pass_and_a_lite_file_may_come_from_config() -> None:
    for uri in ("http://127.0.0.1:19530", "https://user:pw@cloud.example:443", "grpc://h:1"):
        check_milvus_environment({"MILVUS_URI": uri})
        assert Settings(milvus_uri=uri).storage.milvus_uri == uri
    assert Settings(milvus_uri="/data/milvus.db").storage.milvus_uri == "/data/milvus.db"
    for uri in ("mongodb://a:1,b:2/?replicaSet=rs", "mongodb+srv://u:p@cluster.example"):
        assert Settings(mongodb_uri=uri).storage.mongodb_uri == uri
    from citerag.store.mongo_docstore import MongoDocStore

    with pytest.raises(ConfigError, match=r"'mongodb://u:\*\*\*@h:99999' cannot be used"):
        MongoDocStore("mongodb://u:secret@h:99999", "db")  # refused by pymongo, not by a server


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variable", "value"), [("MILVUS_URI", "::::bad"), ("MONGODB_URI", "notmongo://x")]
)
def test_main_says_one_sentence_before_pymilvus_or_pymongo_reads_the_uri(
    tmp_path: Path, variable: str, value: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"MILVUS_URI", "MONGODB_URI"}}
    env.update({variable: value, "RAG_STORAGE_DIR": str(tmp_path / "storage")})
    for command in (["list"], ["serve", "--port", "1"], ["delete", "a.pdf"]):
        done = subprocess.run(
            [sys.executable, str(PROJECT_DIR / "main.py"), *command],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == ConfigError.exit_code, done.stderr[-2000:]
        assert "Traceback" not in done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
        assert value in lines[0]


# --- smaller: history turns and files ------------------------------------------------------------


def test_a_long_earlier_turn_is_a_422_naming_it_not_a_400_about_the_follow_up(
    api: tuple[TestClient, FakeEngine],
) -> None:
    client, engine = api
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "revenue " * 250_002},  # 2,000,016 characters with spaces
        {"role": "assistant", "content": "It grew [1]."},
        {"role": "user", "content": "and in 2019?"},
    ]
    response = client.post("/v1/chat/completions", json={"model": "demo", "messages": messages})
    assert refusal(response) == (
        f"Message 2 (user) is 2000015 characters long, more than a question may be "
        f"({MAX_QUESTION_CHARS}); shorten that earlier turn or leave it out of the history."
    )
    messages[1]["content"] = "What were the revenues in 2020?"
    messages[2]["content"] = "x" * (MAX_ANSWER_TURN_CHARS + 1)
    response = client.post("/v1/chat/completions", json={"model": "demo", "messages": messages})
    assert refusal(response).startswith("Message 3 (assistant) is 20001 characters long")
    assert engine.asked == []


def test_earlier_turns_lose_their_control_characters() -> None:
    body = ChatRequest(
        model="demo",
        messages=[
            {"role": "user", "content": "What were\x00 the revenues\x1b in 2020?"},
            {"role": "assistant", "content": "$25.0B\x00 [1]"},
            {"role": "user", "content": "and in 2019?"},
        ],
    )
    assert body.history() == [
        ChatTurn("user", "What were  the revenues  in 2020?"),
        ChatTurn("assistant", "$25.0B  [1]"),
    ]


def test_nul_bytes_in_a_history_file_never_reach_the_rewritten_question(tmp_path: Path) -> None:
    path = tmp_path / "history.txt"
    path.write_bytes(b"What were Netflix\x00's revenues\x00 in 2020?\n\x00\x00\n")
    turns = read_history_file(path)
    assert turns == [ChatTurn("user", "What were Netflix 's revenues  in 2020?")]
    engine = FakeEngine(Settings(storage_dir=tmp_path))
    result = engine.answer(AnswerRequest.of("and in 2019?", "demo", history=turns))
    assert "\x00" not in engine.asked[0][0] and "2019" in engine.asked[0][0]
    assert "\x00" not in json.dumps(result.to_dict())


def test_a_history_file_holding_a_json_object_is_read_or_refused(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    request = {
        "model": "fin",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "What were revenues in 2020?"}]},
            {"role": "assistant", "content": "$25.0B [1]"},
        ],
    }
    path.write_text(json.dumps(request))
    assert read_history_file(path) == [
        ChatTurn("user", "What were revenues in 2020?"),
        ChatTurn("assistant", "$25.0B [1]"),
    ]
    path.write_text(json.dumps({"role": "user", "content": "What were revenues in 2020?"}))
    with pytest.raises(InputError, match="holds a JSON object without a 'messages' list"):
        read_history_file(path)


def test_a_fifo_is_read_as_a_history_file(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    fifo = tmp_path / "history.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with fifo.open("w") as stream:
            stream.write("What were Netflix's revenues in 2020?\n")

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert read_history_file(fifo) == [
            ChatTurn("user", "What were Netflix's revenues in 2020?")
        ]
    finally:
        writer.join(timeout=10)
    with pytest.raises(InputError, match="is a folder"):
        read_history_file(tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        read_history_file(tmp_path / "none.json")


def test_history_files_have_stated_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "history.txt"
    path.write_text("q" * (MAX_QUESTION_CHARS + 1) + "\n")
    with pytest.raises(InputError, match=f"Line 1 of {path} is {MAX_QUESTION_CHARS + 1} char"):
        read_history_file(path)
    monkeypatch.setattr(conversation, "MAX_HISTORY_BYTES", 1000)
    path.write_text("What were the revenues?\n" * 100)
    with pytest.raises(InputError, match="is larger than 1,000 bytes, the most this engine reads"):
        read_history_file(path)


def test_a_rewrite_over_the_question_limit_asks_the_follow_up_as_it_is() -> None:
    names = [f"{a}{b}{c}".capitalize() for a in "bcdfg" for b in "aeiou" for c in "lmnrst"]
    first = "What did " + ", ".join(f"{name} Holdings" for name in names) + " earn in 2020?"
    follow_up = "What does it say about their risks and " + "the outlook " * 250 + "?"
    assert len(first) < MAX_QUESTION_CHARS and len(follow_up) < MAX_QUESTION_CHARS
    condensed = conversation.condense([ChatTurn("user", first)], follow_up)
    assert (condensed.question, condensed.method) == (follow_up.strip(), "offline")
    assert (
        condensed.note
        == f"the rewrite from the earlier turns was over {MAX_QUESTION_CHARS} characters"
    )


# --- smaller: misspelled settings in .env --------------------------------------------------------


def test_misspelled_settings_are_named_with_the_nearest_known_one() -> None:
    names = ["MILVUS_URL", "RAG_RERANK", "llm_model", "RAG_NOTHING", "MILVUS_URI", "HTTP_PROXY"]
    assert unknown_variable_warnings(names) == [
        "MILVUS_URL (from .env) is not a setting citerag reads and is ignored; did you mean "
        "MILVUS_URI?",
        "RAG_RERANK (from .env) is not a setting citerag reads and is ignored; did you mean "
        "RAG_RERANKER?",
        "llm_model (from .env) is not a setting citerag reads and is ignored; did you mean "
        "LLM_MODEL?",
        "RAG_NOTHING (from .env) is not a setting citerag reads and is ignored; the variables "
        "are listed in README.md (Configuration) and declared on the fields of "
        "citerag/settings/groups.py.",
    ]
    assert unknown_variable_warnings(["OPENAI_API_BASE", "OPENAI_API_KEY", "HF_TOKEN"]) == []


def test_main_warns_about_a_misspelled_setting_from_env(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / ".env").write_text("CITERAG_T_UNRELATED=1\nMILVUS_URL=http://127.0.0.1:19530\n")
    monkeypatch.chdir(tmp_path)
    for name in ("CITERAG_T_UNRELATED", "MILVUS_URL"):  # recorded, so the test removes them
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    with caplog.at_level(logging.WARNING, logger="citerag"):
        assert main.main(["query", "?!?"]) == 2  # refused before any model loads
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [
        "MILVUS_URL (from .env) is not a setting citerag reads and is ignored; did you mean "
        "MILVUS_URI?"
    ]
    capsys.readouterr()
