"""Styled text runs read from a PDF's text layer: the raw material of heading detection.

A run is a sequence of lines of one PyMuPDF block that share a style (size, weight, slant,
typeface) and case (a title in capitals and the lower-case line below it are two runs); pieces
of text on one baseline ("1." and its title) are one line, and a line that opens with
structural numbering starts a run of its own. Running headers and footers
(margin lines repeated on many pages, page numbers) are marked.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import pymupdf

from citerag.tree.patterns import numbering

BOLD_FLAG = 16
ITALIC_FLAG = 2
CENTER_TOLERANCE = 0.03  # a line whose middle is this close (share of page width) is centered
MAX_CENTERED_WIDTH = 0.8  # a line wider than this share of the page is body text, not centered
MIN_CAPITALS = 4  # letters a text in capitals has at least
SAME_BASELINE = 1.5  # points between the tops of two pieces of text on one line
MARGIN_BAND = 0.08  # top/bottom fraction of a page where running headers and footers live
RUNNING_SHARE = 0.3  # a margin text repeated on this share of pages is a running header
_DIGITS = re.compile(r"\d+")
PAGE_NUMBER = re.compile(r"^(?:page\s*)?[-–—]?\s*(?:\d{1,4}|[ivxlc]{1,6})\s*[-–—]?$", re.I)


@dataclass(frozen=True)
class Style:
    size: float
    bold: bool
    family: str
    italic: bool = False


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
    centered: bool = False  # its first line sits in the middle of the page


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
    height, width = float(page.rect.height), float(page.rect.width)
    runs: list[Run] = []
    for index, block in enumerate(content["blocks"]):
        current: Run | None = None
        for raw in _baseline_lines(block.get("lines", [])):
            line = _line(raw)
            if line is None:
                continue
            text, style, (y0, y1) = line
            x0, x1 = float(raw["bbox"][0]), float(raw["bbox"][2])
            centered = (
                abs((x0 + x1) / 2 - width / 2) <= width * CENTER_TOLERANCE
                and x1 - x0 <= width * MAX_CENTERED_WIDTH
            )
            if (
                current is not None
                and current.style == style
                and numbering(text) is None
                and in_capitals(current.text) == in_capitals(text)
            ):
                current.text = f"{current.text} {text}"
                current.y1, current.lines = y1, current.lines + 1
                continue
            margin = y1 < height * MARGIN_BAND or y0 > height * (1 - MARGIN_BAND)
            current = Run(page.number + 1, text, style, y0, y1, 1, margin, index)
            current.centered = centered
            runs.append(current)
    return runs


def in_capitals(text: str) -> bool:
    """Set in capitals: a few letters, none lower case ("CONSOLIDATED BALANCE SHEETS")."""
    letters = [ch for ch in text if ch.isalpha()]
    return len(letters) >= MIN_CAPITALS and not any(ch.islower() for ch in letters)


class _Span(TypedDict):
    """A span of `page.get_text("dict")`."""

    text: str
    flags: int
    font: str
    size: float


class _Line(TypedDict):
    spans: list[_Span]
    bbox: tuple[float, ...]


def _baseline_lines(lines: list[_Line]) -> list[_Line]:
    """The block's lines, pieces of text that share a line ("1." and its title) joined."""
    joined: list[_Line] = []
    for raw in lines:
        previous = joined[-1] if joined else None
        if previous is not None and abs(raw["bbox"][1] - previous["bbox"][1]) <= SAME_BASELINE:
            box = previous["bbox"]
            previous["spans"] = [*previous["spans"], _SPACE, *raw["spans"]]
            previous["bbox"] = (box[0], box[1], max(box[2], raw["bbox"][2]), box[3])
            continue
        joined.append({"spans": list(raw["spans"]), "bbox": tuple(raw["bbox"])})
    return joined


_SPACE: _Span = {"text": " ", "flags": 0, "font": "", "size": 0.0}


def _line(raw: _Line) -> tuple[str, Style, tuple[float, float]] | None:
    spans = [span for span in raw["spans"] if span["text"].strip()]
    if not spans:
        return None
    text = " ".join("".join(span["text"] for span in raw["spans"]).split())
    bold = all(span["flags"] & BOLD_FLAG or "bold" in span["font"].lower() for span in spans)
    italic = all(span["flags"] & ITALIC_FLAG or "ital" in span["font"].lower() for span in spans)
    size = round(max(span["size"] for span in spans), 1)
    family = spans[0]["font"].split("-")[0].split(",")[0]
    style = Style(size, bold, family, italic)
    return text, style, (float(raw["bbox"][1]), float(raw["bbox"][3]))


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
