"""`servers.md` from a servers record: ingest throughput per storage set-up."""

from __future__ import annotations

from typing import Any

from benchmarks.records import Record
from benchmarks.tables import record_header


def render(record: Record) -> str:
    results: dict[str, list[dict[str, Any]]] = record.metrics["setups"]
    what = (
        f"{record.datasets['pdfs']}, one run each, parser pymupdf, default chunking, no "
        f"enrichment; pymilvus {record.datasets['pymilvus']}, load average "
        f"{record.timings['load']} (1/5/15 min). `Milvus s` and `docstore s` are the time in "
        "those writes alone (Lite flushes after each write; the server does not need to); the "
        "rest is parsing and embedding, which dominate and vary with the machine's load."
    )
    lines = [
        *record_header("Ingest throughput on a Milvus server beside Milvus Lite", record, what),
        "| set-up | document | pages | chunks | seconds | chunks/s | Milvus s | docstore s |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for setup, rows in results.items():
        for row in rows:
            rate = row["chunks"] / row["seconds"]
            lines.append(
                f"| {setup} | {row['name']} | {row['pages']} | {row['chunks']} | "
                f"{row['seconds']:.1f} | {rate:.1f} | {row['milvus']:.2f} | "
                f"{row['docstore']:.2f} |"
            )
    return "\n".join(lines) + "\n"
