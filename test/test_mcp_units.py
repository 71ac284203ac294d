"""The MCP tools' page labels: read from the file a document was ingested from, only while that
file still holds the bytes that were ingested."""

from __future__ import annotations

from pathlib import Path

import pymupdf
from helpers import text_pdf

from citerag.ingest.pipeline import ingest_key
from citerag.ingest.sync import file_sha256
from citerag.mcp_server.labels import PageLabels
from citerag.settings import Settings
from citerag.types import DocumentRecord


def labelled_pdf(path: Path) -> Path:
    """Four pages: two front-matter pages 'i', 'ii', then '1', '2'."""
    with pymupdf.open() as doc:
        for number in range(4):
            doc.new_page().insert_text((72, 72), f"Page {number + 1} text.")
        doc.set_page_labels(
            [
                {"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
                {"startpage": 2, "prefix": "", "style": "D", "firstpagenum": 1},
            ]
        )
        doc.save(path)
    return path


def record_of(path: Path, settings: Settings) -> DocumentRecord:
    doc_id = ingest_key(file_sha256(path), settings)
    return DocumentRecord(doc_id, path.name, "c", 4, "pymupdf", "ready", 1.0, str(path))


def test_labels_come_from_the_source_file_while_it_holds_the_ingested_bytes(
    tmp_path: Path,
) -> None:
    settings = Settings(storage_dir=tmp_path / "storage")
    labels = PageLabels(settings)
    path = labelled_pdf(tmp_path / "book.pdf")
    record = record_of(path, settings)
    assert labels.of(record) == {1: "i", 2: "ii", 3: "1", 4: "2"}
    text_pdf(path, pages=4, subject="Other bytes now")  # the file changed since it was ingested
    assert labels.of(record) == {}


def test_no_labels_without_a_source_or_without_labels_in_the_pdf(tmp_path: Path) -> None:
    settings = Settings(storage_dir=tmp_path / "storage")
    labels = PageLabels(settings)
    plain = record_of(text_pdf(tmp_path / "plain.pdf", pages=2), settings)
    assert labels.of(plain) == {}
    uploaded = DocumentRecord("d", "upload.pdf", "c", 2, "pymupdf", "ready", 1.0, "")
    assert labels.of(uploaded) == {}


def _checked(api_key: str, host: str, origin: str | None = None) -> int | None:
    """The status the MCP endpoint's host check gives a request (None: let through)."""
    import asyncio

    from mcp.server.transport_security import TransportSecurityMiddleware
    from starlette.requests import Request

    from citerag.serve.mcp_endpoint import transport_security

    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    request = Request({"type": "http", "method": "GET", "headers": headers})
    middleware = TransportSecurityMiddleware(transport_security(api_key))
    refused = asyncio.run(middleware.validate_request(request))
    return None if refused is None else refused.status_code


def test_without_a_key_mcp_answers_loopback_names_only() -> None:
    # a web page whose name was rebound to 127.0.0.1 cannot read the library through a browser
    assert _checked("", "127.0.0.1:8000") is None
    assert _checked("", "localhost:8000", "http://localhost:8000") is None
    assert _checked("", "evil.example:8000") == 421
    assert _checked("", "127.0.0.1:8000", "http://evil.example") == 403
    # with a key the key guards it: a server reached by its own name answers
    assert _checked("secret", "rag.internal:8000") is None
