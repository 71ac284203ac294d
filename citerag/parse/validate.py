"""Checks a PDF is usable before anything is parsed or written."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from citerag.errors import InputError
from citerag.parse.ocr import install_hint, missing_engine, needs_ocr
from citerag.settings import DEFAULT_OCR_LANGUAGES

# 50 US Letter pages' area (an A0 poster is 17): PDF allows 200 x 200 inch pages, and one such
# page costs seconds and GBs to lay out or render for no text a reader could use.
MAX_PAGE_AREA_PT2 = 50 * 612 * 792


@dataclass(frozen=True)
class PdfInfo:
    sha256: str  # of the file bytes: the document's identity
    page_count: int
    scanned_pages: tuple[int, ...] = ()  # 1-based: the pages only OCR can read


def inspect_pdf(path: Path, ocr_languages: str = DEFAULT_OCR_LANGUAGES) -> PdfInfo:
    """Hash and page count of a readable, unencrypted PDF with a text layer or scanned pages
    OCR can read in `ocr_languages`, or an InputError."""
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
        text_pages, scanned = _text_and_scanned_pages(doc)
        if not text_pages:
            _check_readable_scan(path, scanned, ocr_languages)
        return PdfInfo(hashlib.sha256(data).hexdigest(), doc.page_count, scanned)
    finally:
        doc.close()


def _text_and_scanned_pages(doc: pymupdf.Document) -> tuple[int, tuple[int, ...]]:
    """How many pages have a text layer of their own, and which only OCR can read."""
    text_pages, scanned = 0, []
    for page in doc.pages():
        chars = len("".join(page.get_text("text").split()))
        if needs_ocr(page, chars):
            scanned.append(page.number + 1)
        elif chars:
            text_pages += 1
    return text_pages, tuple(scanned)


def _check_readable_scan(path: Path, scanned: tuple[int, ...], languages: str) -> None:
    """A file with no text of its own must have scanned pages an installed engine can read."""
    missing = missing_engine(languages) if scanned else None
    if scanned and missing is None:
        return
    ink = "it looks scanned" if scanned else "and nothing on its pages to read"
    advice = f"; {missing}: {install_hint(languages)}, or" if missing else "; if it is a scan,"
    raise InputError(
        f"{path.name} has no text layer ({ink}){advice} run OCR on it first with "
        "`ocrmypdf in.pdf out.pdf` or configure a MinerU model tier with OCR."
    )


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
