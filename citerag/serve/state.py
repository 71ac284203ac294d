"""What the routes share: the one engine of the process and the helpers built around it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Protocol, TypeVar

import anyio
from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials

from citerag.answer.contract import AnswerResult
from citerag.article import DEFAULT_COLLECTION
from citerag.engine import DocumentSummary
from citerag.ingest.pipeline import IngestOutcome, Progress
from citerag.mcp_server.library import LibraryEngine
from citerag.query.request import AnswerRequest
from citerag.serve.api_errors import ApiError
from citerag.serve.page_images import PageSource
from citerag.serve.security import BEARER, KEY_HEADER, check_api_key, given_key
from citerag.serve.uploads import UploadJobs
from citerag.settings import Settings
from citerag.types import DocumentRecord

T = TypeVar("T")
ENGINE_THREADS = 4  # questions answered at once; the rest wait their turn


class ServedEngine(LibraryEngine, Protocol):
    """The part of `citerag.engine.Engine` the API uses: what the modes and the MCP tools
    call, and more."""

    def ingest(
        self, path: Path, collection: str, progress: Progress | None = None
    ) -> IngestOutcome: ...

    def list_documents(self, collections: Sequence[str] | None = None) -> list[DocumentSummary]: ...

    def delete(self, name: str, collection: str) -> int: ...


@dataclass
class Served:
    engine: ServedEngine
    settings: Settings
    uploads: UploadJobs
    pages: PageSource
    limiter: anyio.CapacityLimiter
    default_collection: str = DEFAULT_COLLECTION  # a question that names none asks this one

    async def run(self, function: Callable[..., T], *args: object) -> T:
        """A blocking engine call on a worker thread, so the event loop keeps serving."""
        return await anyio.to_thread.run_sync(function, *args, limiter=self.limiter)

    def existing_collection(self, collection: str) -> str:
        if collection not in self.engine.docstore.collections():
            raise ApiError(
                404,
                f"Collection {collection!r} does not exist or has no documents; upload a PDF "
                f"to it (POST /api/collections/{collection}/documents) or see GET /api/documents.",
            )
        return collection

    def answer(self, request: AnswerRequest) -> AnswerResult:
        """The answer as `main.py query` gives it for the same options (one `Engine.answer`
        for both); with earlier turns, the question condensed from them first
        (`metadata.condensedQuestion`)."""
        self.existing_collection(request.collection)
        return self.engine.answer(request)

    def ready_document(self, collection: str, name: str) -> DocumentRecord:
        self.existing_collection(collection)
        records = self.engine.docstore.find_by_name(collection, name)
        ready = [r for r in records if r.status == "ready"]
        if not ready:
            raise ApiError(404, f"No document named {name!r} in collection {collection!r}.")
        return ready[0]


def served(request: Request) -> Served:
    state: Served = request.app.state.served
    return state


def require_key(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
    header: Annotated[str | None, Security(KEY_HEADER)],
) -> None:
    check_api_key(given_key(bearer, header), served(request).settings.server.api_key)


State = Annotated[Served, Depends(served)]
