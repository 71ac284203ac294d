"""Storage per chunk in the embedded deployment, per sentence-vector encoding.

The Microsoft and Netflix 10-Ks are ingested into one collection of a fresh storage folder per
encoding (SENTENCE_VECTOR_ENCODING: float16, int8; float32 would hold twice float16's vector
bytes), through the project's engine with its default settings otherwise. Then, engine closed
(SQLite's write-ahead log checkpointed into the file), the bytes on disk of the SQLite docstore,
the Milvus Lite files and the keyword files are divided by the chunks. Last, in the final
folder, the Netflix 10-K is deleted and the docstore's file measured again: SQLite reuses the
freed pages for later writes but does not give them back to the file system without VACUUM,
which the project does not run.

Run: .venv/bin/python -m benchmarks.vector_storage
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from pathlib import Path

import config
from benchmarks.tables import RESULTS, publish, shared_data_missing
from citerag.engine import Engine
from citerag.eval.machine import describe_machine
from citerag.settings import settings_from_config
from citerag.settings.choices import SentenceVectorEncoding

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "finance"
PDFS = [SHARED / "MICROSOFT_2021_10K.pdf", SHARED / "NETFLIX_2020_10K.pdf"]
ENCODINGS: tuple[SentenceVectorEncoding, ...] = ("float16", "int8")
COLLECTION = "finance"


def folder_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def docstore_bytes(storage: Path) -> int:
    """The SQLite file with its write-ahead log and shared-memory file, when any is left."""
    return sum(folder_bytes(p) for p in storage.glob("docstore.sqlite*"))


def vector_rows(storage: Path) -> tuple[int, int]:
    """(vectors, their blobs' bytes) in the docstore's sentence_vectors table."""
    with sqlite3.connect(storage / "docstore.sqlite") as conn:
        count, size = conn.execute(
            "SELECT SUM(row_count), SUM(LENGTH(vectors)) FROM sentence_vectors"
        ).fetchone()
    return int(count), int(size)


def free_pages(storage: Path) -> tuple[int, int]:
    """(pages on SQLite's free list, page size)."""
    with sqlite3.connect(storage / "docstore.sqlite") as conn:
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    return int(free), int(size)


def ingest(storage: Path, encoding: SentenceVectorEncoding) -> int:
    settings = settings_from_config(config).with_overrides(
        storage_dir=storage, llm_provider="", sentence_vector_encoding=encoding
    )
    engine = Engine(settings)
    try:
        return sum(engine.ingest(pdf, COLLECTION).chunks for pdf in PDFS)
    finally:
        engine.close()


def measure(storage: Path, encoding: SentenceVectorEncoding) -> dict[str, float]:
    chunks = ingest(storage, encoding)
    vectors, vector_bytes = vector_rows(storage)
    keywords = storage / "keywords"
    milvus = sum(folder_bytes(p) for p in storage.glob("milvus*"))
    return {
        "chunks": chunks,
        "vectors": vectors,
        "docstore": docstore_bytes(storage) / chunks,
        "vector blobs": vector_bytes / chunks,
        "milvus": milvus / chunks,
        "keywords": folder_bytes(keywords) / chunks,
    }


def after_delete(storage: Path) -> tuple[int, int, int]:
    """(docstore bytes before, after deleting the Netflix 10-K, free-list bytes after)."""
    before = docstore_bytes(storage)
    engine = Engine(settings_from_config(config).with_overrides(storage_dir=storage))
    try:
        engine.delete(PDFS[1].name, COLLECTION)
    finally:
        engine.close()
    free, page = free_pages(storage)
    return before, docstore_bytes(storage), free * page


def report(rows: dict[str, dict[str, float]], deleted: tuple[int, int, int]) -> str:
    first = next(iter(rows.values()))
    lines = [
        "# Storage per chunk by sentence-vector encoding",
        "",
        f"{describe_machine()} Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        "Reproduce: `python -m benchmarks.vector_storage`. The Microsoft and Netflix 10-Ks in "
        f"one collection ({int(first['chunks'])} chunks, {int(first['vectors'])} sentence and "
        "page-head vectors of 384 dimensions), embedded deployment (SQLite docstore, Milvus "
        "Lite, keyword files), bytes on disk divided by the chunks.",
        "",
        "| SENTENCE_VECTOR_ENCODING | docstore B/chunk | of which vector blobs | Milvus Lite "
        "B/chunk | keyword files B/chunk | total B/chunk |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for encoding, row in rows.items():
        total = row["docstore"] + row["milvus"] + row["keywords"]
        lines.append(
            f"| {encoding} | {row['docstore']:,.0f} | {row['vector blobs']:,.0f} | "
            f"{row['milvus']:,.0f} | {row['keywords']:,.0f} | {total:,.0f} |"
        )
    before, after, free = deleted
    lines += [
        "",
        f"Deleting the Netflix 10-K ({ENCODINGS[-1]} folder): the docstore file went from "
        f"{before:,} to {after:,} bytes, {free:,} of them on SQLite's free list. The file does "
        "not shrink after deletes (no VACUUM, which rewrites the whole file under a lock); "
        "later ingests reuse the free pages.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    if shared_data_missing(PDFS):
        return
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for encoding in ENCODINGS:
            rows[encoding] = measure(Path(folder) / encoding, encoding)
            print(encoding, rows[encoding])
        deleted = after_delete(Path(folder) / ENCODINGS[-1])
    publish(report(rows, deleted), RESULTS / "vector_storage.md")


if __name__ == "__main__":
    main()
