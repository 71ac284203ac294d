"""`retrieval.md` from a retrieval record: page recall per set and question type, the essay's
context recall, warm latency; and its plot of recall by question type."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.metrics.pages import ALL_TYPES, PageSummary, summarize_latency
from benchmarks.records import Record
from benchmarks.tables import (
    plot_recall_by_type,
    record_header,
    render_summary_table,
    render_type_table,
)

TOP_K = 10
DEFAULT = "project (default)"


def summaries(by_type: Mapping[str, Mapping[str, Any]]) -> dict[str, PageSummary]:
    return {
        kind: PageSummary({int(k): v for k, v in s["recall_at"].items()}, s["mrr"], s["n"])
        for kind, s in by_type.items()
    }


def set_section(set_name: str, systems: Mapping[str, Mapping[str, Any]]) -> list[str]:
    by_system = {name: summaries(by_type) for name, by_type in systems.items()}
    overall = {name: s[ALL_TYPES] for name, s in by_system.items()}
    n = next(iter(overall.values())).n if overall else 0
    return [
        f"## {set_name} ({n} questions)",
        "",
        render_summary_table(overall),
        "",
        "By question type:",
        "",
        render_type_table(by_system),
        "",
    ]


def latency_section(record: Record) -> list[str]:
    spent: dict[str, list[float]] = record.timings["latency_ms"]
    if not spent:
        return []
    lines = [
        "## Warm latency",
        "",
        f"Each question timed {record.timings['repeats']} times per system, the systems taking "
        "turns, fastest kept; p50/p95 over the questions. The stock systems here embed the "
        "question with the project's embedder, so their figures are the search alone "
        "(`library.md` times stock LlamaIndex's own embedding too). Load average when "
        f"measured (1, 5, 15 min): {record.timings['load']} on {record.timings['cores']} cores.",
        "",
        "| what | n | p50 ms | p95 ms | max ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, timings in spent.items():
        s = summarize_latency(timings)
        lines.append(f"| {name} | {s.n} | {s.p50_ms:.1f} | {s.p95_ms:.1f} | {s.max_ms:.1f} |")
    return [*lines, ""]


def render(record: Record) -> str:
    variants = [f"- {name}: {what}" for name, what in record.systems.items()]
    what = (
        f"Parser `{record.datasets['parser']}`, top-{TOP_K} chunks per question, each question "
        "searching only its own document. Page recall@k: 1 when an evidence page is among the "
        "first k distinct pages of the ranked chunks, averaged; MRR over distinct pages (0 "
        "beyond 10). Stock dense: PyMuPDF page text, `SentenceSplitter(1024, 200)`, "
        "`VectorStoreIndex`, MiniLM. Stock hybrid: `QueryFusionRetriever` (reciprocal rerank, "
        "one query) over that retriever and `BM25Retriever`. Systems:\n\n" + "\n".join(variants)
    )
    lines = [
        *record_header("Retrieval quality and latency beside stock LlamaIndex", record, what),
        "## Ingestion",
        "",
        "| document | pages | chunks | seconds |",
        "|---|---:|---:|---:|",
        *[f"| {n} | {p} | {c} | {s:.1f} |" for n, p, c, s in record.timings["ingestion"]],
        "",
    ]
    for set_name, systems in record.metrics["pages"].items():
        lines += set_section(set_name, systems)
    lines += [
        "## Paul Graham essay: context recall",
        "",
        "Context recall@k: share of reference sentences (> 20 chars) with ≥ 80% of their words "
        "in one of the top-k chunks; hit@1 / MRR: rank of the first chunk holding one.",
        "",
        "| system | hit@1 | MRR | recall@5 | recall@10 |",
        "|---|---:|---:|---:|---:|",
        *[
            f"| {name} | {r['hit_at']['1']:.3f} | {r['mrr']:.3f} | {r['recall_at']['5']:.3f} | "
            f"{r['recall_at']['10']:.3f} |"
            for name, r in record.metrics["essay"].items()
        ],
        "",
        *latency_section(record),
    ]
    return "\n".join(lines)


def plot(record: Record, path: Path) -> Path:
    """Page recall by question type for the default and the stock systems, every set."""
    by_system: dict[str, dict[str, PageSummary]] = {}
    for set_name, systems in record.metrics["pages"].items():
        for name, by_type in systems.items():
            if name == DEFAULT or name.startswith("stock"):
                named = {
                    f"all ({set_name})" if kind == ALL_TYPES else kind: s
                    for kind, s in summaries(by_type).items()
                }
                by_system.setdefault(name, {}).update(named)
    return plot_recall_by_type(by_system, path)
