"""Ruled tables found by PyMuPDF, written as clean Markdown that keeps row labels with values.

Cell text is read from the page's words by position rather than with `Table.to_markdown()`:
that method takes ~0.2 s per page (it renders the header to guess its background colour) and
drops the spaces of bold header text, while the cell geometry alone is cheap and exact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pymupdf

from citerag.parse.table_chars import find_ruled_tables
from citerag.text.dates import TABLE_YEAR

CURRENCY_ONLY = re.compile(r"^[$€£¥%]$")
NUMERIC_CELL = re.compile(r"^\(?[$€£]?\s?\d[\d,.]*\s?%?\)?%?$|^[—–-]$")
YEAR = re.compile(rf"^{TABLE_YEAR}$")
ROW_TOLERANCE = 3.0  # points between word centres on one visual row
CELL_GAP = 10.0  # a wider horizontal gap between words starts a new cell
MAX_LABEL_ROW_CHARS = 80
MIN_TEXT_TABLE_ROWS = 3
# Pages drawn with fewer vector strokes than this cannot hold a ruled table.
MIN_STROKES_FOR_TABLE = 4
# Pages drawn with more vector paths than this are pictures (a map, a chart plotted point by
# point), not ruled tables: the busiest table page in the shared PDFs has under 900 paths, a map
# page 187,000. PyMuPDF's finder costs seconds per thousand paths there and, on the two such pages
# measured, wrapped the whole page in one false table.
MAX_PATHS_FOR_TABLE = 10_000

Word = Sequence[object]  # PyMuPDF word tuple: x0, y0, x1, y1, text, block, line, word
CellRect = Sequence[float] | None


@dataclass(frozen=True)
class FoundTable:
    rect: pymupdf.Rect
    markdown: str


def find_tables(page: pymupdf.Page, textpage: pymupdf.TextPage | None = None) -> list[FoundTable]:
    """The page's tables as cleaned Markdown, in top-to-bottom order.

    Ruled tables come from PyMuPDF's line detection; unruled ones (aligned columns of numbers,
    as in the Microsoft 10-K) from runs of word rows that end in a numeric cell.
    """
    words = page.get_text("words", textpage=textpage)  # extracted with TEXTFLAGS_WORDS if None
    ruled = _ruled_tables(page, words)
    free_words = [w for w in words if not any(_centre_in(w, t.rect) for t in ruled)]
    tables = ruled + _text_tables(free_words)
    return sorted(tables, key=lambda t: (t.rect.y0, t.rect.x0))


def _ruled_tables(page: pymupdf.Page, words: list[Word]) -> list[FoundTable]:
    # Counted in C first: turning a map's 187,107 paths into Python objects took 4.5 s.
    if not MIN_STROKES_FOR_TABLE <= len(page.get_cdrawings()) <= MAX_PATHS_FOR_TABLE:
        return []
    drawings = page.get_drawings()
    found: list[FoundTable] = []
    # The drawings just read, handed over: the finder would read them a second time.
    for table in find_ruled_tables(page, drawings):
        table_words = _words_within(words, table.bbox)
        rows = [
            clean_row(_row_text(_words_within(table_words, row.bbox), row.cells))
            for row in table.rows
        ]
        if sum(1 for row in rows if row) < 2:
            continue  # a shaded stripe behind one row, not a table: left to the text rows
        markdown = rows_to_markdown(rows)
        if markdown:
            found.append(FoundTable(rect=pymupdf.Rect(table.bbox), markdown=markdown))
    return found


def _text_tables(words: list[Word]) -> list[FoundTable]:
    """Runs of visual rows that end in a number, allowing label rows such as "Assets:" inside."""
    tables: list[FoundTable] = []
    run: list[list[Word]] = []
    for row in _visual_rows(words) + [[]]:
        cells = _split_cells(row) if row else []
        if cells and (_is_numeric_row(cells) or (run and _is_label_row(cells))):
            run.append(row)
            continue
        tables.extend(_table_from_rows(run))
        run = []
    return tables


def _table_from_rows(rows: list[list[Word]]) -> list[FoundTable]:
    while rows and not _is_numeric_row(_split_cells(rows[-1])):
        rows = rows[:-1]
    if sum(_is_numeric_row(_split_cells(row)) for row in rows) < MIN_TEXT_TABLE_ROWS:
        return []
    markdown = rows_to_markdown([clean_row(_split_cells(row)) for row in rows])
    rect = pymupdf.Rect()
    for row in rows:
        for word in row:
            rect |= pymupdf.Rect(*(float(v) for v in word[:4]))  # type: ignore[arg-type]
    return [FoundTable(rect=rect, markdown=markdown)]


def _visual_rows(words: list[Word]) -> list[list[Word]]:
    rows: list[list[Word]] = []
    for word in sorted(words, key=_centre_y):
        if rows and abs(_centre_y(word) - _centre_y(rows[-1][0])) <= ROW_TOLERANCE:
            rows[-1].append(word)
        else:
            rows.append([word])
    return [sorted(row, key=lambda w: float(w[0])) for row in rows]  # type: ignore[arg-type]


def _split_cells(row: list[Word]) -> list[str]:
    cells: list[list[str]] = []
    previous_x1 = None
    for word in row:
        x0, x1 = float(word[0]), float(word[2])  # type: ignore[arg-type]
        if previous_x1 is None or x0 - previous_x1 > CELL_GAP or CURRENCY_ONLY.match(str(word[4])):
            cells.append([])
        cells[-1].append(str(word[4]))
        previous_x1 = x1
    return [" ".join(cell) for cell in cells]


def _is_numeric_row(cells: list[str]) -> bool:
    return len(cells) >= 2 and bool(NUMERIC_CELL.match(cells[-1]))


def _is_value_row(cells: list[str]) -> bool:
    return _is_numeric_row(cells) and not YEAR.match(cells[-1])


def _is_label_row(cells: list[str]) -> bool:
    return len(cells) == 1 and len(cells[0]) <= MAX_LABEL_ROW_CHARS


def _centre_y(word: Word) -> float:
    return (float(word[1]) + float(word[3])) / 2  # type: ignore[arg-type]


def _centre_in(word: Word, rect: pymupdf.Rect) -> bool:
    x = (float(word[0]) + float(word[2])) / 2  # type: ignore[arg-type]
    return rect.x0 <= x <= rect.x1 and rect.y0 <= _centre_y(word) <= rect.y1


def clean_row(cells: list[str]) -> list[str]:
    """Drop empty cells and join a lone currency sign to the value that follows it."""
    cleaned: list[str] = []
    pending_symbol = ""
    for raw in cells:
        cell = " ".join(raw.replace("|", "/").split())
        if not cell:
            continue
        if CURRENCY_ONLY.match(cell):
            pending_symbol = cell
            continue
        cleaned.append(pending_symbol + cell)
        pending_symbol = ""
    if pending_symbol:
        cleaned.append(pending_symbol)
    return cleaned


def rows_to_markdown(rows: list[list[str]]) -> str:
    """A Markdown table (first row as header) padded to a common width; empty when no body."""
    rows = [row for row in rows if row]
    if rows and _is_value_row(rows[0]):
        rows.insert(0, [""])  # a header of values would read as column names
    if len(rows) < 2:
        return ""
    width = max(len(row) for row in rows)
    padded = [row + [""] * (width - len(row)) for row in rows]
    lines = [_row_line(padded[0]), "|" + "---|" * width]
    lines.extend(_row_line(row) for row in padded[1:])
    return "\n".join(lines)


def _row_line(cells: list[str]) -> str:
    return "|" + "|".join(cells) + "|"


def _row_text(words: list[Word], cells: Sequence[CellRect]) -> list[str]:
    return [
        " ".join(str(word[4]) for word in _words_within(words, cell)) if cell is not None else ""
        for cell in cells
    ]


def _words_within(words: list[Word], rect: Sequence[float]) -> list[Word]:
    """The words whose centre lies inside `rect`, in reading order."""
    x0, y0, x1, y1 = rect
    inside = []
    for word in words:
        wx0, wy0, wx1, wy1 = (float(v) for v in word[:4])  # type: ignore[arg-type]
        if x0 <= (wx0 + wx1) / 2 <= x1 and y0 <= (wy0 + wy1) / 2 <= y1:
            inside.append(word)
    return inside
