"""Fast layout parsing from the PDF text layer with PyMuPDF.

Headings come from font statistics (none of our PDFs has an outline): the most common
(size, bold) style is body text; larger or bold-only short lines are titles, ranked by size.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

from citerag.parse.ocr import OcrOptions, PageProgress
from citerag.parse.page_labels import page_labels
from citerag.parse.picture_text import read_pictures, with_pictures
from citerag.parse.scanned import ScannedPages, read_scanned
from citerag.parse.tables import FoundTable, find_tables
from citerag.types import BBox, Block, Page, ParsedDocument

BOLD_FLAG = 16
HEADING_SIZE_RATIO = 1.15
MAX_HEADING_CHARS = 120
MAX_HEADING_LINES = 3
MAX_TITLE_LEVEL = 4
MARGIN_BAND = 0.08  # top/bottom fraction of a page where running headers and footers live
RUNNING_SHARE = 0.5  # a margin line repeated on at least this share of pages is dropped

FIGURE_CAPTION = re.compile(r"^(?:Figure|Fig\.?)\s*(\d+(?:\.\d+)*)\s*[:.]", re.IGNORECASE)
TABLE_CAPTION = re.compile(r"^Table\s+(\d+(?:\.\d+)*)\s*[:.]", re.IGNORECASE)
EQUATION_LABEL = re.compile(r"^(?P<body>.+?)\s*\((?P<label>\d+(?:\.\d+)*)\)$", re.DOTALL)
MATH_SIGNS = re.compile(r"[=Σ∑∫√≤≥≈±×÷∂∞∏]")
SECTION_NUMBER = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+\S")
CAPTION_DISTANCE = 40.0  # points between a table and its caption


@dataclass(frozen=True)
class Line:
    text: str
    rect: pymupdf.Rect
    size: float
    bold: bool

    @property
    def style(self) -> tuple[float, bool]:
        return (round(self.size, 1), self.bold)


@dataclass
class RawPage:
    """One page as read from PyMuPDF, before lines are classified."""

    number: int
    rect: pymupdf.Rect
    blocks: list[list[Line]]
    tables: list[FoundTable]
    chars: int = 0  # text-layer characters other than spaces
    lines: list[tuple[str, float, float]] = field(default_factory=list)  # (text, y0, y1) each
    scanned: list[Block] | None = None  # the blocks OCR read, for a scanned page


class PyMuPDFParser:
    """Pages from the text layer; scanned pages by OCR (`options`), reported to `progress`."""

    name = "pymupdf"

    def __init__(
        self, options: OcrOptions | None = None, progress: PageProgress | None = None
    ) -> None:
        self._ocr = options or OcrOptions()
        self._progress = progress

    def parse(self, path: Path, doc_id: str) -> ParsedDocument:
        with pymupdf.open(path) as doc:
            raw_pages = [_read_page(page) for page in doc.pages()]
            chars = {raw.number: raw.chars for raw in raw_pages}
            scans = read_scanned(doc, chars, self._ocr, self._progress)
            text_pages = [n for n in chars if n not in scans.blocks]
            pictures = read_pictures(doc, text_pages, self._ocr, self._progress)
            labels = page_labels(doc, [raw.lines for raw in raw_pages])
        raw_pages = [_with_scan(raw, scans) for raw in raw_pages]
        body_style = _body_style(raw_pages)
        running = _running_lines(raw_pages)
        levels = _heading_levels(raw_pages, body_style)
        shown: set[str] = set()  # running lines already kept, on the first page printing them
        pages = [_build_page(raw, body_style, running, levels, shown) for raw in raw_pages]
        pages = [with_pictures(p, pictures.blocks.get(p.number, [])) for p in pages]
        for page, label in zip(pages, labels, strict=True):
            page.label = label
        return ParsedDocument(
            doc_id=doc_id,
            name=path.name,
            parser=self.name,
            pages=pages,
            ocr_languages=scans.languages,
            picture_ocr=self._ocr.languages if self._ocr.pictures else "",
            unread_pages=scans.unread,
        )


def _with_scan(raw: RawPage, scans: ScannedPages) -> RawPage:
    """A scanned page keeps only what OCR read: its few text-layer characters (a stamped page
    number) are read again with the rest, and take no part in the document's styles."""
    found = scans.blocks.get(raw.number)
    if found is None:
        return raw
    return RawPage(raw.number, raw.rect, [], [], raw.chars, raw.lines, found)


def _read_page(page: pymupdf.Page) -> RawPage:
    # One text extraction serves the table finder's words and the lines (the same flags).
    textpage = page.get_textpage(flags=pymupdf.TEXTFLAGS_TEXT)
    tables = find_tables(page, textpage)
    blocks: list[list[Line]] = []
    content = page.get_text("dict", textpage=textpage)
    chars = 0
    all_lines: list[tuple[str, float, float]] = []
    for block in content["blocks"]:
        lines = [line for raw in block.get("lines", []) if (line := _line(raw)) is not None]
        chars += sum(len(line.text.replace(" ", "")) for line in lines)
        all_lines += [(line.text, line.rect.y0, line.rect.y1) for line in lines]
        lines = [line for line in lines if not _inside_any_table(line.rect, tables)]
        if lines:
            blocks.append(lines)
    return RawPage(page.number + 1, page.rect, blocks, tables, chars, all_lines)


def _line(raw: dict) -> Line | None:
    spans = [span for span in raw["spans"] if span["text"].strip()]
    if not spans:
        return None
    text = " ".join("".join(span["text"] for span in raw["spans"]).split())
    bold = all(span["flags"] & BOLD_FLAG or "bold" in span["font"].lower() for span in spans)
    size = max(span["size"] for span in spans)
    return Line(text=text, rect=pymupdf.Rect(raw["bbox"]), size=size, bold=bold)


def _inside_any_table(rect: pymupdf.Rect, tables: list[FoundTable]) -> bool:
    centre = pymupdf.Point((rect.x0 + rect.x1) / 2, (rect.y0 + rect.y1) / 2)
    return any(centre in table.rect for table in tables)


def _body_style(pages: list[RawPage]) -> tuple[float, bool]:
    weights: Counter[tuple[float, bool]] = Counter()
    for page in pages:
        for block in page.blocks:
            for line in block:
                weights[line.style] += len(line.text)
    return weights.most_common(1)[0][0] if weights else (10.0, False)


def _margin_key(line: Line, page_rect: pymupdf.Rect) -> str | None:
    """A page-independent key for a line in the top or bottom band, else None."""
    band = page_rect.height * MARGIN_BAND
    if band < line.rect.y0 < page_rect.height - band and line.rect.y1 < page_rect.height - band:
        return None
    return re.sub(r"\d+", "#", line.text.lower())


def _running_lines(pages: list[RawPage]) -> set[str]:
    """Margin lines (page numbers, running titles) that repeat on most pages."""
    if len(pages) < 3:
        return {"#"}
    counts: Counter[str] = Counter()
    for page in pages:
        keys = {_margin_key(line, page.rect) for block in page.blocks for line in block}
        counts.update(key for key in keys if key)
    return {key for key, n in counts.items() if n >= RUNNING_SHARE * len(pages)} | {"#"}


def _is_heading_line(line: Line, body: tuple[float, bool]) -> bool:
    body_size, body_bold = body
    larger = line.size >= body_size * HEADING_SIZE_RATIO
    emphasised = line.bold and not body_bold and line.size >= body_size * 0.95
    if not (larger or emphasised) or len(line.text) > MAX_HEADING_CHARS:
        return False
    letters = sum(ch.isalpha() for ch in line.text)
    return letters >= 3 and not FIGURE_CAPTION.match(line.text) and not MATH_SIGNS.search(line.text)


def _heading_levels(
    pages: list[RawPage], body: tuple[float, bool]
) -> dict[tuple[float, bool], int]:
    """Heading styles ranked largest first (bold before regular at equal size): 1 is the top."""
    styles = {
        line.style
        for page in pages
        for block in page.blocks
        for line in block
        if _is_heading_line(line, body)
    }
    ranked = sorted(styles, key=lambda style: (-style[0], not style[1]))
    return {style: min(rank, MAX_TITLE_LEVEL) for rank, style in enumerate(ranked, start=1)}


def _build_page(
    raw: RawPage,
    body: tuple[float, bool],
    running: set[str],
    levels: dict[tuple[float, bool], int],
    shown: set[str],
) -> Page:
    blocks: list[Block] = list(raw.scanned or [])
    for lines in raw.blocks:
        kept = [line for line in lines if _keeps(line, raw.rect, running, shown)]
        blocks.extend(_classify_lines(kept, body, levels))
    blocks = _attach_tables(blocks, raw.tables)
    page_box = BBox(raw.rect.x0, raw.rect.y0, raw.rect.x1, raw.rect.y1)
    for block in blocks:
        block.bbox = _clip(block.bbox, page_box)
    return Page(number=raw.number, width=raw.rect.width, height=raw.rect.height, blocks=blocks)


def _keeps(line: Line, page_rect: pymupdf.Rect, running: set[str], shown: set[str]) -> bool:
    """Body lines, and a running header or footer on the first page that prints it.

    A running line is often the document's own label (a court case number, a report's title
    and date) that its body never repeats: kept once, it can be found; kept on every page, it
    would crowd each page's text. Bare page numbers are dropped everywhere."""
    key = _margin_key(line, page_rect)
    if key is None or key not in running:
        return True
    if key == "#" or key in shown:
        return False
    shown.add(key)
    return True


def _classify_lines(
    lines: list[Line], body: tuple[float, bool], levels: dict[tuple[float, bool], int]
) -> list[Block]:
    """Split a PyMuPDF block into runs of heading and body lines and type each run."""
    blocks: list[Block] = []
    run: list[Line] = []
    run_is_heading = False
    for line in lines:
        is_heading = _is_heading_line(line, body)
        if run and (is_heading != run_is_heading or (is_heading and line.style != run[0].style)):
            blocks.append(_make_block(run, run_is_heading, levels))
            run = []
        run.append(line)
        run_is_heading = is_heading
    if run:
        blocks.append(_make_block(run, run_is_heading, levels))
    return blocks


def _make_block(lines: list[Line], heading: bool, levels: dict[tuple[float, bool], int]) -> Block:
    text = " ".join(line.text for line in lines)
    bbox = _union(line.rect for line in lines)
    if heading and len(lines) <= MAX_HEADING_LINES:
        return Block(kind="title", text=text, bbox=bbox, level=_title_level(text, lines, levels))
    if figure := FIGURE_CAPTION.match(text):
        return Block(kind="figure", text=text, bbox=bbox, label=figure.group(1))
    if (equation := EQUATION_LABEL.match(text)) and _looks_like_formula(equation["body"]):
        return Block(kind="equation", text=text, bbox=bbox, label=equation["label"])
    return Block(kind="text", text=text, bbox=bbox)


def _title_level(text: str, lines: list[Line], levels: dict[tuple[float, bool], int]) -> int:
    """Level from the style rank, deepened by section numbering such as "3.1"."""
    level = levels.get(lines[0].style, MAX_TITLE_LEVEL)
    numbering = SECTION_NUMBER.match(text)
    if numbering:
        level += numbering.group(1).count(".")
    return min(level, MAX_TITLE_LEVEL)


def _looks_like_formula(body: str) -> bool:
    words = re.findall(r"[A-Za-z]{4,}", body)
    return bool(MATH_SIGNS.search(body)) and len(body) <= 200 and len(words) <= 6


def _attach_tables(blocks: list[Block], tables: list[FoundTable]) -> list[Block]:
    """Insert table blocks in reading position; a nearby "Table N:" caption joins its table."""
    result = list(blocks)
    for table in tables:
        table_block = Block(kind="table", text=table.markdown, bbox=_to_bbox(table.rect))
        caption = _nearest_caption(result, table.rect)
        if caption is not None:
            result.remove(caption)
            table_block.text = f"{caption.text}\n\n{table.markdown}"
            table_block.label = TABLE_CAPTION.match(caption.text).group(1)  # type: ignore[union-attr]
            table_block.bbox = _union_bbox(table_block.bbox, caption.bbox)
        position = next((i for i, b in enumerate(result) if b.bbox.y0 > table.rect.y0), len(result))
        result.insert(position, table_block)
    return result


def _nearest_caption(blocks: list[Block], rect: pymupdf.Rect) -> Block | None:
    for block in blocks:
        if block.kind != "text" or not TABLE_CAPTION.match(block.text):
            continue
        gap = min(abs(block.bbox.y0 - rect.y1), abs(rect.y0 - block.bbox.y1))
        if gap <= CAPTION_DISTANCE:
            return block
    return None


def _union(rects: Iterable[pymupdf.Rect]) -> BBox:
    total = pymupdf.Rect()
    for rect in rects:
        total |= rect
    return _to_bbox(total)


def _union_bbox(a: BBox, b: BBox) -> BBox:
    return BBox(min(a.x0, b.x0), min(a.y0, b.y0), max(a.x1, b.x1), max(a.y1, b.y1))


def _to_bbox(rect: pymupdf.Rect) -> BBox:
    return BBox(float(rect.x0), float(rect.y0), float(rect.x1), float(rect.y1))


def _clip(box: BBox, page: BBox) -> BBox:
    x0, x1 = sorted((min(max(box.x0, page.x0), page.x1), min(max(box.x1, page.x0), page.x1)))
    y0, y1 = sorted((min(max(box.y0, page.y0), page.y1), min(max(box.y1, page.y0), page.y1)))
    return BBox(x0, y0, x1, y1)
