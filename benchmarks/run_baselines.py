"""Smoke run of the stock LlamaIndex baselines on the finance questions (page recall, MRR).

Runs stock dense and stock hybrid (see ``benchmarks/systems/stock_llamaindex.py``) over
``../shared/eval/finance/finance_qa.json`` and, when present,
``benchmarks/data/statement_questions.json``; prints the tables, writes
``benchmarks/results/baselines.md`` and ``benchmarks/results/finance_recall.png``.

    .venv/bin/python -m benchmarks.run_baselines [--top-k 10]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.records import RESULTS

PROJECT = Path(__file__).resolve().parents[1]

EVAL = PROJECT.parent / "shared" / "eval"
FINANCE = EVAL / "finance"
FINANCE_QA = FINANCE / "finance_qa.json"
STATEMENT_QA = PROJECT / "benchmarks" / "data" / "statement_questions.json"


def load_questions(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return list(data["questions"] if isinstance(data, dict) else data)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--top-k", type=int, default=10, help="chunks retrieved per question")
    parser.add_argument("--out", type=Path, default=RESULTS / "baselines.md")
    parser.add_argument("--plot", type=Path, default=RESULTS / "finance_recall.png")
    args = parser.parse_args(argv)

    if not FINANCE_QA.is_file():
        print("skipped: ../shared/eval absent")
        return 0

    from benchmarks.metrics.pages import PageScore, score_pages, summarize_latency
    from benchmarks.systems.stock_llamaindex import (
        StockBaseline,
        StockDense,
        StockHybrid,
        build_document_index,
        minilm_embed_model,
    )
    from benchmarks.tables import (
        by_type,
        plot_recall_by_type,
        render_latency_table,
        render_question_set,
    )
    from citerag.eval.machine import describe_machine

    question_sets = {"finance_qa.json": load_questions(FINANCE_QA)}
    if STATEMENT_QA.is_file():
        question_sets["statement_questions.json"] = load_questions(STATEMENT_QA)
    documents = sorted({q["document"] for qs in question_sets.values() for q in qs})

    embed_model = minilm_embed_model()
    indexes = {}
    build_lines = ["| document | pages | chunks | index seconds |", "|---|---:|---:|---:|"]
    for name in documents:
        started = time.perf_counter()
        indexes[name] = build_document_index(FINANCE / name, embed_model)
        seconds = time.perf_counter() - started
        index = indexes[name]
        build_lines.append(f"| {name} | {index.pages} | {len(index.nodes)} | {seconds:.1f} |")
    print("\n".join(build_lines), "\n")
    baselines: list[StockBaseline] = [StockDense(indexes), StockHybrid(indexes)]

    for baseline in baselines:  # warm-up: model load, BM25 index build, retriever caches
        for name in documents:
            baseline.retrieve("warm-up", name, args.top_k)

    sections: list[str] = []
    all_by_type: dict[str, dict[str, Any]] = {}
    latencies: dict[str, list[float]] = {b.name: [] for b in baselines}
    for set_name, questions in question_sets.items():
        scores: dict[str, list[PageScore]] = {}
        for baseline in baselines:
            scores[baseline.name] = []
            for q in questions:
                started = time.perf_counter()
                passages = baseline.retrieve(q["question"], q["document"], args.top_k)
                latencies[baseline.name].append((time.perf_counter() - started) * 1000)
                scores[baseline.name].append(
                    score_pages(passages, q["evidence_pages"], q["id"], q["type"])
                )
        section = render_question_set(f"{set_name} ({len(questions)} questions)", scores)
        print(section)
        sections.append(section)
        for system, summaries in by_type(scores).items():
            named = {
                f"{t} ({set_name.split('_')[0]})" if t == "all" else t: s
                for t, s in summaries.items()
            }
            all_by_type.setdefault(system, {}).update(named)

    latency = render_latency_table({s: summarize_latency(ms) for s, ms in latencies.items()})
    print("Warm retrieve latency (ms per question, all question sets):\n")
    print(latency)
    plot = plot_recall_by_type(all_by_type, args.plot)
    print(f"\nplot: {plot}")

    header = [
        "# Stock LlamaIndex baselines: page recall on the finance 10-Ks",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} by `python -m benchmarks.run_baselines "
        f"--top-k {args.top_k}`.",
        "",
        describe_machine(),
        "",
        "Stock dense: PyMuPDF `page.get_text()`, one Document per page, "
        "`SentenceSplitter(1024, 200)`, `VectorStoreIndex` with MiniLM "
        "(`HuggingFaceEmbedding`), top-k. Stock hybrid: `QueryFusionRetriever(mode="
        '"reciprocal_rerank", num_queries=1)` over that retriever and '
        "`BM25Retriever.from_defaults(similarity_top_k=k)`. One index per PDF, so each "
        "question searches only its own document.",
        "",
        f"Page recall@k: 1 if an evidence page is among the first k distinct pages of the "
        f"top-{args.top_k} chunks (in rank order), averaged. MRR: reciprocal rank of the first "
        "evidence page among the distinct pages (0 beyond 10).",
        "",
        "## Indexes",
        "",
        *build_lines,
        "",
    ]
    body = [
        *header,
        *sections,
        "## Warm retrieve latency",
        "",
        latency,
        "",
        f"![page recall by type]({plot.name})",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(body), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
