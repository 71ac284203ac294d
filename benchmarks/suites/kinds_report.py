"""`kinds.md` from a kinds record: page hits per set and document type, the essay's context
recall, and what each variant costs per question."""

from __future__ import annotations

from benchmarks.records import Record
from benchmarks.tables import rate_cells, record_header
from citerag.eval.metrics import percentile

KS = (1, 5, 10)


def hit_lines(record: Record) -> list[str]:
    lines = [
        "## Page hits per labelled set and per document type of the dev split",
        "",
        "| set | n | system | hit@1 | hit@5 | hit@10 |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for group, systems in record.metrics["hits"].items():
        for system, rates in systems.items():
            lines.append(f"| {group} | {int(rates['n'])} | {system} | {rate_cells(rates, KS)} |")
    return [*lines, ""]


def essay_lines(record: Record) -> list[str]:
    essay = record.metrics["essay"]
    questions = next(iter(essay.values()))["questions"] if essay else 0
    lines = [
        f"## Paul Graham essay ({questions} questions): context recall, asked of the whole library",
        "",
        "Share of reference sentences (> 20 chars) with ≥ 80% of their words in one of the top-k "
        "chunks; hit@1: a chunk holding one ranked first.",
        "",
        "| system | hit@1 | recall@5 | recall@10 |",
        "|---|---:|---:|---:|",
    ]
    for name, report in essay.items():
        lines.append(
            f"| {name} | {report['hit_at']['1']:.3f} | {report['recall_at']['5']:.3f} | "
            f"{report['recall_at']['10']:.3f} |"
        )
    return [*lines, ""]


def cost_lines(record: Record) -> list[str]:
    lines = [
        "## What each variant costs per question",
        "",
        f"Retrieve ms over every page-set question, each timed {record.timings['repeats']} times "
        "per variant, the variants taking turns, fastest kept (load average "
        f"{record.timings['load']}).",
        "",
        "| system | p50 | p95 |",
        "|---|---:|---:|",
    ]
    for name, values in record.timings["retrieve_ms"].items():
        lines.append(f"| {name} | {percentile(values, 0.5):.1f} | {percentile(values, 0.95):.1f} |")
    return [*lines, ""]


def render(record: Record) -> str:
    variants = [f"- {name}: {changes}" for name, changes in record.systems.items()]
    what = (
        f"{record.datasets['pdfs']} in one collection; every question asked of the whole "
        "library. A hit: a chunk of the question's document on an evidence page among the first "
        "k distinct (document, page) places; 10 chunks per system. Stock: PyMuPDF page text, "
        "`SentenceSplitter(1024, 200)`, MiniLM (`VectorStoreIndex`), `BM25Retriever`, and "
        "`QueryFusionRetriever` (reciprocal rank, one query) over both; lean stock: the same "
        "chunks and model through `SentenceTransformer.encode` and a dot product. Project "
        "variants, the default with settings changed:\n\n" + "\n".join(variants)
    )
    header = record_header(
        "Retrieval on every kind of document: project against stock", record, what
    )
    return "\n".join(
        [
            *header,
            *hit_lines(record),
            *essay_lines(record),
            *cost_lines(record),
            "Where the default's time goes in the parts the variants switch (cProfile, every "
            "page-set question once):",
            "",
            "```",
            str(record.metrics["evidence_profile"]).strip(),
            "```",
            "",
        ]
    )
