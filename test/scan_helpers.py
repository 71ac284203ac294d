"""PDFs the OCR and page-label tests write: text pages, and the same pages as scans (150-dpi
images with no text layer, as a scanner gives them)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

import pymupdf
import pytest

from citerag.parse.ocr import missing_engine

SCAN_DPI = 150
needs_tesseract = pytest.mark.skipif(
    missing_engine("eng") is not None,
    reason="Tesseract with English data is not installed (bash setup.sh installs it)",
)


def text_pdf(path: Path, pages: Sequence[Sequence[str]]) -> Path:
    """One page per entry, each paragraph a few lines of 12-point Helvetica."""
    with pymupdf.open() as doc:
        for paragraphs in pages:
            page = doc.new_page()
            y = 90.0
            for paragraph in paragraphs:
                box = pymupdf.Rect(72, y, page.rect.width - 72, y + 120)
                page.insert_textbox(box, paragraph, fontsize=12, fontname="helv")
                y += 130
        doc.save(path)
    return path


def scanned_copy(source: Path, target: Path, scanned: Collection[int] | None = None) -> Path:
    """`source` with the given 1-based pages (all by default) replaced by their 150-dpi image."""
    with pymupdf.open(source) as original, pymupdf.open() as out:
        for index, page in enumerate(original):
            if scanned is not None and index + 1 not in scanned:
                out.insert_pdf(original, from_page=index, to_page=index)
                continue
            pixmap = page.get_pixmap(dpi=SCAN_DPI, colorspace=pymupdf.csGRAY, alpha=False)
            sheet = out.new_page(width=page.rect.width, height=page.rect.height)
            sheet.insert_image(sheet.rect, pixmap=pixmap)
        out.save(target)
    return target
