"""The MCP server over streamable HTTP at `/mcp` in the API's app (`main.py serve`).

It answers from the app's engine on the app's worker threads (`citerag.mcp_server`), behind the
same API key as every API route (`Authorization: Bearer KEY` or `X-API-Key`); stateless, so
clients need no session affinity and any number of server processes can serve it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import FastAPI
from fastapi.security import HTTPAuthorizationCredentials
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from citerag.mcp_server.library import Library
from citerag.mcp_server.server import build_server
from citerag.serve.api_errors import ApiError, error_response
from citerag.serve.security import check_api_key, given_key
from citerag.serve.state import Served

MCP_PATH = "/mcp"
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def transport_security(api_key: str) -> TransportSecuritySettings:
    """With an API key, any Host (a server reached by its own name, `serve --host 0.0.0.0`): the
    key guards the endpoint. Without one, loopback Host and Origin names only, so that a web page
    whose name is rebound to 127.0.0.1 cannot read the library through a browser."""
    if api_key:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*_LOOPBACK, *(f"{host}:*" for host in _LOOPBACK)],
        allowed_origins=[f"http://{host}{port}" for host in _LOOPBACK for port in ("", ":*")],
    )


def mount_mcp(app: FastAPI, state: Served) -> Callable[[], AbstractAsyncContextManager[None]]:
    """Add `/mcp` to `app`; what it returns is entered while the app serves (the sessions)."""

    async def run(function: Callable[[], Any]) -> Any:
        return await state.run(function)

    server = build_server(Library(state.engine, state.default_collection), run)
    server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=transport_security(state.settings.server.api_key),
    )
    handler = KeyChecked(server.session_manager.asgi_app, state)
    app.router.routes.append(Route(MCP_PATH, handler, methods=["GET", "POST", "DELETE"]))
    return server.session_manager.run


class KeyChecked:
    """The MCP endpoint behind the API key: a 401 with the API's sentence without it."""

    def __init__(self, app: ASGIApp, state: Served) -> None:
        self._app = app
        self._state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            check_api_key(_given_key(headers), self._state.settings.server.api_key)
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
