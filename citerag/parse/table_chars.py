"""PyMuPDF's ruled-table finder fed a lean character list: the same tables, less work.

`page.find_tables()` first lists every character of the page as a 24-key dictionary (colours,
font, text matrix, a transformed origin), most of the cost of parsing a page with tables. Line-based
detection reads only a character's box, its box in PDF coordinates and its text (is a cluster of
strokes around text? is a candidate table empty?). `find_ruled_tables` runs the finder's own
steps (`make_edges`, `TableFinder`) with just those keys, the PDF-coordinate box computed as
MuPDF computes it (single precision).

Nothing in PyMuPDF is replaced: the finder reads its characters and edges from its per-context
lists (`CHARS`, `EDGES`, one per thread), which this module fills for the page at hand, so a
`find_tables()` running on another thread is untouched. Only each table's box and its rows'
cells come back, as plain values: a PyMuPDF `Table` built on the lean list would read keys it
lacks in `extract()` or `header`. Pages whose transform is not a plain flip, rotated pages, or a
PyMuPDF without these steps go through `page.find_tables()` itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pymupdf

CellBox = tuple[float, float, float, float] | None


@dataclass(frozen=True)
class RuledRow:
    bbox: tuple[float, float, float, float]
    cells: tuple[CellBox, ...]  # None where a merged cell covers the slot


@dataclass(frozen=True)
class RuledTable:
    bbox: tuple[float, float, float, float]
    rows: tuple[RuledRow, ...]


def _finder_module() -> ModuleType | None:
    """PyMuPDF's table module, if it exposes the finder's steps this module runs."""
    try:
        from pymupdf import table
    except ImportError:
        return None
    steps = ("CHARS", "EDGES", "FLAGS", "TableSettings", "TableFinder", "make_edges")
    return table if all(hasattr(table, name) for name in steps) else None


_table = _finder_module()


def find_ruled_tables(page: pymupdf.Page, paths: list[dict[str, Any]]) -> list[RuledTable]:
    """The ruled tables PyMuPDF's line-based finder sees on `page`, drawn by `paths`.

    Equal to `page.find_tables(use_layout=False, paths=paths)`'s tables, box for box.
    """
    if _table is None or page.rotation != 0 or not _is_plain_flip(page):
        return _plain(page.find_tables(use_layout=False, paths=paths).tables)
    # The finder needs the smallest glyph boxes, as `find_tables()` sets them; this MuPDF switch
    # is process-wide, so it is put back as found.
    small_glyphs = bool(pymupdf.TOOLS.set_small_glyph_heights())
    pymupdf.TOOLS.set_small_glyph_heights(True)
    try:
        _table.CHARS.clear()
        _table.CHARS.extend(_lean_chars(page))
        _table.EDGES.clear()
        settings = _table.TableSettings.resolve()
        _table.make_edges(page, tset=settings, paths=paths)
        tables = _table.TableFinder(page, settings=settings).tables
    finally:
        _table.CHARS.clear()
        _table.EDGES.clear()
        pymupdf.TOOLS.set_small_glyph_heights(small_glyphs)
    return _plain(tables)


def _is_plain_flip(page: pymupdf.Page) -> bool:
    # The single-precision arithmetic below is exact only for this transform.
    _, b, c, d, _, _ = page.transformation_matrix
    return b == 0 and c == 0 and d in (1, -1)


def _lean_chars(page: pymupdf.Page) -> list[dict[str, Any]]:
    assert _table is not None  # only called when the finder module is there
    textpage = page.get_textpage(flags=_table.FLAGS)
    boxes: list[tuple[float, float, float, float]] = []
    texts: list[str] = []
    for block in page.get_text("rawdict", textpage=textpage)["blocks"]:
        for line in block["lines"]:
            for span in line["spans"]:
                for char in span["chars"]:
                    boxes.append(char["bbox"])
                    texts.append(char["c"])
    if not boxes:
        return []
    # MuPDF transforms in float32: y * d is exact for d = ±1, then one rounding when adding f.
    _, _, _, d, _, f = page.transformation_matrix
    flipped = np.float32(d) * np.asarray(boxes, dtype=np.float32)[:, (1, 3)] + np.float32(f)
    low, high = flipped.min(axis=1).tolist(), flipped.max(axis=1).tolist()
    return [
        {"x0": x0, "x1": x1, "top": top, "bottom": bottom, "y0": y0, "y1": y1, "text": text}
        for (x0, top, x1, bottom), text, y0, y1 in zip(boxes, texts, low, high, strict=True)
    ]


def _plain(tables: Sequence[Any]) -> list[RuledTable]:
    return [
        RuledTable(
            bbox=_box(table.bbox),
            rows=tuple(
                RuledRow(
                    bbox=_box(row.bbox),
                    cells=tuple(None if cell is None else _box(cell) for cell in row.cells),
                )
                for row in table.rows
            ),
        )
        for table in tables
    ]


def _box(values: Sequence[float]) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = values
    return (float(x0), float(y0), float(x1), float(y1))
