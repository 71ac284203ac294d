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
