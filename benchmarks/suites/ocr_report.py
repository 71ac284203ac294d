"""`ocr.md` from an ocr record: page hits of scans beside originals, and OCR speed."""

from __future__ import annotations

from benchmarks.records import Record
from benchmarks.tables import record_header

KS = (1, 5, 10)
SCANS = "scans"
READING = [
    "## Reading the table",
    "",
    "hit@k is asked of each collection alone, so the born-digital figures are not those of "
    "`kinds.md` (19 documents, other PDFs beside). On a shared machine pages/s is a floor; each "
    "page is one Tesseract process of one thread, two pages at a time. Text inside pictures "
    "(`--pictures`) reads raster pictures only; charts drawn as vector paths are not read.",
    "",
]


def rendering(seconds: float) -> str:
    if seconds < 1.0:
        return "the scans an earlier run rendered were used again"
    return f"rendering the scans took {seconds:.1f} s (not counted)"


def render(record: Record) -> str:
    timings, metrics = record.timings, record.metrics
    lines = [
        *record_header(
            "Scanned documents beside their born-digital originals",
            record,
            record.datasets["scope"],
        ),
        "| set | questions | collection | hit@1 | hit@5 | hit@10 |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for set_name, rows in metrics["hits"].items():
        for collection, rates in rows.items():
            cells = " | ".join(f"{rates[f'hit@{k}']:.2f}" for k in KS)
            lines.append(f"| {set_name} | {metrics['asked'][set_name]} | {collection} | {cells} |")
    lines += ["", "| ingest | seconds | parse seconds | total line |", "|---|---:|---:|---|"]
    for collection, run in timings["ingests"].items():
        lines.append(
            f"| {collection} | {run['seconds']:.1f} | {run['parse_s']:.1f} | {run['total']} |"
        )
    pages, parse = timings["scanned_pages"], timings["ingests"][SCANS]["parse_s"]
    lines += [
        "",
        f"OCR: {pages} scanned pages read in {parse:.1f} s of parse ({pages / max(parse, 1e-9):.2f}"
        " pages/s, background parse process, Tesseract one thread a page, pages side by "
        f"side); {rendering(timings['render_s'])}; load average {timings['load']}.",
        "",
        *READING,
    ]
    return "\n".join(lines)
