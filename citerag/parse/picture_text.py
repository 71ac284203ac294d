"""The words inside pictures on text pages (chart labels, a screenshot, a photographed table),
read by OCR when `ocr_pictures` is on, as one figure block per picture.

A picture is read when it is large enough to hold words (`MIN_SIDE` points a side), is not a
page background, and has no text layer of its own over it (text drawn on a picture is read
from the text layer already). Its words become a `figure` block with the picture's box, placed
after the caption ("Figure 3: ...") that names it when one is near, and carrying that label: they
are found and cited as the figure's, and never joined to the body's sentences.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import pymupdf

from citerag.parse.ocr import (
    OcrOptions,
    OcrUnavailable,
    PageProgress,
    Rendered,
    missing_engine,
    paragraphs,
    read_all,
    render,
)
from citerag.types import BBox, Block, Page

MIN_SIDE = 60.0  # points (as `figures.MIN_SIDE`): smaller pictures are icons and bullets
BACKGROUND_SHARE = 0.85  # of the page's area: larger is a background
MAX_PICTURES_PER_PAGE = 4
OWN_TEXT_CHARS = 20  # a picture with this much text-layer text over it is read from that text
CAPTION_GAP = 60.0  # points between a picture and the "Figure N" caption that names it


@dataclass
class PictureWords:
    blocks: dict[int, list[Block]] = field(default_factory=dict)  # 1-based page -> its figures


def read_pictures(
    doc: pymupdf.Document,
    pages: Sequence[int],
    options: OcrOptions,
    progress: PageProgress | None = None,
) -> PictureWords:
    """The words of the pictures on the given 1-based pages, one figure block per picture."""
    if not options.pictures or missing_engine(options.languages) is not None:
        return PictureWords()
    images: dict[int, Rendered] = {}
    where: dict[int, tuple[int, pymupdf.Rect]] = {}
    counter = itertools.count()
    for number in pages:
        page = doc[number - 1]
        for rect in _pictures(page):
            key = next(counter)
            images[key] = render(page, rect)
            where[key] = (number, rect)
    try:
        words = read_all(images, options.languages, _per_page(progress, where))
    except OcrUnavailable:
        return PictureWords()
    found = PictureWords()
    for key, read in words.items():
        number, rect = where[key]
        block = _figure_block(paragraphs(read), rect)
        if block is not None:
            found.blocks.setdefault(number, []).append(block)
    return found


def with_pictures(page: Page, figures: Sequence[Block]) -> Page:
    """The page with each figure block placed after its caption, else where its top falls."""
    blocks = list(page.blocks)
    for figure in figures:
        caption = _caption(blocks, figure.bbox)
        if caption is not None:
            figure = replace(figure, label=caption.label)
            position = blocks.index(caption) + 1
        else:
            position = next(
                (i for i, b in enumerate(blocks) if b.bbox.y0 > figure.bbox.y0), len(blocks)
            )
        blocks.insert(position, figure)
    return replace(page, blocks=blocks)


def _pictures(page: pymupdf.Page) -> list[pymupdf.Rect]:
    largest = BACKGROUND_SHARE * page.rect.width * page.rect.height
    found: list[pymupdf.Rect] = []
    for info in page.get_image_info():
        rect = pymupdf.Rect(info["bbox"]) & page.rect
        if rect.is_empty or min(rect.width, rect.height) < MIN_SIDE or rect.get_area() >= largest:
            continue
        if any(rect.intersects(kept) for kept in found):
            continue
        own = "".join(page.get_text("text", clip=rect).split())
        if len(own) < OWN_TEXT_CHARS:
            found.append(rect)
    return found[:MAX_PICTURES_PER_PAGE]


def _figure_block(read: list[Block], rect: pymupdf.Rect) -> Block | None:
    if not read:
        return None
    text = "\n".join(block.text for block in read)
    weights = [len(block.text) for block in read]
    confidence = sum((b.ocr_confidence or 0.0) * n for b, n in zip(read, weights, strict=True))
    box = BBox(float(rect.x0), float(rect.y0), float(rect.x1), float(rect.y1))
    mean = round(confidence / max(sum(weights), 1), 1)
    return Block(kind="figure", text=text, bbox=box, ocr_confidence=mean)


def _caption(blocks: list[Block], box: BBox) -> Block | None:
    for block in blocks:
        if block.kind != "figure" or not block.label or block.ocr_confidence is not None:
            continue
        overlaps = block.bbox.x0 < box.x1 and box.x0 < block.bbox.x1
        gap = max(block.bbox.y0 - box.y1, box.y0 - block.bbox.y1)
        if overlaps and gap <= CAPTION_GAP:
            return block
    return None


def _per_page(
    progress: PageProgress | None, where: dict[int, tuple[int, pymupdf.Rect]]
) -> PageProgress | None:
    if progress is None:
        return None

    def tell(key: int, read: int, total: int) -> None:
        progress(where[key][0], read, total)

    return tell
