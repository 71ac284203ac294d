"""Checks a PDF is usable before anything is parsed or written."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from citerag.errors import InputError

# 50 US Letter pages' area (an A0 poster is 17): PDF allows 200 x 200 inch pages, and one such
# page costs seconds and GBs to lay out or render for no text a reader could use.
MAX_PAGE_AREA_PT2 = 50 * 612 * 792


@dataclass(frozen=True)
class PdfInfo:
    sha256: str  # of the file bytes: the document's identity
    page_count: int


def inspect_pdf(path: Path) -> PdfInfo:
    """Hash and page count of a readable, unencrypted PDF with a text layer, or an InputError."""
    if not path.exists():
        if path.is_symlink():
            raise InputError(
                f"{path} is a symbolic link that leads nowhere (a loop or a missing target); "
                "point it at a PDF or give the file itself."
            )
        raise InputError(f"{path} does not exist; check the path and try again.")
    if not path.is_file():
        raise InputError(f"{path} is not a file; give the path of a PDF file.")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(
            f"{path} cannot be read ({error.strerror or error}); check its permissions and try "
            "again."
        ) from None
    doc = _open_pdf(path, data)
    try:
        if doc.needs_pass:
            raise InputError(
                f"{path.name} is encrypted with a password; save an unencrypted copy and try again."
            )
        if doc.page_count == 0:
            raise InputError(f"{path.name} has no pages; check that the file is a complete PDF.")
        _check_page_sizes(path, doc)
        if not any(page.get_text("text").strip() for page in doc.pages()):
            raise InputError(
                f"{path.name} has no text layer (it looks scanned); run OCR on it first with "
                "`ocrmypdf in.pdf out.pdf` or configure a MinerU model tier with OCR."
            )
        return PdfInfo(sha256=hashlib.sha256(data).hexdigest(), page_count=doc.page_count)
    finally:
        doc.close()


def _check_page_sizes(path: Path, doc: pymupdf.Document) -> None:
    for page in doc.pages():
        rect = page.rect
        if rect.width * rect.height > MAX_PAGE_AREA_PT2:
            raise InputError(
                f"{path.name} has a page of {rect.width:.0f} x {rect.height:.0f} pt (page "
                f"{page.number + 1}), larger than this engine reads (50 letter pages' area); "
                "split or scale that page down and try again."
            )


def _open_pdf(path: Path, data: bytes) -> pymupdf.Document:
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception:  # PyMuPDF raises several types for unreadable input
        raise InputError(
            f"{path.name} is not a readable PDF (it may be corrupt or another file type); "
            "give a valid PDF file."
        ) from None
    if not doc.is_pdf:
        doc.close()
        raise InputError(f"{path.name} is not a PDF; give a PDF file.")
    return doc
