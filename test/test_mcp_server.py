"""The MCP server end to end, through the SDK's own clients: `main.py mcp` over stdio and the
`/mcp` endpoint of `main.py serve` over streamable HTTP (with and without the API key). A
question about the demo PDF gets a cited answer whose highlights round-trip; each bad input
gets the one sentence the CLI prints for it, as a tool error."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from helpers import DEMO_PDF, PROJECT_DIR
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from serve_helpers import CLEARED, running_server

pytestmark = pytest.mark.slow
COLLECTION = "mcpdemo"
QUESTION = "What does the retrieval stage combine before reranking?"
TOOLS = {"answer", "search", "list_documents", "read_pages"}
KEY = "mcp-test-key"
CITATION = re.compile(r"\[(\d+)\]")


def environment(storage: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(RAG_STORAGE_DIR=str(storage), HF_HUB_OFFLINE="1", PYTHONPATH=str(PROJECT_DIR))
    return env


def cli(storage: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "main.py", *args]
    return subprocess.run(
        command, cwd=PROJECT_DIR, env=environment(storage), capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A storage folder holding the demo PDF in COLLECTION."""
    path = tmp_path_factory.mktemp("mcp") / "storage"
    done = cli(path, "ingest", str(DEMO_PDF), "--collection", COLLECTION)
    assert done.returncode == 0, done.stderr
    return path


@pytest.fixture(scope="module")
def cli_sentences(storage: Path) -> dict[str, str]:
    """What `main.py query` prints for each bad input (its one `error:` line)."""

    def sentence(*args: str) -> str:
        done = cli(storage, "query", *args)
        assert done.returncode == 2, done.stderr
        [line] = [x for x in done.stderr.splitlines() if x.startswith("error: ")]
        return line.removeprefix("error: ")

    return {
        "collection": sentence("a question", "--collection", "nosuch"),
        "top_k": sentence("a question", "--collection", COLLECTION, "--top-k", "99"),
        "pages": sentence("a question", "--collection", COLLECTION, "--pages", "9-12"),
    }


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    data: dict[str, Any] = result.structured_content
    return data


def error_text(result: Any) -> str:
    assert result.is_error, result.structured_content
    [block] = result.content
    text: str = block.text
    return text


def assert_cited(answer: dict[str, Any]) -> None:
    """[N] markers that name sources, and highlights that are exactly their offsets' text."""
    sources = answer["sources"]
    cited = {int(n) for n in CITATION.findall(answer["answer"])}
    assert cited and cited <= {s["citationNumber"] for s in sources}, answer["answer"]
    assert {s["documentName"] for s in sources} == {DEMO_PDF.name}
    highlights = [(s["content"], h) for s in sources for h in s["highlights"]]
    assert highlights
    for content, h in highlights:
        assert content[h["startOffset"] : h["endOffset"]] == h["text"]
    assert any("BM25" in h["text"] for _, h in highlights)


async def exercise(session: ClientSession, sentences: dict[str, str], named: bool) -> None:
    """`named`: each call names the collection (serve's default collection is another)."""
    await session.initialize()
    where = {"collection": COLLECTION} if named else {}
    tools = await session.list_tools()
    assert {t.name for t in tools.tools} == TOOLS
    assert all(t.description and t.output_schema for t in tools.tools)
    answer = structured(await session.call_tool("answer", {"question": QUESTION, **where}))
    assert_cited(answer)
    first = answer["sources"][0]
    page = structured(
        await session.call_tool(
            "read_pages",
            {"document": first["documentName"], "pages": str(first["pageNumber"]), **where},
        )
    )
    assert page["pageCount"] == 3 and first["highlights"][0]["text"] in page["pages"][0]["text"]
    listed = structured(await session.call_tool("list_documents", {}))
    assert [(d["collection"], d["name"]) for d in listed["documents"]] == [
        (COLLECTION, DEMO_PDF.name)
    ]
    found = structured(await session.call_tool("search", {"query": QUESTION, "top_k": 2, **where}))
    assert 0 < len(found["sources"]) <= 2 and "answer" not in found

    async def refused(tool: str, arguments: dict[str, Any]) -> str:
        return error_text(await session.call_tool(tool, {**where, **arguments}))

    assert (
        await refused("answer", {"question": QUESTION, "collection": "nosuch"})
        == (sentences["collection"])
    )
    assert await refused("answer", {"question": QUESTION, "top_k": 99}) == sentences["top_k"]
    assert await refused("answer", {"question": QUESTION, "pages": "9-12"}) == sentences["pages"]
    assert await refused("answer", {"question": "   "}) == (
        "The question is empty; ask something about the documents."
    )
    past = await refused("read_pages", {"document": DEMO_PDF.name, "pages": "9"})
    assert past == (
        f"Page 9 is past the end of {DEMO_PDF.name}, which has pages 1-3; ask within those."
    )
    for text in (*sentences.values(), past):
        assert "Traceback" not in text and "\n" not in text


def test_stdio_server_answers_with_citations_and_refuses_bad_input_with_the_cli_sentence(
    storage: Path, cli_sentences: dict[str, str]
) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["main.py", "mcp", "--collection", COLLECTION],
        cwd=PROJECT_DIR,
        env=environment(storage),
    )

    async def run() -> None:
        async with stdio_client(params) as streams, ClientSession(*streams) as session:
            await exercise(session, cli_sentences, named=False)
            collections = await session.read_resource("citerag://collections")
            assert collections.contents[0].text == f'["{COLLECTION}"]'

    anyio.run(run)


@asynccontextmanager
async def http_session(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as client,
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(*streams) as session,
    ):
        yield session


@pytest.fixture
def served(storage: Path) -> Iterator[str]:
    with running_server(storage, RAG_API_KEY=KEY) as base:
        yield base


def test_http_endpoint_in_serve_answers_with_the_key_and_refuses_without_it(
    served: str, cli_sentences: dict[str, str]
) -> None:
    url = f"{served}/mcp"

    async def run() -> None:
        async with http_session(url, {"Authorization": f"Bearer {KEY}"}) as session:
            await exercise(session, cli_sentences, named=True)
        with pytest.raises(Exception):  # noqa: B017 - the SDK's transport error, whatever its type
            async with http_session(url, {}) as session:
                await session.initialize()

    anyio.run(run)
    hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    missing = httpx.post(url, json=hello, timeout=30)
    assert missing.status_code == 401
    assert missing.json()["error"]["message"].startswith("This server needs an API key")
    wrong = httpx.post(url, json=hello, headers={"X-API-Key": "nope"}, timeout=30)
    assert wrong.status_code == 401
    assert wrong.json()["error"]["message"].startswith("The API key is wrong")
