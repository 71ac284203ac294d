"""Ingest throughput on a Milvus server beside Milvus Lite (docstore: SQLite in both).

Starts the embedded Milvus standalone server (milvus==2.3.5) on free loopback ports, ingests the
same PDFs into a fresh storage folder per backend with one shared embedder, and writes
benchmarks/results/servers.md: seconds per document, chunks per second, and the time spent in
the Milvus writes alone.

    .venv/bin/python benchmarks/bench_servers.py [PDF ...]
"""

from __future__ import annotations

import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pymilvus  # noqa: E402

from citerag.embed.embedder import Embedder  # noqa: E402
from citerag.engine import Engine  # noqa: E402
from citerag.settings import Settings  # noqa: E402
from citerag.store.local_servers import start_milvus  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "eval"
DEFAULT_PDFS = [
    SHARED / "paul_graham" / "paul_graham_essay.pdf",
    SHARED / "finance" / "NETFLIX_2020_10K.pdf",
]
RESULTS = Path(__file__).with_name("results") / "servers.md"


def ingest_all(settings: Settings, embedder: Embedder, pdfs: list[Path]) -> list[dict[str, Any]]:
    engine = Engine(settings, embedder=embedder)
    spent = {"milvus": 0.0}
    insert = engine.vectors.insert

    def timed_insert(*args: Any, **kwargs: Any) -> None:
        started = time.perf_counter()
        insert(*args, **kwargs)
        spent["milvus"] += time.perf_counter() - started

    engine.vectors.insert = timed_insert  # type: ignore[method-assign]
    rows = []
    try:
        for pdf in pdfs:
            spent["milvus"] = 0.0
            outcome = engine.ingest(pdf, "bench")
            rows.append(
                {
                    "name": pdf.name,
                    "pages": outcome.pages,
                    "chunks": outcome.chunks,
                    "seconds": outcome.seconds,
                    "milvus": spent["milvus"],
                }
            )
    finally:
        engine.close()
    return rows


def main() -> int:
    pdfs = [Path(p) for p in sys.argv[1:]] or DEFAULT_PDFS
    embedder = Embedder()
    embedder.embed(["warm up"])
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        server = start_milvus(root / "milvus")
        try:
            results = {
                "Milvus Lite 3.2.2": ingest_all(
                    Settings(storage_dir=root / "lite"), embedder, pdfs
                ),
                "Milvus server 2.3.5 (embedded standalone)": ingest_all(
                    Settings(storage_dir=root / "server", milvus_uri=server.uri), embedder, pdfs
                ),
            }
        finally:
            server.stop()
    lines = [
        "# Benchmark: ingest throughput on a Milvus server beside Milvus Lite",
        "",
        f"Measured {date.today()} by `benchmarks/bench_servers.py`, one run each, docstore SQLite, "
        f"parser pymupdf, default chunking; {platform.machine()}, "
        f"Python {platform.python_version()}, "
        f"pymilvus {pymilvus.__version__}, 2 shared cores. `Milvus s` is the time in the Milvus "
        "writes alone (Lite flushes after each write; the server does not need to).",
        "",
        "| backend | document | pages | chunks | seconds | chunks/s | Milvus s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for backend, rows in results.items():
        for row in rows:
            rate = row["chunks"] / row["seconds"]
            lines.append(
                f"| {backend} | {row['name']} | {row['pages']} | {row['chunks']} | "
                f"{row['seconds']:.1f} | {rate:.1f} | {row['milvus']:.2f} |"
            )
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
