"""A lean character list for PyMuPDF's ruled-table finder: the same tables in a quarter the time.

`page.find_tables()` first lists every character of the page as a 24-key dictionary (colours,
font, text matrix, a transformed origin), which is half of the parse time of a 10-K. Line-based
detection reads only a character's box, its box in PDF coordinates and its text (is a cluster of
strokes around text? is a candidate table empty?). While `lean_table_chars()` is active,
`find_tables` gets just those keys, the PDF-coordinate box computed as MuPDF computes it (single
precision). Only callers that read `.tables`, `.bbox`, `.rows` and `.cells` may use it: a
table's `extract()` or `header` reads keys it leaves out. Pages whose transform is not a plain
flip, or a PyMuPDF without the expected internals, get PyMuPDF's own list.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import numpy as np
import pymupdf


def _finder_module() -> ModuleType | None:
    """PyMuPDF's table module, if it has the internals this module replaces."""
    try:
        from pymupdf import table
    except ImportError:
        return None
    internals = ("make_chars", "FLAGS", "CHARS")
    return table if all(hasattr(table, name) for name in internals) else None


_table = _finder_module()
_ORIGINAL = _table.make_chars if _table is not None else None


@contextmanager
def lean_table_chars() -> Iterator[None]:
    """PyMuPDF's table finder builds the lean character list inside this block."""
    if _table is None:
        yield
        return
    setattr(_table, "make_chars", _lean_make_chars)  # noqa: B010 (a module attribute)
    try:
        yield
    finally:
        setattr(_table, "make_chars", _ORIGINAL)  # noqa: B010


def _lean_make_chars(page: pymupdf.Page, clip: Any = None) -> Any:
    _, b, c, d, _, f = page.transformation_matrix
    assert _table is not None and _ORIGINAL is not None  # only installed when both exist
    if b != 0 or c != 0 or d not in (1, -1):  # single-precision products would need care
        return _ORIGINAL(page, clip=clip)
    textpage = page.get_textpage(clip=clip, flags=_table.FLAGS)
    boxes: list[tuple[float, float, float, float]] = []
    texts: list[str] = []
    for block in page.get_text("rawdict", textpage=textpage)["blocks"]:
        for line in block["lines"]:
            for span in line["spans"]:
                for char in span["chars"]:
                    boxes.append(char["bbox"])
                    texts.append(char["c"])
    if not boxes:
        return textpage
    # MuPDF transforms in float32: y * d is exact for d = ±1, then one rounding when adding f.
    flipped = np.float32(d) * np.asarray(boxes, dtype=np.float32)[:, (1, 3)] + np.float32(f)
    low, high = flipped.min(axis=1).tolist(), flipped.max(axis=1).tolist()
    chars = _table.CHARS._list()
    for (x0, top, x1, bottom), text, y0, y1 in zip(boxes, texts, low, high, strict=True):
        chars.append(
            {"x0": x0, "x1": x1, "top": top, "bottom": bottom, "y0": y0, "y1": y1, "text": text}
        )
    return textpage
