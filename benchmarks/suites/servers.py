"""Ingest throughput on a Milvus server beside Milvus Lite, and with MongoDB's wire protocol.

Starts the embedded Milvus standalone server (milvus==2.3.5) and nx-27017 on free loopback
ports, ingests the same PDFs into a fresh storage folder per set-up with one shared embedder:
seconds per document, chunks per second, and the time spent in the Milvus writes and in the
docstore writes alone.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.datasets.library import EVAL
from benchmarks.records import Record
from benchmarks.suites import SuiteOptions
from citerag.embed.embedder import Embedder
from citerag.engine import Engine
from citerag.settings import Settings
from devservers import start_milvus, start_mongo_wire

PDFS = [EVAL / "paul_graham" / "paul_graham_essay.pdf", EVAL / "finance" / "NETFLIX_2020_10K.pdf"]
DOCSTORE_WRITES = ("put_document", "put_chunks", "put_sentence_vectors", "put_tree", "mark_ready")


def _time(target: Any, name: str, spent: dict[str, float], key: str) -> None:
    method = getattr(target, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            spent[key] += time.perf_counter() - started

    setattr(target, name, timed)


def ingest_all(settings: Settings, embedder: Embedder, pdfs: list[Path]) -> list[dict[str, Any]]:
    engine = Engine(settings, embedder=embedder)
    spent = {"milvus": 0.0, "docstore": 0.0}
    _time(engine.vectors, "insert", spent, "milvus")
    for name in DOCSTORE_WRITES:
        _time(engine.docstore, name, spent, "docstore")
    rows = []
    try:
        for pdf in pdfs:
            spent.update(milvus=0.0, docstore=0.0)
            outcome = engine.ingest(pdf, "bench")
            rows.append(
                {
                    "name": pdf.name,
                    "pages": outcome.pages,
                    "chunks": outcome.chunks,
                    "seconds": outcome.seconds,
                    **spent,
                }
            )
    finally:
        engine.close()
    return rows


def _load() -> str:
    try:
        return " / ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def measure(root: Path, pdfs: list[Path]) -> dict[str, list[dict[str, Any]]]:
    embedder = Embedder()
    embedder.embed(["warm up"])
    server = start_milvus(root / "milvus")
    mongo = start_mongo_wire(root / "mongo")
    try:
        # Measured without enrichment (the package default before it became "entity").
        lite = Settings(storage_dir=root / "lite", metadata="none")
        on_server = lite.with_overrides(storage_dir=root / "server", milvus_uri=server.uri)
        both = on_server.with_overrides(storage_dir=root / "both", mongodb_uri=mongo.uri)
        return {
            "Milvus Lite 3.2.2 + SQLite": ingest_all(lite, embedder, pdfs),
            "Milvus server 2.3.5 + SQLite": ingest_all(on_server, embedder, pdfs),
            "Milvus server 2.3.5 + nx-27017 (MongoDB wire)": ingest_all(both, embedder, pdfs),
        }
    finally:
        server.stop()
        mongo.stop()


def run(options: SuiteOptions) -> Record:
    import pymilvus

    with tempfile.TemporaryDirectory() as folder:
        results = measure(Path(folder), PDFS)
    return Record(
        suite="servers",
        command=options.command,
        variant=options.variant,
        systems={setup: "" for setup in results},
        datasets={"pdfs": ", ".join(p.name for p in PDFS), "pymilvus": pymilvus.__version__},
        metrics={"setups": results},
        timings={"load": _load()},
    )
