"""Measure both parsers on the shared evaluation PDFs; write benchmarks/results/parsers.md.

Run: .venv/bin/python -m benchmarks.bench_parsers

Metrics, per document and parser:
- pages/s: wall-clock parse speed (MinerU includes its subprocess start-up).
- tables: table blocks found.
- label rows / with numbers: Markdown table rows whose first cell is a text label, and how many
  of them carry at least one number on the same row. Fidelity = with numbers / label rows; the
  absolute count matters too, since a parser that finds no tables has nothing to be faithful to.
- headings: title blocks; numeric headings: titles that are only a number (e.g. "## 2,427,077"),
  which are layout errors that would become bogus section names.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from benchmarks.records import RESULTS
from citerag.eval.machine import describe_machine
from citerag.parse.pymupdf_parser import PyMuPDFParser
from citerag.types import ParsedDocument
from mineru_wrapper import DEFAULT_ENV_DIR, MineruParser, mineru_available

PROJECT_DIR = Path(__file__).resolve().parents[1]

EVAL_DIR = PROJECT_DIR.parent / "shared" / "eval"
OUT = RESULTS / "parsers.md"
NUMBER = re.compile(r"\d")
NUMERIC_TITLE = re.compile(r"^[\s$€£(),.%\d—–-]+$")


@dataclass
class Row:
    document: str
    parser: str
    pages: int
    seconds: float
    tables: int
    label_rows: int
    label_rows_with_numbers: int
    headings: int
    numeric_headings: int

    @property
    def fidelity(self) -> str:
        return f"{self.label_rows_with_numbers / self.label_rows:.2f}" if self.label_rows else "n/a"


def measure(document: ParsedDocument, seconds: float) -> Row:
    blocks = [b for p in document.pages for b in p.blocks]
    tables = [b.text for b in blocks if b.kind == "table"]
    label_rows = with_numbers = 0
    for table in tables:
        for cells in _table_rows(table):
            if sum(ch.isalpha() for ch in cells[0]) >= 2:
                label_rows += 1
                with_numbers += any(NUMBER.search(cell) for cell in cells[1:])
    titles = [b.text for b in blocks if b.kind == "title"]
    return Row(
        document=document.name,
        parser=document.parser,
        pages=len(document.pages),
        seconds=seconds,
        tables=len(tables),
        label_rows=label_rows,
        label_rows_with_numbers=with_numbers,
        headings=len(titles),
        numeric_headings=sum(bool(NUMERIC_TITLE.match(t)) for t in titles),
    )


def _table_rows(markdown: str) -> list[list[str]]:
    rows = []
    for line in markdown.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return [row for row in rows if row and row[0]]


def machine() -> str:
    return f"{describe_machine()} MinerU {_mineru_version()}"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


def _mineru_version() -> str:
    found = list(DEFAULT_ENV_DIR.glob("lib/python*/site-packages/mineru-*.dist-info"))
    return found[0].name.split("-")[1].removesuffix(".dist") if found else "absent"


def run() -> list[Row]:
    pdfs = sorted(EVAL_DIR.glob("*/*.pdf"))
    if not pdfs:
        print(f"{EVAL_DIR} has no PDFs: put the shared evaluation data beside the project.")
        return []
    parsers: list[PyMuPDFParser | MineruParser] = [PyMuPDFParser()]
    if mineru_available(DEFAULT_ENV_DIR):
        parsers.append(MineruParser(tier="flash"))
    else:
        print(f"MinerU is absent from {DEFAULT_ENV_DIR}: measuring PyMuPDF only.")
    rows = []
    for pdf in pdfs:
        for parser in parsers:
            start = time.perf_counter()
            document = parser.parse(pdf, doc_id=pdf.stem)
            row = measure(document, time.perf_counter() - start)
            print(_line(row), flush=True)
            rows.append(row)
    return rows


HEADER = (
    "| document | parser | pages | s | pages/s | tables | label rows | with numbers | fidelity "
    "| headings | numeric headings |"
)


def _line(row: Row) -> str:
    return (
        f"| {row.document} | {row.parser} | {row.pages} | {row.seconds:.1f} "
        f"| {row.pages / row.seconds:.1f} | {row.tables} | {row.label_rows} "
        f"| {row.label_rows_with_numbers} | {row.fidelity} | {row.headings} "
        f"| {row.numeric_headings} |"
    )


def write_report(rows: list[Row]) -> None:
    lines = [
        "# Parser measurements",
        "",
        f"Machine: {machine()}.",
        "Produced by `python -m benchmarks.bench_parsers`; MinerU runs the `flash` tier with",
        '`ocr_mode="txt"`. See the script\'s docstring for what each column counts.',
        "",
        HEADER,
        "|" + "---|" * 11,
        *(_line(row) for row in rows),
        "",
    ]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    print(machine())
    print(HEADER)
    measured = run()
    if measured:
        write_report(measured)
