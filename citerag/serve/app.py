"""The FastAPI app: a thin HTTP layer over one `Engine`, and the viewer at `/`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from citerag.article import DEFAULT_COLLECTION
from citerag.serve.api_errors import error_body, install_error_handlers
from citerag.serve.mcp_endpoint import mount_mcp
from citerag.serve.page_images import PageSource
from citerag.serve.routes_documents import router as documents_router
from citerag.serve.routes_query import router as query_router
from citerag.serve.state import ENGINE_THREADS, Served, ServedEngine
from citerag.serve.uploads import FileStore, UploadJobs

STATIC_DIR = Path(__file__).parent / "static"
MULTIPART_SLACK = 64 * 1024  # boundaries and headers around the file in an upload body


def create_app(
    engine: ServedEngine,
    pdf_folders: Sequence[Path] = (),
    default_collection: str = DEFAULT_COLLECTION,
) -> FastAPI:
    """The API over `engine` (its owner closes it); PDFs for the viewer come from the uploads
    and from `pdf_folders`; a question that names no collection asks `default_collection`."""
    settings = engine.settings
    files = FileStore(settings.storage.storage_dir / "uploads")
    state = Served(
        engine=engine,
        settings=settings,
        uploads=UploadJobs(engine, files),
        pages=PageSource(settings, files, pdf_folders),
        limiter=anyio.CapacityLimiter(ENGINE_THREADS),
        default_collection=default_collection,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with app.state.mcp_sessions():  # the /mcp endpoint's, while the app serves
            yield
        state.uploads.shutdown()

    app = FastAPIOffline(  # /docs and /redoc with their scripts served here, not from a CDN
        title="citerag",
        summary="Cited, highlighted answers over PDFs; OpenAI-compatible chat completions.",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.state.served = state
    install_error_handlers(app)
    app.include_router(query_router)
    app.include_router(documents_router)
    _add_viewer(app)
    app.state.mcp_sessions = mount_mcp(app, state)
    cap = int(settings.server.max_upload_mb * 1_048_576) + MULTIPART_SLACK
    app.add_middleware(BodyLimit, limit=cap, cap_mb=settings.server.max_upload_mb)
    origins = [o.strip() for o in settings.server.cors_origins.split(",") if o.strip()]
    if origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "X-API-Key"],
        )
    return app


def _add_viewer(app: FastAPI) -> None:
    @app.get("/", include_in_schema=False)
    async def viewer() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html")

    @app.get("/healthz", tags=["server"], summary="Liveness (needs no key)")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")


class BodyLimit:
    """Refuses request bodies over `limit` bytes with a 413, before the route reads them all.

    A declared Content-Length over the limit is refused at once; a chunked body is counted as
    it arrives and the response, whatever the route made of the cut-off body, becomes the 413.
    """

    def __init__(self, app: ASGIApp, limit: int, cap_mb: float) -> None:
        self.app = app
        self.limit = limit
        self.cap_mb = cap_mb

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in {"POST", "PUT"}:
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send)
            return
        await self._counted(scope, receive, send)

    async def _counted(self, scope: Scope, receive: Receive, send: Send) -> None:
        seen = {"bytes": 0, "over": False, "refused": False}

        async def counting_receive() -> Message:
            message = await receive()
            seen["bytes"] += len(message.get("body", b""))
            if seen["bytes"] > self.limit:
                seen["over"] = True
                return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if not seen["over"]:
                await send(message)
            elif not seen["refused"]:
                seen["refused"] = True
                await self._refuse(send)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not seen["over"]:
                raise
        if seen["over"] and not seen["refused"]:
            seen["refused"] = True
            await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        body = error_body(413, f"The upload is over the size limit of {self.cap_mb:g} MB.")
        await _send_json(send, 413, body)


async def _send_json(send: Send, status: int, body: Mapping[str, object]) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
