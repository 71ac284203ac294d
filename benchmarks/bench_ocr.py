"""Scanned documents beside their born-digital originals: page recall and OCR speed, one run.

Every MMLongBench-Doc dev PDF and both 10-Ks are rendered to image-only PDFs (150 dpi, grey,
no text layer: what a scanner gives), under the same file names. The originals go into one
collection and the scans into another, each through `main.py ingest` in its own process (the
background parse, OCR included, as a user runs it); every labelled question of those documents
is then asked of each collection (`Engine.retrieve`, 10 chunks) and scored by page hit@1/5/10
(a chunk of the question's document on an evidence page among the first k distinct places).
OCR speed is the scanned pages over the scan ingest's parse seconds. `--pictures` adds a third
collection: the originals with the text inside their pictures read too (`ocr_pictures`).

    python -m benchmarks.bench_ocr [--storage DIR] [--documents N] [--pictures]

`--documents N` keeps the first N documents of each set (a shorter run; the file says so).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pymupdf

from benchmarks.datasets.library import EVAL, LIBRARY_SETS
from benchmarks.systems.project import project_engine
from benchmarks.tables import RESULTS, publish, shared_data_missing
from citerag.eval.machine import describe_machine

PROJECT = Path(__file__).resolve().parents[1]

OUT = RESULTS / "ocr.md"
FOLDERS = (EVAL / "mmlongbench_dev" / "pdfs", EVAL / "finance")
SCAN_DPI = 150
KS = (1, 5, 10)
DIGITAL, SCANS, PICTURES = "digital", "scans", "digital_pictures"
Place = tuple[str, int]


def documents(limit: int | None) -> list[Path]:
    """The dev split's PDFs and both 10-Ks (the first `limit` of each folder when given)."""
    found: list[Path] = []
    for folder in FOLDERS:
        found += sorted(folder.glob("*.pdf"))[:limit]
    return found


def render_scan(source: Path, target: Path) -> int:
    """`source` as a PDF of page images at SCAN_DPI (grey), no text layer; its page count."""
    with pymupdf.open(source) as original, pymupdf.open() as scan:
        for page in original:
            pixmap = page.get_pixmap(dpi=SCAN_DPI, colorspace=pymupdf.csGRAY, alpha=False)
            sheet = scan.new_page(width=page.rect.width, height=page.rect.height)
            sheet.insert_image(sheet.rect, pixmap=pixmap)
        scan.save(target, deflate=True)
        return scan.page_count


def prepare(storage: Path, pdfs: Sequence[Path]) -> tuple[int, float]:
    """The originals (links) and their scans under `storage`; scans made by an earlier run are
    kept (their bytes, and so their stored ingests, stay the same). Pages and render seconds."""
    originals, scans = storage / "originals", storage / "scans"
    for folder in (originals, scans):
        folder.mkdir(parents=True, exist_ok=True)
    started, pages = time.perf_counter(), 0
    for pdf in pdfs:
        if not (originals / pdf.name).exists():
            (originals / pdf.name).symlink_to(pdf)
        if (scans / pdf.name).exists():
            with pymupdf.open(scans / pdf.name) as done:
                pages += done.page_count
        else:
            pages += render_scan(pdf, scans / pdf.name)
    seconds = time.perf_counter() - started
    print(f"{pages} scanned pages ready in {seconds:.1f} s", flush=True)
    return pages, seconds


def with_earlier_runs(storage: Path, ingests: dict[str, Any]) -> dict[str, Any]:
    """Each collection's ingest as measured by the run that ingested it (a later run that found
    it stored skips it, and its seconds say nothing)."""
    kept = storage / "ingests.json"
    earlier = json.loads(kept.read_text(encoding="utf-8")) if kept.exists() else {}
    for collection, run in ingests.items():
        if re.search(r"\b0 ingested", run["total"]) and collection in earlier:
            ingests[collection] = earlier[collection]
    kept.write_text(json.dumps(ingests, indent=1), encoding="utf-8")
    return ingests


def ingest(storage: Path, folder: Path, collection: str, env: dict[str, str]) -> dict[str, Any]:
    """`main.py ingest` of the folder in a fresh process; its seconds and total line."""
    command = [sys.executable, str(PROJECT / "main.py"), "ingest", str(folder)]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--collection", collection],
        env={**os.environ, "RAG_STORAGE_DIR": str(storage), **env},
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    total = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    parse = re.search(r"parse ([\d.]+) s", total)
    print(f"{collection}: {seconds:.1f} s; {total}", flush=True)
    return {"seconds": seconds, "total": total, "parse_s": float(parse[1]) if parse else 0.0}


def questions(names: set[str]) -> dict[str, list[dict[str, Any]]]:
    """Each labelled set's questions about the given documents."""
    found = {}
    for set_name, path in LIBRARY_SETS.items():
        asked = json.loads(path.read_text(encoding="utf-8"))
        found[set_name] = [q for q in asked if q["document"] in names]
    return found


def hit_rates(engine: Any, collection: str, asked: Sequence[dict[str, Any]]) -> dict[int, float]:
    from citerag.nodes import doc_name_of, page_of

    scored = []
    for question in asked:
        places: list[Place] = []
        for hit in engine.retrieve(question["question"], collection):
            place = (doc_name_of(hit.node), page_of(hit.node))
            if place not in places:
                places.append(place)
        good = [
            doc == question["document"] and page in question["evidence_pages"]
            for doc, page in places
        ]
        scored.append({k: int(any(good[:k])) for k in KS})
    return {k: sum(s[k] for s in scored) / max(len(scored), 1) for k in KS}


def rendering(seconds: float) -> str:
    if seconds < 1.0:
        return "the scans an earlier run rendered were used again"
    return f"rendering the scans took {seconds:.1f} s (not counted)"


def render(results: dict[str, Any]) -> str:
    lines = [
        "# Scanned documents beside their born-digital originals",
        "",
        "`python -m benchmarks.bench_ocr"
        + (f" --documents {results['limit']}" if results["limit"] else "")
        + (" --pictures" if results["pictures"] else "")
        + "`: "
        + results["scope"],
        "",
        describe_machine(),
        "",
        "| set | questions | collection | hit@1 | hit@5 | hit@10 |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for set_name, rows in results["quality"].items():
        for collection, rates in rows.items():
            cells = " | ".join(f"{rates[k]:.2f}" for k in KS)
            lines.append(f"| {set_name} | {results['asked'][set_name]} | {collection} | {cells} |")
    lines += ["", "| ingest | seconds | parse seconds | total line |", "|---|---:|---:|---|"]
    for collection, run in results["ingests"].items():
        lines.append(
            f"| {collection} | {run['seconds']:.1f} | {run['parse_s']:.1f} | {run['total']} |"
        )
    pages, parse = results["scanned_pages"], results["ingests"][SCANS]["parse_s"]
    lines += [
        "",
        f"OCR: {pages} scanned pages read in {parse:.1f} s of parse ({pages / max(parse, 1e-9):.2f}"
        f" pages/s, background parse process, Tesseract one thread a page, pages side by "
        f"side); {rendering(results['render_s'])}.",
        "",
        *results["notes"],
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", type=Path, help="keep the collections here")
    parser.add_argument("--documents", type=int, help="the first N documents of each set")
    parser.add_argument("--pictures", action="store_true", help="also OCR pictures on text pages")
    args = parser.parse_args()
    if shared_data_missing(list(FOLDERS)):
        return 0
    storage = args.storage or Path(tempfile.mkdtemp(prefix="bench_ocr_"))
    scanned_pages, render_s = prepare(storage, documents(args.documents))
    originals, scans = storage / "originals", storage / "scans"
    ingests = {
        DIGITAL: ingest(storage, originals, DIGITAL, {}),
        SCANS: ingest(storage, scans, SCANS, {}),
    }
    if args.pictures:
        ingests[PICTURES] = ingest(storage, originals, PICTURES, {"RAG_OCR_PICTURES": "true"})
    ingests = with_earlier_runs(storage, ingests)
    names = {pdf.name for pdf in originals.glob("*.pdf")}
    asked = questions(names)
    quality: dict[str, dict[str, dict[int, float]]] = {}
    engine = project_engine(storage)
    try:
        for set_name, listed in asked.items():
            quality[set_name] = {}
            for collection in ingests:
                quality[set_name][collection] = hit_rates(engine, collection, listed)
                print(f"{set_name} / {collection}: {quality[set_name][collection]}", flush=True)
    finally:
        engine.close()
    scope = (
        f"{len(names)} documents ({scanned_pages} pages), "
        + (
            "every MMLongBench-Doc dev PDF and both 10-Ks"
            if not args.documents
            else f"the first {args.documents} of the dev split's PDFs and of the 10-Ks, not all"
        )
        + f"; {sum(len(v) for v in asked.values())} labelled questions about them, asked of "
        "each collection (10 chunks each)."
    )
    results = {
        "limit": args.documents,
        "pictures": args.pictures,
        "scope": scope,
        "quality": quality,
        "asked": {k: len(v) for k, v in asked.items()},
        "ingests": ingests,
        "scanned_pages": scanned_pages,
        "render_s": render_s,
        "notes": NOTES,
    }
    publish(render(results), OUT)
    return 0


NOTES: list[str] = [
    "## The engine, chosen by measurement",
    "",
    "Four pages of the Netflix 10-K (3, 21, 41, 56: prose, a table of contents, financial "
    "tables) rendered at 150 dpi, OCR'd one thread at a time, the share of the text layer's "
    "words read back (multiset overlap, case and punctuation aside):",
    "",
    "| engine | seconds a page | words read |",
    "|---|---:|---:|",
    "| Tesseract 5.3 command line, TSV (`tesseract - - tsv`: what `pytesseract` runs) | "
    "1.42 | 0.980 |",
    "| PyMuPDF's OCR text page (`get_textpage_ocr(full=True)`, MuPDF's own Tesseract) | "
    "2.53 | 0.965 |",
    "| the same command line on the page re-rendered at 300 dpi | 2.75 | 0.932 |",
    "",
    "The command line reads more words in less time and gives each word's confidence "
    "(PyMuPDF's text page gives none), so it is the engine (`citerag/parse/ocr.py`); it needs "
    "no Python package. Not measured: `tesserocr` (no wheel here; it builds against "
    "libtesseract-dev), and ONNX OCR packages (`rapidocr-onnxruntime` ships its models, but "
    "is tuned for Chinese first; left for a later measurement).",
    "",
    "## Reading the table",
    "",
    "hit@k is asked of each collection alone (17 documents each), so the born-digital figures "
    "are not those of `kinds.md` (19 documents, other PDFs beside). The machine is shared: "
    "other engineers' jobs ran beside this one (load average 6-8 on 2 cores), so pages/s is "
    "a floor; each page is one Tesseract process of one thread, two pages at a time.",
    "Text inside pictures reads raster pictures only (27 on these 17 documents); charts drawn "
    "as vector paths are not read. It was not measured on the essay, the career eBook or the "
    "statement questions, so it stays off by default.",
]

if __name__ == "__main__":
    raise SystemExit(main())
