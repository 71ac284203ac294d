"""The scanned pages of a PDF read by OCR, as blocks, while the rest keep their text layer.

Rendering happens here, in the parsing thread (PyMuPDF is not thread-safe); the engine then reads
the pages side by side (`ocr.read_all`). Without an engine the scanned pages are listed as unread,
and the parse goes on with the text pages.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import pymupdf

from citerag.parse.ocr import (
    NEARLY_EMPTY_CHARS,
    OcrOptions,
    OcrUnavailable,
    PageProgress,
    install_hint,
    missing_engine,
    needs_ocr,
    paragraphs,
    read_all,
    render,
)
from citerag.types import Block

log = logging.getLogger(__name__)


@dataclass
class ScannedPages:
    blocks: dict[int, list[Block]] = field(default_factory=dict)  # 1-based page -> its blocks
    unread: list[int] = field(default_factory=list)  # scanned, but no engine could read them
    languages: str = ""  # what they were read in; "" when no page was


def read_scanned(
    doc: pymupdf.Document,
    chars: Mapping[int, int],
    options: OcrOptions,
    progress: PageProgress | None = None,
) -> ScannedPages:
    """OCR the pages that need it (`ocr.needs_ocr`); `chars` is each 1-based page's count of
    text-layer characters, so that only nearly empty pages are looked at."""
    wanted = [
        number
        for number, count in chars.items()
        if count < NEARLY_EMPTY_CHARS and needs_ocr(doc[number - 1], count)
    ]
    if not wanted:
        return ScannedPages()
    if missing_engine(options.languages) is not None:
        return ScannedPages(unread=wanted)
    images = {number: render(doc[number - 1]) for number in wanted}
    try:
        words = read_all(images, options.languages, progress)
    except OcrUnavailable as error:
        log.warning("%s: OCR failed (%s); its scanned pages are left unread.", doc.name, error)
        return ScannedPages(unread=wanted)
    blocks = {number: paragraphs(found) for number, found in words.items()}
    return ScannedPages(blocks=blocks, languages=options.languages)


def unread_warning(name: str, unread: list[int], languages: str) -> str:
    """The one sentence a user reads when scanned pages were left unread."""
    shown = ", ".join(str(n) for n in unread[:10]) + (", …" if len(unread) > 10 else "")
    pages = f"page {shown} looks" if len(unread) == 1 else f"pages {shown} look"
    reason = missing_engine(languages) or "the OCR engine failed on them"
    return (
        f"{name}: {pages} scanned and {'was' if len(unread) == 1 else 'were'} left unread "
        f"because {reason}; {install_hint(languages)} and ingest it again."
    )
