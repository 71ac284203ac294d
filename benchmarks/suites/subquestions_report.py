"""`subquestions.md` from a subquestions record: ingest with enrichment, compound questions,
and where the filters help."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from benchmarks.records import Record
from benchmarks.tables import record_header
from citerag.eval.metrics import percentile


def render(record: Record) -> str:
    data: dict[str, Any] = record.metrics
    ingest_rows: list[list[list[Any]]] = record.timings["ingest"]
    rows = data["compound"]["rows"]
    singles = [t for r in rows for t in r["times"][:2]]
    compounds = [r["times"][2] for r in rows]
    mean: Callable[[str], float] = lambda key: statistics.fmean(r[key] for r in rows)  # noqa: E731
    lines = [
        *record_header(
            "Sub-questions, filters and enrichment (offline)",
            record,
            "The Paul Graham essay and the Netflix 10-K, offline (extractive answers).",
        ),
        "## Ingest time, `metadata=entity` beside `none`",
        "",
        "The whole ingest is timed on a shared 2-core machine (other work ran beside it); the "
        "enrich step is also timed alone on the stored chunks.",
        "",
        "| metadata | document | pages | ingest s | enrich step s |",
        "|---|---|---|---|---|",
        *[
            f"| {m} | {d} | {p} | {s:.1f} | {e:.2f} |"
            for block in ingest_rows
            for m, d, p, s, e in block
        ],
        "",
        f'## Compound questions ({len(rows)} Paul Graham pairs, "A Also, B")',
        "",
        "Context recall over both parts' reference contexts.",
        "",
        "| system | context recall |",
        "|---|---|",
        f"| parts asked alone, top 10 each | {mean('parts'):.3f} |",
        f"| compound, sub-questions, top 20 by score | {mean('compound'):.3f} |",
        f"| compound, sub-questions, all sources (mean {mean('sources'):.1f}) "
        f"| {mean('compound_all'):.3f} |",
        f"| compound, one retrieval (no planning), top 20 | {mean('single'):.3f} |",
        "",
        f"Sub-questions per compound: mean {mean('sub_questions'):.2f} "
        f"(min {min(r['sub_questions'] for r in rows)}, "
        f"max {max(r['sub_questions'] for r in rows)}).",
        "",
        "| | p50 ms | p95 ms |",
        "|---|---|---|",
        f"| a part alone | {1000 * percentile(singles, 0.5):.0f} | "
        f"{1000 * percentile(singles, 0.95):.0f} |",
        f"| a compound | {1000 * percentile(compounds, 0.5):.0f} | "
        f"{1000 * percentile(compounds, 0.95):.0f} |",
        "",
        f"Compound p50 / single p50 = {percentile(compounds, 0.5) / percentile(singles, 0.5):.2f}.",
        "",
        "## Where filters help",
        "",
        "| filter scope | year questions: cited pages that mention the year | year questions: "
        "at least one | PG recall@10 (44) | Netflix page recall@10 (25) |",
        "|---|---|---|---|---|",
    ]
    for name in data["years"]:
        years = data["years"][name]
        lines.append(
            f"| {name} | {years['precision']:.3f} | {years['hit']:.3f} | "
            f"{data['pg_scopes'][name]:.3f} | {data['finance_scopes'][name]:.3f} |"
        )
    lines.append(f"| no planning (one retrieval), no filters | | | {data['pg_single']:.3f} | |")
    lines += [
        "",
        f'Year questions: "What did the author do in YEAR?" for each of the '
        f"{next(iter(data['years'].values()))['questions']} years the essay mentions.",
        "",
    ]
    lines += ["## Plans of the first compounds", ""]
    lines += [f"- {' | '.join(r['plan'])}" for r in rows[:5]]
    return "\n".join(lines) + "\n"
