"""The MCP server: four tools and two resources over a `Library`.

Each tool runs its engine call on a worker thread (`Run`: the API's limiter when mounted in
`serve`) and returns its model as structured content (and as JSON text for clients that read
only text). A mistake the user can fix comes back as a tool error whose text is the one
sentence the CLI prints for it; anything else is the SDK's generic tool error, never a
traceback.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from citerag.errors import RagError
from citerag.mcp_server.library import MAX_PAGES, Library
from citerag.mcp_server.models import Answer, Documents, Pages, Sources
from citerag.plan.limits import MAX_TOP_K

Run = Callable[[Callable[[], Any]], Awaitable[Any]]  # an engine call, on a worker thread
ENGINE_THREADS = 4  # tool calls answered at once over stdio; the rest wait their turn

INSTRUCTIONS = (
    "Answers questions from the user's PDF documents with citations: each [N] in an answer "
    "cites the source whose citationNumber is N, with its document, page and the highlighted "
    "sentences that support it (highlights[i].text == content[startOffset:endOffset]). Use "
    "list_documents to see what is stored and read_pages to check a citation against its page."
)
Collection = Annotated[
    str | None,
    Field(description="the collection to ask (default: the server's); see list_documents"),
]
TopK = Annotated[
    int | None,
    Field(description=f"how many sources, 1 to {MAX_TOP_K} (default: the server's setting)"),
]


def thread_runner(limiter: anyio.CapacityLimiter) -> Run:
    async def run(function: Callable[[], Any]) -> Any:
        return await anyio.to_thread.run_sync(function, limiter=limiter)

    return run


async def outcome(run: Run, work: Callable[[], BaseModel]) -> CallToolResult:
    """The tool's result: the model as structured content, or the sentence as a tool error."""
    try:
        model: BaseModel = await run(work)
    except RagError as error:
        return CallToolResult(content=[TextContent(type="text", text=str(error))], is_error=True)
    return CallToolResult(
        content=[TextContent(type="text", text=model.model_dump_json())],
        structured_content=model.model_dump(mode="json"),
    )


def build_server(library: Library, run: Run | None = None) -> MCPServer:
    run = run or thread_runner(anyio.CapacityLimiter(ENGINE_THREADS))
    server: MCPServer = MCPServer(
        "citerag", instructions=INSTRUCTIONS, version="0.1.0", log_level="WARNING"
    )

    @server.tool(
        description="Answer a question from the stored documents, with [N] citations; each "
        "source has its document, page (and printed page label), the passage and the "
        "highlighted sentences with their offsets in the passage."
    )
    async def answer(
        question: Annotated[str, Field(description="the question, in words")],
        collection: Collection = None,
        top_k: TopK = None,
        pages: Annotated[
            str | None, Field(description="only pages A-B of the documents, e.g. '3-7' or '4'")
        ] = None,
        mode: Annotated[
            Literal["hybrid", "single", "tree"],
            Field(
                description="hybrid: sub-questions routed to facts/pages/sections (default); "
                "single: one retrieval; tree: the best sections of several files"
            ),
        ] = "hybrid",
    ) -> Annotated[CallToolResult, Answer]:
        def work() -> Answer:
            asked = library.request(question, collection, top_k=top_k, pages=pages, mode=mode)
            return library.answer(asked)

        return await outcome(run, work)

    @server.tool(
        description="The passages that best match a query, with highlights, and no answer."
    )
    async def search(
        query: Annotated[str, Field(description="what to look for, in words")],
        collection: Collection = None,
        top_k: TopK = None,
    ) -> Annotated[CallToolResult, Sources]:
        return await outcome(run, lambda: library.search(query, collection, top_k))

    @server.tool(description="The documents stored, per collection, with their page counts.")
    async def list_documents(collection: Collection = None) -> Annotated[CallToolResult, Documents]:
        return await outcome(run, lambda: library.documents(collection))

    @server.tool(
        description=f"The stored text of a document's pages (at most {MAX_PAGES} a call), to "
        "check a citation against its page."
    )
    async def read_pages(
        document: Annotated[str, Field(description="the document's file name, as listed")],
        pages: Annotated[str, Field(description="a page 'N' or pages 'A-B', 1-based")],
        collection: Collection = None,
    ) -> Annotated[CallToolResult, Pages]:
        return await outcome(run, lambda: library.read_pages(document, pages, collection))

    _add_resources(server, library, run)
    return server


def _add_resources(server: MCPServer, library: Library, run: Run) -> None:
    @server.resource(
        "citerag://collections",
        name="collections",
        description="The collections that hold documents",
        mime_type="application/json",
    )
    async def collections() -> str:
        names: list[str] = await run(library.collections)
        return json.dumps(sorted(names))

    @server.resource(
        "citerag://collections/{collection}/documents",
        name="documents",
        description="The documents of one collection",
        mime_type="application/json",
    )
    async def documents(collection: str) -> str:
        try:
            listed: Documents = await run(lambda: library.documents(collection))
        except RagError as error:
            raise ResourceNotFoundError(str(error)) from None
        return listed.model_dump_json()
