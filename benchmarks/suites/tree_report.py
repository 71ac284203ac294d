"""`tree.md` from a tree record: page recall per question set and type for the default mode,
tree mode and its two scoring levers, the evidence in the text handed to the answerer, the tree
build time beside each ingest, and the latency per question."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.metrics.pages import PageScore, summarize_latency
from benchmarks.records import Record
from benchmarks.tables import record_header, render_latency_table, render_question_set

Stored = dict[str, Any]  # one system over one set: {scores, in_context, context_chars, ...}


def page_scores(stored: Stored) -> list[PageScore]:
    """The record's per-question scores as the page metrics take them."""
    return [
        PageScore(
            question_id=s["id"],
            question_type=s["type"],
            hits={int(k): hit for k, hit in s["hits"].items()},
            reciprocal_rank=s["rr"],
            pages=tuple(s["pages"]),
        )
        for s in stored["scores"]
    ]


def ingest_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = [
        "| document | collection | pages | ingest s | tree build s | tree share of ingest |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        seconds, tree_seconds = row["seconds"], row["tree_seconds"]
        tree = f"{tree_seconds:.2f}" if tree_seconds is not None else "n/a (not re-ingested)"
        share = f"{tree_seconds / seconds:.1%}" if tree_seconds is not None and seconds else "n/a"
        lines.append(
            f"| {row['document']} | {row['collection']} | {row['pages']} | {seconds:.1f} "
            f"| {tree} | {share} |"
        )
    return lines


def context_table(sets: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = [
        "| questions | system | evidence page in context | mean pages | mean characters |",
        "|---|---|---:|---:|---:|",
    ]
    for set_name, data in sets.items():
        for name, stored in data["systems"].items():
            hit = statistics.fmean(stored["in_context"])
            pages = statistics.fmean(stored["context_pages"])
            chars = statistics.fmean(stored["context_chars"])
            lines.append(f"| {set_name} | {name} | {hit:.3f} | {pages:.1f} | {chars:,.0f} |")
    return lines


def render(record: Record) -> str:
    sets: dict[str, dict[str, Any]] = record.metrics["sets"]
    what = (
        f"The two 10-Ks ({record.datasets['pdfs']}), questions from {record.datasets['sets']}, "
        f"parser `{record.datasets['parser']}`, no LLM (offline node selection, extractive "
        "answers). Each question is asked of a collection holding only its own 10-K, and of one "
        "collection holding both. Default mode: `Engine.retrieve` (hybrid + rerank step), "
        "top-10 chunks, pages in rank order. Tree mode: `query --mode tree` (`tree_answer`): "
        "files ranked (a file the question names first, then by its best chunk), 5 sections "
        "per file chosen offline (a node scores its best chunk's score plus title/summary "
        "terms), each section a source whose page is its best-scored chunk's page; cited pages "
        "in citation order are each source's page, then the pages of its highlights. The row "
        "with 1/sqrt(N+1)·Σ node scores swaps in PageIndex's node score (the sum of a node's N "
        "chunks' scores over sqrt(N+1)), all else equal; the row with title weight 0.5 doubles "
        "the title/summary term share's weight (0.25 by default). Pages of the other 10-K (in "
        "the shared collection) take a rank but never match. Page recall@k: 1 when an evidence "
        "page is among the first k distinct pages; MRR over distinct pages (0 beyond 10)."
    )
    lines = [
        *record_header("Tree mode beside the default mode", record, what),
        "## Ingestion and tree build time",
        "",
        *ingest_table(record.metrics["ingestion"]),
        "",
    ]
    for set_name, data in sets.items():
        scores = {name: page_scores(stored) for name, stored in data["systems"].items()}
        lines.append(render_question_set(f"{set_name} ({data['questions']} questions)", scores))
    max_chars = int(record.datasets["max_node_chars"])
    load = record.timings["load"]
    latencies = {name: summarize_latency(ms) for name, ms in record.timings["latency_ms"].items()}
    lines += [
        "## Evidence in the text handed to the answerer",
        "",
        "Default mode: the 10 chunks' pages. Tree mode: the pages whose text is in the chosen "
        f"sections' content (each cut at {max_chars:,} characters).",
        "",
        *context_table(sets),
        "",
        "## Latency per question (warm after the first)",
        "",
        f"Load average (1, 5, 15 min) at start: {load['start']}; at end: {load['end']}.",
        "",
        render_latency_table(latencies),
    ]
    return "\n".join(lines) + "\n"
