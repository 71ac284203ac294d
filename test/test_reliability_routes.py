"""Every route of the app, found from the app itself so a new route is covered the day it is
added: with an API key set, each one but the public few refuses a request without the key, and
no name parameter (path, query or body) lets a traversal name through."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from serve_fakes import KEY, FakeEngine, make_client

PUBLIC = {"/", "/healthz", "/docs", "/docs/oauth2-redirect", "/redoc"}
NAME_PARAMETERS = {"collection", "name", "job_id", "model"}
SAFE = {"collection": "demo", "name": "a.pdf", "job_id": "0" * 32, "page": "1", "model": "demo"}
HOSTILE = [
    "..",
    "../../etc/passwd",
    "..\\..\\windows",
    "%2e%2e%2fsecret",
    "../evil.pdf",
    "%2e%2e%2fevil.pdf",
    ".hidden",
    "a\x00b.pdf",
    "~root",
    "x" * 300,
]
BODIES: dict[str, dict[str, Any]] = {
    "/api/rag/query": {"query": "How?", "collection": "demo"},
    "/v1/chat/completions": {"model": "demo", "messages": [{"role": "user", "content": "How?"}]},
    "/api/collections/{collection}/documents/{name}/pages/{page}/boxes": {"highlights": ["a"]},
}


def api_routes(app: FastAPI) -> Iterator[tuple[APIRoute, str]]:
    """(route, method) for every API route, those of included routers too."""

    def walk(routes: list[Any], prefix: str) -> Iterator[tuple[APIRoute, str]]:
        for route in routes:
            if isinstance(route, APIRoute):
                for method in sorted((route.methods or set()) - {"HEAD"}):
                    yield route, method
            elif hasattr(route, "original_router"):
                extra = route.include_context.prefix if hasattr(route, "include_context") else ""
                yield from walk(route.original_router.routes, prefix + extra)

    return walk(list(app.routes), "")


def url_of(route: APIRoute, values: dict[str, str]) -> str:
    """The route's path with each parameter percent-encoded (a client sends no raw NUL)."""
    return re.sub(r"\{(\w+)\}", lambda m: quote(values[m.group(1)], safe=""), route.path)


def is_upload(route: APIRoute, method: str) -> bool:
    return route.path.endswith("/documents") and method == "POST"


def request(
    client: TestClient,
    route: APIRoute,
    method: str,
    values: dict[str, str],
    headers: dict[str, str] | None = None,
) -> Any:
    url = url_of(route, values)
    query = {p.name: values[p.name] for p in route.dependant.query_params if p.name in values}
    body = BODIES.get(route.path)
    if body is not None:
        body = {k: values.get(k, v) if k in NAME_PARAMETERS else v for k, v in body.items()}
    if is_upload(route, method):
        files = {"file": (values["name"], b"%PDF-1.7 x", "application/pdf")}
        return client.request(method, url, params=query, files=files, headers=headers)
    return client.request(method, url, params=query, json=body, headers=headers)


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[tuple[TestClient, FakeEngine]]:
    client, engine = make_client(tmp_path, api_key=KEY)
    with client:
        yield client, engine


def test_the_route_list_sees_every_api_route(keyed: tuple[TestClient, FakeEngine]) -> None:
    paths = {route.path for route, _ in api_routes(keyed[0].app)}  # type: ignore[arg-type]
    expected = {"/api/rag/query", "/v1/chat/completions", "/v1/models", "/api/uploads/{job_id}"}
    assert expected <= paths
    assert "/api/collections/{collection}/documents/{name}/pages/{page}/image" in paths


def test_every_route_but_the_public_ones_needs_the_key(
    keyed: tuple[TestClient, FakeEngine],
) -> None:
    client, engine = keyed
    open_routes = []
    for route, method in api_routes(client.app):  # type: ignore[arg-type]
        if route.path in PUBLIC:
            continue
        for headers in (None, {"Authorization": "Bearer wrong"}, {"X-API-Key": "wrong"}):
            response = request(client, route, method, SAFE, headers)
            if response.status_code != 401:
                open_routes.append(f"{method} {route.path} {headers}: {response.status_code}")
    assert open_routes == []
    assert engine.asked == [] and engine.ingested == []
    for path in sorted(PUBLIC - {"/docs/oauth2-redirect"}):
        assert client.get(path).status_code == 200, path


def test_no_name_parameter_of_any_route_lets_a_traversal_name_through(
    keyed: tuple[TestClient, FakeEngine], tmp_path: Path
) -> None:
    client, engine = keyed
    secret = tmp_path / "secret"
    secret.write_text("not for the API")
    headers = {"Authorization": f"Bearer {KEY}"}
    let_through, tried = [], set()
    for route, method in api_routes(client.app):  # type: ignore[arg-type]
        names = set(re.findall(r"\{(\w+)\}", route.path))
        names |= {p.name for p in route.dependant.query_params}
        names |= set(BODIES.get(route.path, {}))
        if is_upload(route, method):
            names.add("name")  # the multipart file name
        for parameter in sorted(names & NAME_PARAMETERS):
            tried.add(f"{method} {route.path} {parameter}")
            for hostile in HOSTILE:
                response = request(client, route, method, {**SAFE, parameter: hostile}, headers)
                message = response.json().get("error", {}).get("message", "")
                refused = 400 <= response.status_code < 500 and response.status_code != 401
                if not refused or not message.endswith("."):
                    let_through.append(
                        f"{method} {route.path} {parameter}={hostile!r}: "
                        f"{response.status_code} {response.text[:80]}"
                    )
    assert let_through == []
    assert len(tried) >= 14, sorted(tried)  # each name parameter of each route was tried
    assert engine.asked == [] and engine.ingested == []
    stored = tmp_path / "storage"
    assert not [p for p in stored.rglob("*") if p.is_file() and p.suffix == ".pdf"]
