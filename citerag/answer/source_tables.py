"""Markdown tables inside a source's text, read as rows of cells with exact offsets.

Ingest writes every table as Markdown, one row per line (`|Revenues|$ 24,996,056|...|`), so a
source's content holds its tables verbatim. Cells are aligned from the right: a row's label is
its first cell and its numbers are its trailing cells, which line up with the header's last
cells (10-K rows drop empty cells, so counting from the left would shift them). The period
(years) and the unit ("in thousands", "%") come from the header, else from the lines above the
table and the chunk's stored table context.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from functools import cached_property

from citerag.answer.numbers import Quantity, quantities
from citerag.text.dates import TABLE_YEAR

_ROW_LINE = re.compile(r"^[ \t]*\|.*\|[ \t]*$")
_SEPARATOR = re.compile(r"^[ \t]*\|(?:[ \t]*:?-{2,}:?[ \t]*\|)+[ \t]*$")
_NUMERIC_CELL = re.compile(r"^\(?\s*[$€£¥]?\s*\(?\d[\d,]*(?:\.\d+)?\s*\)?\s*%?\s*\)?$")
_YEAR = re.compile(rf"\b{TABLE_YEAR}\b")
_SCALE = re.compile(r"\bin\s+(thousands|millions|billions)\b", re.IGNORECASE)
_PERCENT_HEADER = re.compile(r"%|\bpercent", re.IGNORECASE)
_PER_SHARE = re.compile(r"\bper\b.*\bshare\b|\beps\b|\bdiluted\b|\bbasic\b", re.IGNORECASE)
SCALE_NAMES = {"thousands": "thousand", "millions": "million", "billions": "billion"}
CONTEXT_LINES = 5  # non-empty lines above a table read for its period, unit and section


@dataclass(frozen=True)
class Row:
    cells: tuple[str, ...]
    start: int  # offsets of the row's line in the source's content
    end: int

    @property
    def label(self) -> str:
        first = self.cells[0] if self.cells else ""
        return "" if numeric_cell(first) is not None else first

    def value_at(self, position: int) -> tuple[str, Quantity] | None:
        """The cell `position` places from the right (0 = last) when it holds a number."""
        if position >= len(self.cells) or (position == len(self.cells) - 1 and self.label):
            return None
        cell = self.cells[len(self.cells) - 1 - position]
        number = numeric_cell(cell)
        return (tidy_cell(cell), number) if number is not None else None


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[Row, ...]  # body rows, in order
    context: str  # the lines just above the table and the chunk's table context
    above: str = ""  # the line just above the table (its title or caption)

    @property
    def value_positions(self) -> list[int]:
        """Positions from the right that hold a number in some row, in reading order."""
        width = max((len(r.cells) for r in self.rows), default=0)
        return [p for p in reversed(range(width)) if any(r.value_at(p) for r in self.rows)]

    def column_name(self, position: int) -> str:
        """The header cell over a value column, else the year the period line gives it."""
        if position < len(self.header):
            name = self.header[len(self.header) - 1 - position].strip()
            if name and (numeric_cell(name) is None or _YEAR.fullmatch(name)):
                return name
        years = _period_years(self.context)
        reading = self.value_positions
        # Filings put the years first and the change columns after: years go left to right.
        if position in reading and reading.index(position) < len(years):
            return years[reading.index(position)]
        return ""

    def section_of(self, row: Row) -> str:
        """The label row above `row` ("Operating Income" over segment rows), else the line just
        above the table ("Revenue")."""
        return self._sections.get(row.start, "") or self.above

    @cached_property
    def _sections(self) -> dict[int, str]:
        sections: dict[int, str] = {}
        current = ""
        for row in self.rows:
            sections[row.start] = current
            if row.label and not any(row.value_at(p) for p in range(len(row.cells))):
                current = row.label
        return sections

    @property
    def scale_word(self) -> str:
        """ "thousand", "million" or "billion" when the title or header says "in thousands"..."""
        found = _SCALE.search(" ".join([self.context, *self.header]))
        return SCALE_NAMES[found.group(1).lower()] if found else ""

    def is_percent_column(self, position: int) -> bool:
        return bool(_PERCENT_HEADER.search(self.column_name(position)))


def tables_in(content: str, table_context: str = "") -> list[Table]:
    """The Markdown tables of `content`, each with its rows' exact offsets."""
    tables: list[Table] = []
    group: list[tuple[int, int]] = []
    cursor = 0
    for line in [*content.split("\n"), ""]:
        span = (cursor, cursor + len(line))
        cursor += len(line) + 1
        if _ROW_LINE.match(line):
            group.append(span)
            continue
        if group:
            tables.append(_table(content, group, table_context))
            group = []
    return [t for t in tables if t.rows]


def _table(content: str, lines: list[tuple[int, int]], table_context: str) -> Table:
    rows = [_row(content, a, b) for a, b in lines if not _SEPARATOR.match(content[a:b])]
    has_header = len(lines) > 1 and bool(_SEPARATOR.match(content[slice(*lines[1])]))
    header = rows[0].cells if has_header and rows else ()
    body = rows[1:] if has_header else rows
    above = [line.strip() for line in content[: lines[0][0]].split("\n") if line.strip()]
    context = " | ".join([*above[-CONTEXT_LINES:], table_context])
    rows_kept = tuple(r for r in body if r.cells)
    return Table(header, rows_kept, context, above[-1] if above else "")


def _row(content: str, start: int, end: int) -> Row:
    line = content[start:end]
    inner = line.strip()[1:-1]
    cells = tuple(" ".join(c.split()) for c in inner.split("|"))
    while cells and not cells[-1]:
        cells = cells[:-1]
    kept = tuple(c for c in cells if c) if _sparse(cells) else cells
    return Row(cells=kept, start=start, end=end)


def _sparse(cells: tuple[str, ...]) -> bool:
    """A row padded with empty cells (a label row, a short row): its empties carry no column."""
    return any(not c for c in cells)


@functools.lru_cache(maxsize=8192)
def numeric_cell(cell: str) -> Quantity | None:
    """The number a cell holds when the cell is only a number ("$ 24,996,056", "(497,923)",
    "14 %", "0.97"); None for labels and dashes."""
    text = cell.strip()
    if not _NUMERIC_CELL.match(text):
        return None
    found = quantities(text, skip_references=False)
    return found[0] if len(found) == 1 else None


def tidy_cell(cell: str) -> str:
    """The cell as a reader writes it: "$ 24,996,056" → "$24,996,056", "14 %" → "14%"."""
    text = " ".join(cell.split())
    text = re.sub(r"([$€£¥])\s+", r"\1", text)
    return re.sub(r"\s+%", "%", text)


def is_per_share(row: Row, table: Table) -> bool:
    return bool(_PER_SHARE.search(row.label))


def _period_years(context: str) -> list[str]:
    """The years of the last context line that names two or more (the period line)."""
    for line in reversed(context.split(" | ")):
        years = _YEAR.findall(line)
        if len(years) >= 2:
            return years
    return []
