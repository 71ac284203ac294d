"""Reading pages with no usable text layer by OCR: Tesseract's words, with boxes and confidences.

Tesseract runs as its command-line program (`tesseract - - tsv`) on a page rendered by
PyMuPDF: measured on scans of 10-K pages (benchmarks/results/ocr.md) it read 0.98 of the words
at 1.4 s a page, where PyMuPDF's built-in OCR text page read 0.965 at 2.5 s and gives no
confidences. Each word keeps its box in PDF points, so a scanned page's blocks, chunks, boxes
and highlights work as a text page's do.

A page is read by OCR when its text layer is empty and it carries ink, or when its text layer
is nearly empty (a stamped page number) and a picture covers most of it: every other page is
left to its text layer, so a born-digital page parses exactly as before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache

import pymupdf

from citerag.settings import DEFAULT_OCR_LANGUAGES, ParseSettings
from citerag.types import BBox, Block

NEARLY_EMPTY_CHARS = 40  # a text layer this short ("19", "Page 3") does not make a page text
PICTURE_SHARE = 0.5  # of the page's area: a picture this large on a nearly empty page is a scan
INK_DPI = 24  # the rendering that tells a blank page from one with ink (cheap: ~300 x 250 px)
INK_LEVEL = 160  # grey value below which a pixel is ink
INK_SHARE = 0.002  # of a page's pixels: below this the page is blank (a rule, a white box)
MIN_SCAN_DPI = 150
MAX_SCAN_DPI = 300
VECTOR_DPI = 200  # a page of drawn outlines (text as paths) has no resolution of its own
MIN_WORD_CONFIDENCE = 30.0  # Tesseract's 0-100: below, a "word" is mostly speckle or a picture
MIN_BLOCK_CONFIDENCE = 45.0  # a paragraph whose words average below this is noise
TIMEOUT_S = 120  # one page: a stuck engine leaves the scanned pages unread (with a warning)
PageProgress = Callable[[int, int, int], None]  # (page number, pages read, pages to read)


class OcrUnavailable(Exception):
    """Tesseract or one of the configured languages is not installed."""


@dataclass(frozen=True)
class OcrWord:
    text: str
    bbox: BBox  # PDF points, origin top-left
    confidence: float  # 0-100
    line: tuple[int, int, int]  # Tesseract's (block, paragraph, line)


@dataclass(frozen=True)
class OcrOptions:
    languages: str = DEFAULT_OCR_LANGUAGES
    pictures: bool = False  # pictures on text pages too (`parse.picture_text`)

    @classmethod
    def of(cls, settings: ParseSettings) -> OcrOptions:
        return cls(settings.ocr_languages, settings.ocr_pictures)


def missing_engine(languages: str) -> str | None:
    """Why OCR in `languages` cannot run here (a clause for a sentence), or None when it can."""
    return _missing_engine(languages, shutil.which("tesseract"))


def install_hint(languages: str) -> str:
    """What to install for OCR in `languages` (a clause for a sentence)."""
    packages = " ".join(f"tesseract-ocr-{code}" for code in languages.split("+"))
    return (
        f"install Tesseract (`sudo apt-get install tesseract-ocr {packages}`, or `brew install "
        "tesseract tesseract-lang` on macOS; `bash setup.sh` does it)"
    )


@lru_cache(maxsize=8)
def _missing_engine(languages: str, command: str | None) -> str | None:
    if command is None:
        return "no OCR engine (Tesseract) is installed"
    try:
        listing = subprocess.run(
            [command, "--list-langs"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return f"the OCR engine at {command} does not run"
    installed = {line.strip() for line in listing.splitlines()[1:]}
    absent = [code for code in languages.split("+") if code not in installed]
    if absent:
        return f"Tesseract has no data for the OCR language {'+'.join(absent)}"
    return None


def needs_ocr(page: pymupdf.Page, chars: int) -> bool:
    """Whether the page's words can only come from OCR (see the module's docstring); `chars`
    counts its text layer's characters other than spaces."""
    if chars >= NEARLY_EMPTY_CHARS:
        return False
    if chars and _largest_picture_share(page) < PICTURE_SHARE:
        return False
    return has_ink(page)


def has_ink(page: pymupdf.Page) -> bool:
    pixmap = page.get_pixmap(dpi=INK_DPI, colorspace=pymupdf.csGRAY, alpha=False)
    samples = pixmap.samples_mv
    dark = sum(1 for value in samples if value < INK_LEVEL)
    return dark >= INK_SHARE * max(len(samples), 1)


def _largest_picture_share(page: pymupdf.Page) -> float:
    area = max(page.rect.width * page.rect.height, 1.0)
    boxes = [pymupdf.Rect(info["bbox"]) & page.rect for info in page.get_image_info()]
    return max((box.get_area() / area for box in boxes), default=0.0)


def scan_dpi(page: pymupdf.Page, clip: pymupdf.Rect | None = None) -> int:
    """The resolution of the page's largest picture (inside `clip`), kept within 150-300 dpi."""
    region = clip or page.rect
    best: tuple[float, int] | None = None
    for info in page.get_image_info():
        box = pymupdf.Rect(info["bbox"]) & region
        if box.is_empty or box.width < 1:
            continue
        dpi = int(info["width"] * 72 / pymupdf.Rect(info["bbox"]).width)
        if best is None or box.get_area() > best[0]:
            best = (box.get_area(), dpi)
    if best is None:
        return VECTOR_DPI
    return min(max(best[1], MIN_SCAN_DPI), MAX_SCAN_DPI)


@dataclass(frozen=True)
class Rendered:
    """A region rendered for OCR: PNG bytes and where its pixels lie on the page."""

    png: bytes
    dpi: int
    origin: tuple[float, float]  # the region's top-left corner in PDF points


def render(page: pymupdf.Page, clip: pymupdf.Rect | None = None) -> Rendered:
    """Render in the calling thread (PyMuPDF is not thread-safe); OCR may then run anywhere."""
    dpi = scan_dpi(page, clip)
    pixmap = page.get_pixmap(dpi=dpi, clip=clip, colorspace=pymupdf.csGRAY, alpha=False)
    region = clip or page.rect
    return Rendered(bytes(pixmap.tobytes("png")), dpi, (region.x0, region.y0))


def read_words(image: Rendered, languages: str) -> list[OcrWord]:
    """Tesseract's words in reading order, boxes in PDF points; OcrUnavailable when it cannot
    run."""
    problem = missing_engine(languages)
    if problem is not None:
        raise OcrUnavailable(problem)
    command = [str(shutil.which("tesseract")), "-", "-", "-l", languages, "--dpi"]
    # One thread per page: pages run side by side, and OpenMP threads would fight over the cores.
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run(
            [*command, str(image.dpi), "tsv"],
            input=image.png,
            capture_output=True,
            timeout=TIMEOUT_S,
            check=True,
            env=env,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise OcrUnavailable(f"Tesseract failed on a page ({type(error).__name__})") from None
    return list(_words(done.stdout.decode("utf-8", "replace"), image))


def _words(tsv: str, image: Rendered) -> Iterator[OcrWord]:
    scale = 72.0 / image.dpi
    x_origin, y_origin = image.origin
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) != 12 or cells[0] != "5" or not cells[11].strip():
            continue
        confidence = float(cells[10])
        if confidence < MIN_WORD_CONFIDENCE:
            continue
        left, top, width, height = (int(v) for v in cells[6:10])
        box = BBox(
            round(x_origin + left * scale, 2),
            round(y_origin + top * scale, 2),
            round(x_origin + (left + width) * scale, 2),
            round(y_origin + (top + height) * scale, 2),
        )
        line = (int(cells[2]), int(cells[3]), int(cells[4]))
        yield OcrWord(cells[11].strip(), box, confidence, line)


def paragraphs(words: Sequence[OcrWord]) -> list[Block]:
    """Tesseract's paragraphs as blocks: lines joined by a space, the union box, the mean word
    confidence; paragraphs of noise (low confidence, no letters or digits) left out."""
    groups: dict[tuple[int, int], list[OcrWord]] = {}
    for word in words:
        groups.setdefault(word.line[:2], []).append(word)
    blocks: list[Block] = []
    for group in groups.values():
        confidence = sum(w.confidence for w in group) / len(group)
        text = " ".join(w.text for w in group)
        if confidence < MIN_BLOCK_CONFIDENCE or not any(ch.isalnum() for ch in text):
            continue
        box = BBox(
            min(w.bbox.x0 for w in group),
            min(w.bbox.y0 for w in group),
            max(w.bbox.x1 for w in group),
            max(w.bbox.y1 for w in group),
        )
        blocks.append(Block(kind="text", text=text, bbox=box, ocr_confidence=round(confidence, 1)))
    return blocks


def read_all(
    images: dict[int, Rendered],
    languages: str,
    progress: PageProgress | None = None,
    workers: int | None = None,
) -> dict[int, list[OcrWord]]:
    """Every rendered page's words, pages read side by side (each engine run is a process)."""
    if not images:
        return {}
    count = workers or min(len(images), max(os.cpu_count() or 1, 1))
    found: dict[int, list[OcrWord]] = {}
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="ocr") as pool:
        futures = {n: pool.submit(read_words, image, languages) for n, image in images.items()}
        for number, future in futures.items():
            if progress is not None:
                progress(number, len(found), len(images))
            found[number] = future.result()
    if progress is not None:
        progress(max(images), len(found), len(images))
    return found


def page_words(page: pymupdf.Page, languages: str) -> list[OcrWord]:
    """A scanned page's words as parsing read them (the same rendering, so the same words);
    none when the page has a text layer of its own or no engine can run."""
    chars = len("".join(page.get_text("text").split()))
    if not needs_ocr(page, chars) or missing_engine(languages) is not None:
        return []
    try:
        return read_words(render(page), languages)
    except OcrUnavailable:
        return []


def words_rects(words: Sequence[OcrWord], text: str) -> list[BBox]:
    """The line boxes of the first run of `words` that spells `text` (word by word, spaces
    aside), one box per OCR line; none when no run does."""
    wanted = text.split()
    if not wanted:
        return []
    spelled = [w.text for w in words]
    for start in range(len(spelled) - len(wanted) + 1):
        if spelled[start : start + len(wanted)] == wanted:
            return _line_boxes(words[start : start + len(wanted)])
    return []


def _line_boxes(run: Sequence[OcrWord]) -> list[BBox]:
    lines: dict[tuple[int, int, int], list[BBox]] = {}
    for word in run:
        lines.setdefault(word.line, []).append(word.bbox)
    return [
        BBox(
            min(b.x0 for b in boxes),
            min(b.y0 for b in boxes),
            max(b.x1 for b in boxes),
            max(b.y1 for b in boxes),
        )
        for boxes in lines.values()
    ]
