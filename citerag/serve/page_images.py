"""Pages for the viewer: a stored document's page as a PNG and its highlights' boxes.

The PDF is found among the uploads, then in the configured folders (the articles' own), and
used only when its bytes hash to the stored document's id, so a page never comes from a file
that changed since it was ingested.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from citerag.ingest.pipeline import ingest_key
from citerag.parse.ocr import OcrWord, page_words, words_rects
from citerag.serve.api_errors import ApiError
from citerag.serve.uploads import FileStore
from citerag.settings import Settings
from citerag.types import JSONObject

MIN_ZOOM, MAX_ZOOM = 0.5, 4.0
HEAD_TAIL_WORDS = 6
ROW_TOLERANCE = 4.0  # points between the middles of cells on one table row
CACHED_PAGES = 64
# A US Letter page at the highest zoom is 7.8 megapixels; an A0 poster at zoom 1 is 8.1. A page
# past this many output pixels is refused: one huge page would otherwise take seconds and GBs.
MAX_RENDER_PIXELS = 16_777_216
# Renders at once: fewer than the engine's worker threads, so pages never hold up questions.
RENDER_SLOTS = 2
RENDER_WAIT_S = 10.0


@dataclass(frozen=True)
class Box:
    x0: float
    y0: float
    x1: float
    y1: float

    def to_dict(self) -> dict[str, float]:
        return {k: round(v, 2) for k, v in vars(self).items()}


class PageSource:
    """Finds the PDF behind a stored document and renders its pages."""

    def __init__(self, settings: Settings, files: FileStore, folders: Sequence[Path]) -> None:
        self._settings = settings
        self._files = files
        self._folders = list(folders)
        self._hashes: dict[tuple[str, int, int], str] = {}
        self._pngs: OrderedDict[tuple[str, int, float], bytes] = OrderedDict()
        # a scanned page's OCR words, by (path, size, mtime, page): reading one takes a second
        self._words: OrderedDict[tuple[str, int, int, int], list[OcrWord]] = OrderedDict()
        self._lock = threading.Lock()
        self._render_slots = threading.BoundedSemaphore(RENDER_SLOTS)
        self.render_wait_s = RENDER_WAIT_S

    def locate(self, collection: str, name: str, doc_id: str) -> Path:
        candidates = [self._files.path(collection, name)] + [d / name for d in self._folders]
        for path in candidates:
            if path.is_file() and self._doc_id(path) == doc_id:
                return path
        raise ApiError(
            404,
            f"The PDF of {name!r} is not on this server (ingested from elsewhere or changed "
            "since); upload it through the API to view its pages.",
        )

    def forget(self, collection: str, name: str) -> None:
        """A deleted document's uploaded PDF and its rendered pages go."""
        path = self._files.path(collection, name)
        self._files.discard(collection, name)
        with self._lock:
            for key in [k for k in self._pngs if k[0] == str(path)]:
                del self._pngs[key]

    def png(self, path: Path, page: int, zoom: float) -> bytes:
        zoom = min(max(zoom, MIN_ZOOM), MAX_ZOOM)
        key = (str(path), page, zoom)
        with self._lock:
            if key in self._pngs:
                self._pngs.move_to_end(key)
                return self._pngs[key]
        if not self._render_slots.acquire(timeout=self.render_wait_s):
            raise ApiError(503, "The server is busy rendering other pages; retry in a few seconds.")
        try:
            data = _render(path, page, zoom)
        finally:
            self._render_slots.release()
        with self._lock:
            self._pngs[key] = data
            while len(self._pngs) > CACHED_PAGES:
                self._pngs.popitem(last=False)
        return data

    def boxes(self, path: Path, page: int, highlights: Sequence[str]) -> JSONObject:
        """The page size in PDF points and, per highlight, its box (null when not found)."""
        with pymupdf.open(path) as doc:
            pdf_page = _page(doc, page)
            found = [_highlight_rects(pdf_page, text) for text in highlights]
            if not all(found):  # a scanned page: its words are where OCR read them
                words = self._ocr_words(path, pdf_page)
                pairs = zip(found, highlights, strict=True)
                found = [rects or _ocr_rects(words, text) for rects, text in pairs]
            width, height = pdf_page.rect.width, pdf_page.rect.height
        return {
            "page": page,
            "width": round(width, 2),
            "height": round(height, 2),
            "highlights": [
                {
                    "index": index,
                    "text": text,
                    "box": _union(rects).to_dict() if rects else None,
                    "rects": [r.to_dict() for r in rects],
                }
                for index, (text, rects) in enumerate(zip(highlights, found, strict=True))
            ],
        }

    def _ocr_words(self, path: Path, page: pymupdf.Page) -> list[OcrWord]:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns, page.number)
        with self._lock:
            if key in self._words:
                self._words.move_to_end(key)
                return self._words[key]
        words = page_words(page, self._settings.parse.ocr_languages)
        with self._lock:
            self._words[key] = words
            while len(self._words) > CACHED_PAGES:
                self._words.popitem(last=False)
        return words

    def _doc_id(self, path: Path) -> str:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        with self._lock:
            cached = self._hashes.get(key)
        if cached is None:
            cached = ingest_key(hashlib.sha256(path.read_bytes()).hexdigest(), self._settings)
            with self._lock:
                self._hashes[key] = cached
        return cached


def _render(path: Path, number: int, zoom: float) -> bytes:
    with pymupdf.open(path) as doc:
        page = _page(doc, number)
        _check_render_size(path.name, number, page.rect, zoom)
        try:
            return bytes(page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom)).tobytes("png"))
        except Exception as error:  # MuPDF raises its own types (FzErrorLimit, ...) for such pages
            raise ApiError(
                422,
                f"Page {number} of {path.name} cannot be rendered ({type(error).__name__}); "
                "open the PDF in a desktop viewer instead.",
            ) from None


def _check_render_size(name: str, number: int, rect: pymupdf.Rect, zoom: float) -> None:
    pixels = rect.width * zoom * rect.height * zoom
    if pixels <= MAX_RENDER_PIXELS:
        return
    largest = (
        math.floor(100 * (MAX_RENDER_PIXELS / max(rect.width * rect.height, 1.0)) ** 0.5) / 100
    )
    advice = (
        f"ask for zoom {largest:.2f} or less"
        if largest >= MIN_ZOOM
        else "the page is too large to render here; open the PDF in a desktop viewer"
    )
    raise ApiError(
        422,
        f"Page {number} of {name} is {rect.width:.0f} x {rect.height:.0f} pt, "
        f"{pixels / 1e6:.0f} megapixels at zoom {zoom:g}, over the "
        f"{MAX_RENDER_PIXELS / 1e6:.0f}-megapixel limit; {advice}.",
    )


def _page(doc: pymupdf.Document, number: int) -> pymupdf.Page:
    if not 1 <= number <= doc.page_count:
        raise ApiError(404, f"Page {number} does not exist; the document has {doc.page_count}.")
    return doc[number - 1]


def _highlight_rects(page: pymupdf.Page, text: str) -> list[Box]:
    """The line rectangles of a highlight: the whole text, else its first and last words; a
    table row (`|Revenues|$ 24,996,056|...|`) is the band of its cells on one line."""
    if text.strip().startswith("|"):
        return _row_rects(page, text)
    rects = page.search_for(text.strip())
    if not rects:
        words = text.split()
        head = page.search_for(" ".join(words[:HEAD_TAIL_WORDS]))
        tail = page.search_for(" ".join(words[-HEAD_TAIL_WORDS:]))
        rects = _span(head, tail)
    return [Box(r.x0, r.y0, r.x1, r.y1) for r in rects]


def _ocr_rects(words: Sequence[OcrWord], text: str) -> list[Box]:
    return [Box(b.x0, b.y0, b.x1, b.y1) for b in words_rects(words, text)] if words else []


def _span(head: list[pymupdf.Rect], tail: list[pymupdf.Rect]) -> list[pymupdf.Rect]:
    """The first head match and the first tail match that does not come before it."""
    if not head:
        return tail[:1]
    after = [r for r in tail if (r.y0, r.x0) >= (head[0].y0, head[0].x0)]
    return [head[0], *after[:1]]


def _union(rects: Sequence[Box]) -> Box:
    return Box(
        min(r.x0 for r in rects),
        min(r.y0 for r in rects),
        max(r.x1 for r in rects),
        max(r.y1 for r in rects),
    )


def _row_rects(page: pymupdf.Page, row: str) -> list[Box]:
    """The box around a table row's cells, found where the most of them share a line."""
    cells = [" ".join(c.split()) for c in row.strip().strip("|").split("|") if c.strip()]
    found = [_cell_rects(page, cell) for cell in cells]
    best: list[pymupdf.Rect] = []
    for anchor in found[0] if found else []:
        middle = (anchor.y0 + anchor.y1) / 2
        on_line = [anchor] + [hit for hits in found[1:] if (hit := _on_line(hits, middle))]
        if len(on_line) > len(best):
            best = on_line
    if not best:
        return []
    return [_union([Box(r.x0, r.y0, r.x1, r.y1) for r in best])]


def _on_line(hits: list[pymupdf.Rect], middle: float) -> pymupdf.Rect | None:
    return next((h for h in hits if abs((h.y0 + h.y1) / 2 - middle) <= ROW_TOLERANCE), None)


def _cell_rects(page: pymupdf.Page, cell: str) -> list[pymupdf.Rect]:
    """A cell's matches; "$24,996,056" is printed "$ 24,996,056", so the digits are tried too."""
    hits = page.search_for(cell)
    bare = cell.lstrip("$€£¥ ").rstrip("% ")
    return list(hits) if hits or not bare else list(page.search_for(bare))
