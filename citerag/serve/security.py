"""What a request must pass before it reaches the engine: the API key and safe names."""

from __future__ import annotations

import hmac
import re

from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from citerag.engine import check_collection_name
from citerag.errors import InputError
from citerag.serve.api_errors import ApiError
from citerag.text.names import display_name

_UNSAFE = re.compile(r"[/\\\x00-\x1f]")
MAX_NAME_CHARS = 200


# The two ways a client may send the key; declared through fastapi.security so that /docs
# shows them (its "Authorize" button) and each route's OpenAPI entry names them.
BEARER = HTTPBearer(auto_error=False, description="`Authorization: Bearer KEY`")
KEY_HEADER = APIKeyHeader(name="X-API-Key", auto_error=False, description="`X-API-Key: KEY`")


def given_key(bearer: HTTPAuthorizationCredentials | None, header: str | None) -> str:
    """The key the request sent: the bearer token when there is one, else `X-API-Key`."""
    if bearer is not None and bearer.credentials.strip():
        return bearer.credentials.strip()
    return header or ""


def check_api_key(given: str, expected: str) -> None:
    """Nothing when no key is configured; else a 401 unless `given` is the key."""
    if not expected:
        return
    if not given:
        raise ApiError(401, "This server needs an API key; send it as 'Authorization: Bearer KEY'.")
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise ApiError(401, "The API key is wrong; send the key the server was configured with.")


def safe_collection(name: str) -> str:
    """A collection name the engine accepts (letters, digits, '_', '-'), else a 400."""
    try:
        return check_collection_name(name)
    except InputError as error:
        raise ApiError(400, str(error)) from None


# Browsers and httpx write '"', CR and LF in a multipart filename as %22, %0D and %0A (WHATWG's
# form encoding) and the multipart parser does not undo it: undo exactly those three.
_FORM_ESCAPES = {"%22": '"', "%0D": "\r", "%0A": "\n"}


def multipart_file_name(raw: str) -> str:
    """The file name the user chose, from a multipart upload's `filename`."""
    return re.sub(
        "%22|%0D|%0A", lambda m: _FORM_ESCAPES[m.group(0).upper()], raw, flags=re.IGNORECASE
    )


def safe_document_name(name: str) -> str:
    """A plain file name: no folders, no '..', no control characters, else a 400; its
    bidirectional controls neutralised as a document's name is (`display_name`), so an upload
    is stored, and a document found, under the name that listings show."""
    cleaned = name.strip()
    if (
        not cleaned
        or len(cleaned) > MAX_NAME_CHARS
        or _UNSAFE.search(cleaned)
        or cleaned.startswith(".")
    ):
        raise ApiError(
            400,
            f"Document name {name!r} is not allowed; use a plain file name without folders, "
            "'..' or a leading dot.",
        )
    return display_name(cleaned)
