"""The scale benchmark's results file: a stored record in, `scale.md` out with each deployment's
and size's figures, and a refused size's sentence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.records import Record, write_record
from benchmarks.report import report

FINANCE = "10-K (finance_qa)"


def measured(chunks: int, hit5: float, writer: str) -> dict[str, Any]:
    return {
        "collection": f"scale_{chunks}",
        "chunks": chunks,
        "cold_open_s": 3.04,
        "after_open": {"rss_mb": 700.0, "peak_rss_mb": 710.0},
        "after_questions": {"rss_mb": 820.4, "peak_rss_mb": 900.0},
        "retrieve_ms": [29.2, 49.0],
        "answer_ms": [44.0, 78.0],
        "clients": 4,
        "retrieve_concurrent": {"ms": [60.0, 120.0], "per_s": 30.04},
        "answer_concurrent": {"ms": [90.0, 150.0], "per_s": 20.0},
        "hits": {FINANCE: {"hit@1": 0.5, "hit@5": hit5, "hit@10": 1.0, "n": 50}},
        "changes": {
            "pdf": "FOOTLOCKER.pdf",
            "writer": writer,
            "add_s": 12.34,
            "first_question_after_add_s": 0.456,
            "cited_after_add": True,
            "delete_s": 1.5,
            "first_question_after_delete_s": 0.31,
            "cited_after_delete": False,
        },
        "load": [4.0, 5.0],
    }


def row(deployment: str, chunks: int, hit5: float, writer: str) -> dict[str, Any]:
    return {
        "deployment": deployment,
        "size": chunks,
        "status": "ran",
        "build": {"min_chunks": chunks, "chunks": chunks, "seconds": 20.0, "copies": 15},
        "storage_bytes": {"docstore": 250_000 * chunks // 10, "milvus": 30_000, "keywords": 0},
        "measure": measured(chunks, hit5, writer),
    }


def test_a_scale_record_renders_each_deployment_size_and_refusal(tmp_path: Path) -> None:
    refused = "1,000,000 chunks need about 40 GB more on /x; not built."
    record = Record(
        suite="scale",
        command="python -m benchmarks run --suite scale --milvus lite server",
        systems={"lite": "Milvus Lite", "server": "Milvus 2.3.5"},
        datasets={"source": "the library", "questions": "108 questions", "added": "FOOT.pdf"},
        metrics={
            "rows": [
                row("lite", 10_000, 0.9, "this process"),
                {**row("server", 10_000, 0.88, "another process"), "measured": "2026-12-01"},
                {"deployment": "lite", "size": 1_000_000, "status": "refused", "why": refused},
            ],
            "own_library": measured(668, 0.96, ""),
            "source_storage_bytes": {"docstore": 1, "milvus": 1, "keywords": 1},
        },
        timings={"source_ingest_s": 40.0, "load": [4.1, 3.0, 2.0]},
    )
    write_record(record, tmp_path / "records")

    [written] = report(tmp_path / "records", tmp_path, plots=False)

    text = written.read_text(encoding="utf-8")
    assert written.name == "scale.md"
    assert "Reproduce: `python -m benchmarks run --suite scale --milvus lite server`" in text
    assert (
        "| lite | 10,000 | 20 (500) | 3.0 | 700 / 820 (900) | 29 / 49 | 60 / 120 (30.0) "
        "| 44 / 78 | 90 / 150 (20.0) | 4.0 / 5.0 |"
    ) in text
    assert "| server | 10,000 | another process | 12.3 | 0.46 (yes) | 1.5 | 0.31 (no) |" in text
    assert "| lite | 10,000 | 25.0 | 0.0 | 0.0 | 0.25 |" in text  # KB per chunk, GB
    assert f"| {FINANCE} (50) | 0.960 | 0.900 | 0.880 |" in text
    assert f"- lite 1,000,000: refused. {refused}" in text
    assert "- server 10,000 (kept from the run of 2026-12-01): ran (15 copies)." in text
