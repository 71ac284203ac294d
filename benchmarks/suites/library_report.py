"""`library.md` from a library record: ingest seconds, page hits, latency, the answer's profile."""

from __future__ import annotations

from typing import Any

from benchmarks.records import Record
from benchmarks.tables import rate_cells, record_header
from citerag.eval.metrics import percentile

KS = (1, 5, 10)
STOCK_DENSE = "stock dense retrieve"


def ingest_lines(record: Record) -> list[str]:
    ingest = record.timings["ingest"]
    stock = ingest["stock LlamaIndex"]
    lean = ingest["stock lean"]
    caches = "fresh (no exported models)" if record.timings.get("fresh_caches") else "warm"
    lines = [
        "## Ingest (one fresh process each, imports and model load included)",
        "",
        f"The project's model caches: {caches}.",
        "",
        "| path | seconds | × stock LlamaIndex | × lean stock |",
        "|---|---:|---:|---:|",
        f"| stock LlamaIndex ({stock['chunks']} chunks) | {stock['seconds']:.1f} | 1.00 | "
        f"{stock['seconds'] / lean['seconds']:.2f} |",
        f"| lean stock ({lean['chunks']} chunks) | {lean['seconds']:.1f} | "
        f"{lean['seconds'] / stock['seconds']:.2f} | 1.00 |",
    ]
    for label, row in ingest["project"].items():
        lines.append(
            f"| project, {label} (`main.py ingest`: {row['total']}) | {row['seconds']:.1f} | "
            f"{row['seconds'] / stock['seconds']:.2f} | {row['seconds'] / lean['seconds']:.2f} |"
        )
    bound = record.metrics["embedding_bound"]
    lines += [
        "",
        f"Embedding-bound limit: all page text ({bound['tokens']:,} word pieces) encoded once by "
        f"the default embedder in {bound['windows']:,} windows of 254 takes "
        f"{bound['seconds']:.1f} s in-process. Both stocks embed only the first 256 word pieces "
        "of each 1024-token chunk (about a third of the text); the project embeds all of it "
        "(every sentence on its own plus one head per page).",
        "",
    ]
    return lines


def hit_lines(record: Record) -> list[str]:
    lines = [
        "## Page hits, every question asked of the whole library",
        "",
        "A hit: a retrieved chunk of the question's document on one of its evidence pages among "
        "the first k distinct (document, page) places; 10 chunks per system.",
        "",
        "| set | system | hit@1 | hit@5 | hit@10 |",
        "|---|---|---:|---:|---:|",
    ]
    for set_name, systems in record.metrics["hits"].items():
        for system, rates in systems.items():
            lines.append(f"| {set_name} | {system} | {rate_cells(rates, KS)} |")
    return [*lines, ""]


def latency_lines(spent: dict[str, dict[str, list[float]]]) -> list[str]:
    sets = list(spent[STOCK_DENSE])
    stock = spent[STOCK_DENSE]
    stock_p50 = percentile([v for values in stock.values() for v in values], 0.5)
    lines = [
        "## Latency (ms per question, every question in turn)",
        "",
        "| path | p50 | p95 | × stock dense p50 | " + " | ".join(f"p50 {s}" for s in sets) + " |",
        "|---|---:|---:|---:|" + "---:|" * len(sets),
    ]
    for name, by_set in spent.items():
        every = [v for values in by_set.values() for v in values]
        p50, p95 = percentile(every, 0.5), percentile(every, 0.95)
        per_set = " | ".join(
            f"{percentile(by_set[s], 0.5):.1f} "
            f"({percentile(by_set[s], 0.5) / percentile(stock[s], 0.5):.2f}×)"
            for s in sets
        )
        lines.append(f"| {name} | {p50:.1f} | {p95:.1f} | {p50 / stock_p50:.2f} | {per_set} |")
    return [
        *lines,
        "",
        "'stock dense retrieve' embeds the question as stock LlamaIndex does (PyTorch through "
        "`HuggingFaceEmbedding`); '..., the project's question embedder' asks the same index "
        "with the project's embedder, so the difference is what embedding one question costs; "
        "the lean stock encodes with `SentenceTransformer.encode` and takes a dot product.",
        "",
    ]


def render(record: Record) -> str:
    systems = "; ".join(f"{name}: {what}" for name, what in record.systems.items())
    header = record_header(
        "The shared PDFs as one library: project against stock",
        record,
        f"{record.datasets['pdfs']} in one collection. Systems: {systems}.",
    )
    profile: Any = record.metrics["answer_profile"]
    return "\n".join(
        [
            *header,
            *ingest_lines(record),
            *hit_lines(record),
            *latency_lines(record.timings["latency_ms"]),
            f"Load average at the end of the run: {record.timings.get('load', '?')}.",
            "",
            "Where the answer's time goes (cProfile over one pass of every question):",
            "",
            "```",
            str(profile).strip(),
            "```",
            "",
        ]
    )
