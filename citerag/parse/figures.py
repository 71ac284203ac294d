"""Where a PDF's figures are: embedded images and clusters of vector drawings, with their label
and caption, and the region rendered as PNG (PyMuPDF) for a vision model to describe.

A figure is an image or a drawing cluster of at least `MIN_SIDE` points a side that neither
covers most of the page (a background) nor repeats at the same place on several pages (a logo,
a header ornament). Its label is the number of a "Figure N:" caption within `CAPTION_GAP`
points below or above it ("4.3"); its caption that caption, else the text inside the region
(the words a diagram writes), else the text block nearest it.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from citerag.parse.pymupdf_parser import FIGURE_CAPTION
from citerag.types import BBox

MIN_SIDE = 60.0  # points: smaller images and drawings are icons, bullets, rules
BACKGROUND_SHARE = 0.85  # of the page's area: larger is a background, not a figure
REPEATED_ON = 3  # pages: the same box on this many pages is decoration
CAPTION_GAP = 60.0  # points between a figure and its "Figure N:" caption
MAX_FIGURES_PER_PAGE = 4
MAX_CAPTION_CHARS = 400
RENDER_DPI = 110
MAX_RENDER_SIDE = 1600  # pixels: a larger region is rendered at a lower resolution


@dataclass(frozen=True)
class FigureRegion:
    page: int  # 1-based
    bbox: BBox
    label: str  # "3", "4.1"; "" when no "Figure N" caption names it
    caption: str
    index: int  # its position among the page's figures, from 1


def find_figures(path: Path) -> list[FigureRegion]:
    """Every figure of the PDF, page by page, top to bottom."""
    with pymupdf.open(path) as document:
        candidates = [(number, _candidates(page)) for number, page in enumerate(document, 1)]
        repeated = _repeated_boxes(candidates)
        found: list[FigureRegion] = []
        for number, boxes in candidates:
            page = document[number - 1]
            kept = [box for box in _merged(boxes) if _key(box) not in repeated]
            kept = sorted(kept, key=lambda r: (r.y0, r.x0))[:MAX_FIGURES_PER_PAGE]
            for index, rect in enumerate(kept, start=1):
                label, caption = _caption(page, rect)
                box = BBox(*(round(v, 1) for v in (rect.x0, rect.y0, rect.x1, rect.y1)))
                found.append(FigureRegion(number, box, label, caption, index))
    return found


def render_region(path: Path, region: FigureRegion) -> bytes:
    """The region as PNG bytes."""
    with pymupdf.open(path) as document:
        page = document[region.page - 1]
        box = region.bbox
        clip = pymupdf.Rect(box.x0, box.y0, box.x1, box.y1) & page.rect
        longest_inches = max(clip.width, clip.height, 1.0) / 72
        dpi = min(RENDER_DPI, int(MAX_RENDER_SIDE / longest_inches))
        return bytes(page.get_pixmap(clip=clip, dpi=max(dpi, 30)).tobytes("png"))


def _candidates(page: pymupdf.Page) -> list[pymupdf.Rect]:
    rects = [pymupdf.Rect(info["bbox"]) for info in page.get_image_info()]
    with contextlib.suppress(ValueError, RuntimeError):  # drawings that cannot be clustered
        rects += list(page.cluster_drawings())
    largest = BACKGROUND_SHARE * page.rect.width * page.rect.height
    clipped = [r & page.rect for r in rects]
    return [r for r in clipped if min(r.width, r.height) >= MIN_SIDE and r.get_area() < largest]


def _key(rect: pymupdf.Rect) -> tuple[int, int, int, int]:
    return (round(rect.x0 / 5), round(rect.y0 / 5), round(rect.x1 / 5), round(rect.y1 / 5))


def _repeated_boxes(candidates: list[tuple[int, list[pymupdf.Rect]]]) -> set[tuple[int, ...]]:
    counts = Counter(key for _n, boxes in candidates for key in {_key(b) for b in boxes})
    return {key for key, count in counts.items() if count >= REPEATED_ON}


def _merged(rects: list[pymupdf.Rect]) -> list[pymupdf.Rect]:
    """Overlapping regions as one (an image with drawings over it is one figure)."""
    merged: list[pymupdf.Rect] = []
    for rect in sorted(rects, key=lambda r: -r.get_area()):
        for index, kept in enumerate(merged):
            if kept.intersects(rect):
                merged[index] = kept | rect
                break
        else:
            merged.append(pymupdf.Rect(rect))
    return merged


def _caption(page: pymupdf.Page, rect: pymupdf.Rect) -> tuple[str, str]:
    """The "Figure N:" caption next to the region (label and text), else ("", the region's
    own words or the nearest text block)."""
    blocks = [b for b in page.get_text("blocks") if b[6] == 0 and str(b[4]).strip()]
    nearest: tuple[float, str] | None = None
    for x0, y0, x1, y1, text, *_rest in blocks:
        line = " ".join(str(text).split())
        box = pymupdf.Rect(x0, y0, x1, y1)
        overlaps = box.x0 < rect.x1 and rect.x0 < box.x1
        gap = max(box.y0 - rect.y1, rect.y0 - box.y1)
        match = FIGURE_CAPTION.match(line)
        if match and overlaps and gap <= CAPTION_GAP:
            return match.group(1), line[:MAX_CAPTION_CHARS]
        if overlaps and gap > 0 and (nearest is None or gap < nearest[0]):
            nearest = (gap, line)
    inside = " ".join(page.get_text("text", clip=rect).split())
    if inside:
        return "", inside[:MAX_CAPTION_CHARS]
    return "", (nearest[1][:MAX_CAPTION_CHARS] if nearest else "")
