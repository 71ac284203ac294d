"""The MCP server over streamable HTTP, mounted at `/mcp` in the API's app (`main.py serve`).

It answers from the app's engine on the app's worker threads, behind the same API key as every
API route (`Authorization: Bearer KEY` or `X-API-Key`, `citerag.serve.security`); stateless, so
any number of clients and server processes can share it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.security import HTTPAuthorizationCredentials
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from citerag.engine import Engine
from citerag.mcp_server.library import Library
from citerag.mcp_server.server import build_server
from citerag.serve.api_errors import ApiError, error_response
from citerag.serve.app import AppMount
from citerag.serve.security import check_api_key, given_key
from citerag.serve.state import Served

MCP_PATH = "/mcp"


def mcp_mount(host: str = "127.0.0.1") -> AppMount:
    """What `create_app` calls to add `/mcp` to its app; `host` is the interface served (the
    SDK turns DNS-rebinding protection on for a loopback one)."""

    def mount(app: FastAPI, state: Served) -> AbstractAsyncContextManager[None]:
        engine = state.engine
        assert isinstance(engine, Engine)  # `serve` serves an Engine; the fakes of tests do not
        library = Library(engine, state.default_collection)

        async def run(function: Callable[[], Any]) -> Any:
            return await state.run(function)

        server = build_server(library, run)
        server.streamable_http_app(stateless_http=True, json_response=True, host=host)
        handler = KeyChecked(server.session_manager.asgi_app, state)
        app.router.routes.append(Route(MCP_PATH, handler, methods=["GET", "POST", "DELETE"]))

        @asynccontextmanager
        async def running() -> AsyncIterator[None]:
            async with server.session_manager.run():
                yield

        return running()

    return mount


class KeyChecked:
    """The MCP endpoint behind the API key: a 401 with the API's sentence without it."""

    def __init__(self, app: ASGIApp, state: Served) -> None:
        self._app = app
        self._state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            check_api_key(_given_key(headers), self._state.settings.api_key)
        except ApiError as error:
            await error_response(error.status, error.message)(scope, receive, send)
            return
        await self._app(scope, receive, send)


def _given_key(headers: dict[str, str]) -> str:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    bearer = None
    if scheme.lower() == "bearer":
        bearer = HTTPAuthorizationCredentials(scheme=scheme, credentials=token)
    return given_key(bearer, headers.get("x-api-key"))
