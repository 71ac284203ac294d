"""`answers.md` from an answers record: numeric and text matches, citation precision,
unsupported numbers and answer time per system, per question group."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.metrics.answers import TOLERANCE
from benchmarks.records import Record
from benchmarks.tables import record_header

Row = dict[str, Any]


def render(record: Record) -> str:
    scores: dict[str, list[Row]] = record.metrics["scores"]
    what = (
        "The 10-K questions (finance_qa) and the MMLongBench-Doc dev split, one collection per "
        f"document; project answers: {record.metrics['model']}. The stock answer is the best "
        "sentence (MiniLM cosine with the question) of the best chunk of each stock LlamaIndex "
        "retriever, citing that chunk's page."
    )
    lines = [
        *record_header(
            "Answers scored: the project beside the stock best-sentence answer", record, what
        ),
        "Numeric match: the answer's first number (numbers the question states left out) within",
        f"{TOLERANCE:.0%} of the reference's first figure, at any of the scales 1, 10³, 10⁶, 10⁹;",
        "*any*: some number of the answer matches. Text:",
        "normalized reference (every item of a list) inside the normalized answer. Citation",
        "precision: share of cited sources on an evidence page (answers citing nothing left out).",
        "Unsupported: share of answers with a number no cited source holds",
        "(`metadata.unsupportedNumbers`; for the stock answer the same check over its chunk).",
        "",
    ]
    for set_name, title in (
        ("finance_qa", "10-K questions (finance_qa)"),
        ("mmlongbench", "MMLongBench-Doc dev split"),
    ):
        lines += [f"## {title}", "", *table(scores, set_name), ""]
    lines += ["## Answer time", "", "| system | p50 ms | p95 ms |", "|---|---|---|"]
    for name, rows in scores.items():
        times = sorted(s["seconds"] * 1000 for s in rows)
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        lines.append(f"| {name} | {statistics.median(times):.0f} | {p95:.0f} |")
    lines += ["", f"Settings: {json.dumps(record.metrics['settings'])}", ""]
    return "\n".join(lines)


def table(scores: dict[str, list[Row]], set_name: str) -> list[str]:
    groups = sorted({s["group"] for s in next(iter(scores.values())) if s["set"] == set_name})
    header = "| group | system | numeric match (first / any) | text match | citation precision |"
    rows = [header + " unsupported |", "|---|---|---|---|---|---|"]
    for group in [*groups, "all"]:
        for name, every in scores.items():
            chosen = [
                s for s in every if s["set"] == set_name and (group == "all" or s["group"] == group)
            ]
            rows.append(f"| {group} | {name} | " + " | ".join(cells(chosen)) + " |")
    return rows


def cells(scores: Sequence[Row]) -> list[str]:
    numeric = [s for s in scores if s["numeric"]]
    textual = [s for s in scores if s["textual"]]
    precisions = [s["precision"] for s in scores if s["precision"] is not None]
    return [
        share_pair(numeric, lambda s: s["first"], lambda s: s["any"]),
        share(textual, lambda s: s["text"]),
        f"{statistics.mean(precisions):.2f} ({len(precisions)})" if precisions else "–",
        share(scores, lambda s: s["unsupported"]),
    ]


def share(scores: Sequence[Row], hit: Callable[[Row], bool]) -> str:
    if not scores:
        return "–"
    return f"{sum(map(hit, scores)) / len(scores):.2f} ({sum(map(hit, scores))}/{len(scores)})"


def share_pair(
    scores: Sequence[Row], first: Callable[[Row], bool], anywhere: Callable[[Row], bool]
) -> str:
    if not scores:
        return "–"
    count = len(scores)
    return (
        f"{sum(map(first, scores)) / count:.2f} / {sum(map(anywhere, scores)) / count:.2f} "
        f"(n={count})"
    )
