"""Scanned documents beside their born-digital originals: page recall and OCR speed, one run.

Every MMLongBench-Doc dev PDF and both 10-Ks are rendered to image-only PDFs (150 dpi, grey,
no text layer: what a scanner gives), under the same file names. The originals go into one
collection and the scans into another, each through `main.py ingest` in its own process (the
background parse, OCR included, as a user runs it); every labelled question of those documents
is then asked of each collection (`Engine.retrieve`, 10 chunks) and scored by page hit@1/5/10
(a chunk of the question's document on an evidence page among the first k distinct places).
OCR speed is the scanned pages over the scan ingest's parse seconds. `--pictures` adds a third
collection: the originals with the text inside their pictures read too (`ocr_pictures`);
`--documents N` keeps the first N documents of each set (a shorter run; the file says so).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pymupdf

from benchmarks.datasets.library import EVAL, LIBRARY_SETS
from benchmarks.records import Record
from benchmarks.suites import SuiteOptions
from benchmarks.systems.process import PROJECT, base_environment
from benchmarks.systems.project import project_engine

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
        env=base_environment({"RAG_STORAGE_DIR": str(storage), **env}),
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


def scope_line(names: set[str], pages: int, limit: int | None, asked: int) -> str:
    documents = (
        "every MMLongBench-Doc dev PDF and both 10-Ks"
        if not limit
        else f"the first {limit} of the dev split's PDFs and of the 10-Ks, not all"
    )
    return (
        f"{len(names)} documents ({pages} pages), {documents}; {asked} labelled questions about "
        "them, asked of each collection (10 chunks each)."
    )


def run(options: SuiteOptions) -> Record:
    storage = options.storage_for("ocr")
    scanned_pages, render_s = prepare(storage, documents(options.documents))
    originals, scans = storage / "originals", storage / "scans"
    ingests = {
        DIGITAL: ingest(storage, originals, DIGITAL, {}),
        SCANS: ingest(storage, scans, SCANS, {}),
    }
    if options.pictures:
        ingests[PICTURES] = ingest(storage, originals, PICTURES, {"RAG_OCR_PICTURES": "true"})
    ingests = with_earlier_runs(storage, ingests)
    names = {pdf.name for pdf in originals.glob("*.pdf")}
    asked = questions(names)
    quality: dict[str, dict[str, dict[str, float]]] = {}
    engine = project_engine(storage)
    try:
        for set_name, listed in asked.items():
            quality[set_name] = {}
            for collection in ingests:
                rates = hit_rates(engine, collection, listed)
                quality[set_name][collection] = {f"hit@{k}": v for k, v in rates.items()}
                print(f"{set_name} / {collection}: {rates}", flush=True)
    finally:
        engine.close()
    return Record(
        suite="ocr",
        command=options.command,
        variant=options.variant,
        settings=dict(options.settings),
        systems={name: "the project, `main.py ingest`" for name in ingests},
        datasets={
            "scope": scope_line(
                names, scanned_pages, options.documents, sum(len(v) for v in asked.values())
            ),
            **{name: f"{len(v)} questions" for name, v in asked.items()},
        },
        metrics={"hits": quality, "asked": {k: len(v) for k, v in asked.items()}},
        timings={
            "ingests": ingests,
            "scanned_pages": scanned_pages,
            "render_s": render_s,
            "load": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
        },
    )
