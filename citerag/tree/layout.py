"""Styled text runs read from a PDF's text layer: the raw material of heading detection.

A run is a sequence of lines of one PyMuPDF block that share a style (size, weight, typeface).
Running headers and footers (margin lines repeated on many pages, page numbers) are marked.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymupdf

BOLD_FLAG = 16
MARGIN_BAND = 0.08  # top/bottom fraction of a page where running headers and footers live
RUNNING_SHARE = 0.3  # a margin text repeated on this share of pages is a running header
_DIGITS = re.compile(r"\d+")
PAGE_NUMBER = re.compile(r"^(?:page\s*)?[-–—]?\s*(?:\d{1,4}|[ivxlc]{1,6})\s*[-–—]?$", re.I)


@dataclass(frozen=True)
class Style:
    size: float
    bold: bool
    family: str


@dataclass
class Run:
    page: int  # 1-based
    text: str
    style: Style
    y0: float
    y1: float
    lines: int
    in_margin: bool
    block: int  # index of the PyMuPDF block on its page
    running: bool = False


def read_runs(path: Path) -> tuple[list[Run], int]:
    """Every styled run of the PDF in reading order, and the page count."""
    runs: list[Run] = []
    with pymupdf.open(path) as doc:
        for page in doc.pages():
            runs.extend(_page_runs(page))
        pages = doc.page_count
    _mark_running(runs, pages)
    return runs, pages


def read_outline(path: Path) -> list[tuple[int, str, int]]:
    """The PDF's bookmarks as (level, title, page); empty when it has none."""
    with pymupdf.open(path) as doc:
        return [(int(level), str(title), int(page)) for level, title, page, *_ in doc.get_toc()]


def body_style(runs: list[Run]) -> Style:
    """The style that carries the most characters."""
    weights: Counter[Style] = Counter()
    for run in runs:
        weights[run.style] += len(run.text)
    return weights.most_common(1)[0][0] if weights else Style(10.0, False, "")


def _page_runs(page: pymupdf.Page) -> list[Run]:
    content = page.get_text("dict", flags=pymupdf.TEXTFLAGS_TEXT)
    height = float(page.rect.height)
    runs: list[Run] = []
    for index, block in enumerate(content["blocks"]):
        current: Run | None = None
        for raw in block.get("lines", []):
            line = _line(raw)
            if line is None:
                continue
            text, style, (y0, y1) = line
            if current is not None and current.style == style:
                current.text = f"{current.text} {text}"
                current.y1, current.lines = y1, current.lines + 1
                continue
            margin = y1 < height * MARGIN_BAND or y0 > height * (1 - MARGIN_BAND)
            current = Run(page.number + 1, text, style, y0, y1, 1, margin, index)
            runs.append(current)
    return runs


def _line(raw: dict[str, Any]) -> tuple[str, Style, tuple[float, float]] | None:
    spans = [span for span in raw["spans"] if span["text"].strip()]
    if not spans:
        return None
    text = " ".join("".join(span["text"] for span in raw["spans"]).split())
    bold = all(span["flags"] & BOLD_FLAG or "bold" in span["font"].lower() for span in spans)
    size = round(max(span["size"] for span in spans), 1)
    family = spans[0]["font"].split("-")[0].split(",")[0]
    return text, Style(size, bold, family), (float(raw["bbox"][1]), float(raw["bbox"][3]))


def _margin_key(run: Run) -> str:
    """Text (digits as #) and style: a bold heading at the top of a page is not the small
    running header that repeats its words."""
    style = run.style
    text = _DIGITS.sub("#", run.text.casefold())
    return f"{text}|{style.size}|{style.bold}"


def _mark_running(runs: list[Run], pages: int) -> None:
    """Page numbers and margin texts that repeat on many pages are running headers/footers."""
    counts: Counter[str] = Counter()
    for page in range(1, pages + 1):
        keys = {_margin_key(r) for r in runs if r.page == page and r.in_margin}
        counts.update(keys)
    threshold = max(3.0, RUNNING_SHARE * pages)
    for run in runs:
        if not run.in_margin:
            continue
        if PAGE_NUMBER.match(run.text) or counts[_margin_key(run)] >= threshold:
            run.running = True
