"""Every HTTP error is JSON with one sentence: `{"error": {"message", "type", "code"}}`.

The shape is OpenAI's, so the official clients surface the sentence as the exception message.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from citerag.errors import (
    BackendUnavailable,
    ConfigError,
    InputError,
    LLMResponseError,
    ModelUnavailable,
    RagError,
)

log = logging.getLogger(__name__)

_ENGINE_STATUS: list[tuple[type[RagError], int]] = [
    (InputError, 400),
    (BackendUnavailable, 503),
    (ModelUnavailable, 503),
    (LLMResponseError, 502),
    (ConfigError, 500),
]
_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    413: "request_too_large",
    415: "unsupported_media_type",
    422: "invalid_request_error",
    502: "upstream_error",
    503: "service_unavailable",
}


class ApiError(Exception):
    """An error the API answers with `status` and one sentence."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Refused(ValueError):
    """A request field refused with the engine's own sentence (answered as it is, 422)."""


def error_body(status: int, message: str) -> dict[str, object]:
    return {"error": {"message": message, "type": _TYPES.get(status, "api_error"), "code": status}}


def error_response(status: int, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(error_body(status, message), status_code=status, headers=headers)


def status_of(error: RagError) -> int:
    for kind, status in _ENGINE_STATUS:
        if isinstance(error, kind):
            return status
    return 500


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, error: ApiError) -> JSONResponse:
        return error_response(error.status, error.message)

    @app.exception_handler(RagError)
    async def _engine_error(_request: Request, error: RagError) -> JSONResponse:
        return error_response(status_of(error), str(error))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, error: RequestValidationError) -> JSONResponse:
        return error_response(422, validation_sentence(error))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, error: StarletteHTTPException) -> JSONResponse:
        return error_response(error.status_code, http_sentence(error))

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error while serving a request")
        return error_response(500, f"The server failed unexpectedly ({type(error).__name__}).")


def validation_sentence(error: RequestValidationError) -> str:
    """The first problem of a request body, as a sentence naming the field."""
    problems = list(error.errors())
    if not problems:
        return "The request is not valid; check it against /docs."
    first = problems[0]
    if first.get("type") == "json_invalid":
        reason = first.get("ctx", {}).get("error", "it cannot be parsed")
        return f"The request body is not valid JSON ({reason}); send a JSON object as /docs shows."
    refused = first.get("ctx", {}).get("error")
    if first.get("type") == "value_error" and isinstance(refused, Refused):
        return str(refused)  # the engine's own sentence, as the CLI prints it
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "body") or "body"
    return f"The request's {where!r} is not valid ({first.get('msg', 'invalid')}); see /docs."


def http_sentence(error: StarletteHTTPException) -> str:
    if error.status_code == 404:
        return "There is no such endpoint; see /docs for the API."
    if error.status_code == 405:
        return "This endpoint does not accept that method; see /docs for the API."
    detail = str(error.detail).rstrip(".")
    return f"{detail}."
