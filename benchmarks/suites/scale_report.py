"""`scale.md` from a scale record: latency, memory, cold open, add and delete per size."""

from __future__ import annotations

from typing import Any

from benchmarks.records import Record
from benchmarks.tables import record_header


def render(record: Record) -> str:
    rows: list[dict[str, Any]] = record.metrics["rows"]
    build_s = {int(k): v for k, v in record.timings["build_s"].items()}
    what = (
        f"Embedded stack (Milvus Lite, SQLite, bm25s files). {record.datasets['questions']}, "
        "each asked once per collection after one warm-up question; every collection measured "
        "in a fresh process (cold open and resident memory are what a new `serve` or `query` "
        "process pays)."
    )
    lines = [
        *record_header("A library at scale", record, what),
        "| chunks | build s | cold open s | retrieve p50 / p95 ms | answer p50 / p95 ms "
        "| RSS MB | add 95-page PDF s | first question after add s | delete s "
        "| first question after delete s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        size = int(row["collection"].split("_")[-1])
        extra = [
            f"{row[k]:.2f}" if k in row else "-"
            for k in (
                "add_s",
                "first_question_after_add_s",
                "delete_s",
                "first_question_after_delete_s",
            )
        ]
        lines.append(
            f"| {row['chunks']:,} | {build_s.get(size, 0):.0f} | {row['cold_open_s']:.1f} "
            f"| {row['retrieve_ms'][0]:.0f} / {row['retrieve_ms'][1]:.0f} "
            f"| {row['answer_ms'][0]:.0f} / {row['answer_ms'][1]:.0f} | {row['rss_mb']:.0f} | "
            + " | ".join(extra)
            + " |"
        )
    lines += ["", million_note(rows, build_s, record.metrics["disk_gb"])]
    return "\n".join(lines) + "\n"


def million_note(rows: list[dict[str, Any]], build_s: dict[int, float], disk_gb: float) -> str:
    """Why there is no 1M row: what it would take, scaled from this run's largest collection."""
    size = max(build_s, default=0)
    largest = max(rows, key=lambda row: int(row["chunks"]), default=None)
    if not size or not build_s[size] or largest is None:
        return "1M chunks: not built (no build was timed in this run)."
    scale = 1_000_000 / int(largest["chunks"])
    hours = build_s[size] / size * 1_000_000 / 3600
    return (
        f"1M chunks: not built. Scaled linearly from this run: copying it through the "
        f"project's stores would take about {hours:.1f} hours here, the storage folder would "
        f"hold about {disk_gb * scale:.0f} GB (it holds {disk_gb:.1f} GB now, mostly one "
        f"384-dimension vector per sentence), and a process answering over it would need about "
        f"{largest['rss_mb'] * scale / 1024:.0f} GB resident (collection state, page vectors "
        f"and keyword segments), against 24 GB on this machine."
    )
