"""Benchmark on ../shared/eval, in one run: the project beside stock LlamaIndex baselines.

- Finance (the 50 labelled questions over two 10-Ks, and the 24 statement questions in
  benchmarks/data): page recall@1/3/5/10 and MRR per question type, for project variants,
  stock dense (VectorStoreIndex, SentenceSplitter(1024, 200), MiniLM) and stock hybrid
  (QueryFusionRetriever, reciprocal rerank, over that index and BM25Retriever).
- Paul Graham (44 questions): context recall@5/@10, hit@1, MRR, for the same systems.
- Warm latency p50/p95 on the Microsoft 10-K questions and on a collection of 10,000+ chunks.
Writes benchmarks/results/retrieval.md and finance_recall.png.

    .venv/bin/python -m benchmarks.bench_eval [--storage DIR] [--skip-latency]
    .venv/bin/python -m benchmarks.bench_eval --compare sentence_vectors=pooled
(`--compare`: the default beside that one setting changed, no latency; written to
retrieval_<setting>_<value>.md.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import config
from benchmarks.metrics.pages import PageScore, score_pages, summarize_latency
from benchmarks.metrics.timing import REPEATS
from benchmarks.metrics.timing import fastest_in_turns as _timed
from benchmarks.records import RESULTS
from benchmarks.systems.profiles import with_finance_words
from benchmarks.systems.project import (
    collection_for,
    ingest_all,
    ingest_tag,
    project_variants,
)
from benchmarks.systems.stock_llamaindex import build_stock_suite
from benchmarks.tables import (
    by_type,
    plot_recall_by_type,
    publish,
    render_question_set,
    shared_data_missing,
)
from citerag.engine import Engine
from citerag.eval.machine import describe_machine
from citerag.eval.metrics import QualityReport, score_question, summarize
from citerag.settings import settings_from_config

PROJECT = Path(__file__).resolve().parents[1]

EVAL = PROJECT.parent / "shared" / "eval"
PG_PDF = EVAL / "paul_graham" / "paul_graham_essay.pdf"
PG_QA = EVAL / "paul_graham" / "paul_graham_qa.json"
FINANCE = EVAL / "finance"
QUESTION_SETS = {
    "finance_qa": FINANCE / "finance_qa.json",
    "statements": PROJECT / "benchmarks" / "data" / "statement_questions.json",
}
PDFS = [PG_PDF, FINANCE / "NETFLIX_2020_10K.pdf", FINANCE / "MICROSOFT_2021_10K.pdf"]
TOP_K = 10
LATENCY_HEADING = "## Warm latency"
DEFAULT = "project (default)"
# What each default was chosen against, measured in the same run.
VARIANTS: dict[str, dict[str, object]] = {
    DEFAULT: {},
    "project, 512-token chunks (previous default)": {"chunk_size": 512, "chunk_overlap": 128},
    "project, RRF k 60 (previous default)": {"rrf_k": 60},
    "project, filing words unweighted": {"filing_keyword_weight": 1.0},
    "project, no page evidence": {"page_weight": 0.0},
    "project, page weight 2": {"page_weight": 2.0},
    "project + MaxSim rerank": {"reranker": "maxsim"},
    "project + best-sentence rerank": {"reranker": "sentence"},
}


def main() -> int:
    args = _arguments()
    if shared_data_missing([*PDFS, PG_QA, *QUESTION_SETS.values()]):
        return 0
    with tempfile.TemporaryDirectory(prefix="citerag-bench-") as scratch:
        storage = Path(args.storage) if args.storage else Path(scratch)
        settings = settings_from_config(config).with_overrides(
            storage_dir=storage, llm_provider="", reranker="auto"
        )
        engine = Engine(with_finance_words(settings))
        variants, out = _compared(args.compare) if args.compare else (VARIANTS, "retrieval.md")
        if args.compare and settings.embedding_backend != "auto":  # the whole run's backend
            out = out.replace(".md", f"_{settings.embedding_backend}.md")
        try:
            plot = RESULTS / out.replace("retrieval", "finance_recall").replace(".md", ".png")
            report = (
                latency_only(engine) if args.latency_only else run(engine, args, variants, plot)
            )
        finally:
            engine.close()
    publish(report, RESULTS / out)
    return 0


def _compared(change: str) -> tuple[dict[str, dict[str, object]], str]:
    """The default beside one changed setting ("name=value"), and where the report goes."""
    name, _, text = change.partition("=")
    if name.startswith("embedding_"):  # the variants share the engine's one embedder
        raise SystemExit(
            f"--compare cannot change {name}: every variant shares one embedder; run the "
            f"benchmark with {name.upper()}={text} in the environment instead."
        )
    try:
        value: object = json.loads(text)
    except json.JSONDecodeError:
        value = text
    return {DEFAULT: {}, f"project, {name}={text}": {name: value}}, f"retrieval_{name}_{text}.md"


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--storage", help="keep the project's storage here (re-runs skip ingest)")
    parser.add_argument("--skip-latency", action="store_true", help="quality only")
    parser.add_argument(
        "--latency-only",
        action="store_true",
        help="measure latency again (e.g. on a quiet machine) and replace that section only",
    )
    parser.add_argument(
        "--compare",
        metavar="SETTING=VALUE",
        help="only the default beside this one change (e.g. sentence_vectors=pooled), no latency",
    )
    args = parser.parse_args()
    args.skip_latency = args.skip_latency or bool(args.compare)
    return args


def run(
    engine: Engine,
    args: argparse.Namespace,
    variants: dict[str, dict[str, object]],
    plot_file: Path,
) -> str:
    ingestion = ingest_all(engine, PDFS)
    for changes in variants.values():
        if ingest_tag(changes):
            ingestion += ingest_all(engine, PDFS, changes)
    systems: list[Any] = project_variants(engine, variants)
    suite = build_stock_suite(PDFS, engine.embed_model)
    systems += suite.baselines
    sections: list[str] = []
    plot_data: dict[str, dict[str, Any]] = {}
    for set_name, path in QUESTION_SETS.items():
        questions = json.loads(path.read_text(encoding="utf-8"))
        scores = {s.name: [_page_score(s, q) for q in questions] for s in systems}
        sections.append(render_question_set(f"{set_name} ({len(questions)} questions)", scores))
        for system, summaries in by_type(scores).items():
            named = {f"all ({set_name})" if t == "all" else t: v for t, v in summaries.items()}
            plot_data.setdefault(system, {}).update(named)
        print(sections[-1])
    plot = plot_recall_by_type(
        {s: plot_data[s] for s in (DEFAULT, *[b.name for b in suite.baselines])},
        plot_file,
    )
    pg = _paul_graham(systems)
    latency = "" if args.skip_latency else _latency(engine, suite)
    return _render(ingestion, sections, pg, latency, plot.name, engine)


def latency_only(engine: Engine) -> str:
    """The existing results with their latency section measured again."""
    ingest_all(engine, PDFS)
    latency = _latency(engine, build_stock_suite(PDFS, engine.embed_model))
    previous = (RESULTS / "retrieval.md").read_text(encoding="utf-8")
    kept = previous.split(LATENCY_HEADING, 1)[0].rstrip("\n")
    return f"{kept}\n\n{LATENCY_HEADING}\n\n{latency}\n"


def _page_score(system: Any, question: dict[str, Any]) -> PageScore:
    passages = system.retrieve(question["question"], question["document"], TOP_K)
    return score_pages(passages, question["evidence_pages"], question["id"], question["type"])


def _paul_graham(systems: Sequence[Any]) -> dict[str, QualityReport]:
    questions = json.loads(PG_QA.read_text(encoding="utf-8"))
    results = {}
    for system in systems:
        scores = [
            score_question(
                [p.text for p in system.retrieve(q["query"], PG_PDF.name, TOP_K)],
                q["reference_contexts"],
            )
            for q in questions
        ]
        results[system.name] = summarize(scores)
    return results


def _latency(engine: Engine, suite: Any) -> str:
    from benchmarks.datasets.big_collection import build_big_collection, drop_collection
    from benchmarks.systems.stock_big import stock_dense_over

    msft = "MICROSOFT_2021_10K.pdf"
    questions = [
        q["question"]
        for path in QUESTION_SETS.values()
        for q in json.loads(path.read_text(encoding="utf-8"))
        if q["document"] == msft
    ]
    collection = collection_for(msft)
    rows = _timed(
        {
            "Microsoft 10-K: project retrieve (hybrid + page evidence + rerank step)": (
                lambda q: engine.retrieve(q, collection, TOP_K)
            ),
            "Microsoft 10-K: project full query (sub-questions, highlights, extractive answer)": (
                lambda q: engine.query(q, collection, TOP_K)
            ),
            "Microsoft 10-K: stock dense retrieve": (
                lambda q: suite.dense.retrieve(q, msft, TOP_K)
            ),
            "Microsoft 10-K: stock hybrid retrieve": (
                lambda q: suite.hybrid.retrieve(q, msft, TOP_K)
            ),
        },
        questions,
    )
    sources = [collection_for(p.name) for p in PDFS]
    started = time.perf_counter()
    big_vectors = build_big_collection(engine, sources, "big")
    chunks = len(big_vectors)
    print(f"big collection: {chunks} chunks in {time.perf_counter() - started:.0f} s")
    stock = stock_dense_over(engine, "big", engine.embed_model, big_vectors)
    rows |= _timed(
        {
            f"{chunks:,} chunks: project retrieve": lambda q: engine.retrieve(q, "big", TOP_K),
            f"{chunks:,} chunks: project full query": lambda q: engine.query(q, "big", TOP_K),
            f"{chunks:,} chunks: stock dense retrieve (same chunks)": stock.retrieve,
        },
        questions,
    )
    drop_collection(engine, "big")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        f"Each question timed {REPEATS} times per system, the systems taking turns, fastest "
        "kept; p50/p95 over the questions. The stock systems here embed the question with the "
        "project's embedder, so their figures are the search alone (stock LlamaIndex as "
        "installed embeds it with PyTorch: `library.md` times both). "
        f"Load average when measured (1, 5, 15 min): {load} on {os.cpu_count()} cores.",
        "",
        "| what | n | p50 ms | p95 ms | max ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, timings in rows.items():
        s = summarize_latency(timings)
        lines.append(f"| {name} | {s.n} | {s.p50_ms:.1f} | {s.p95_ms:.1f} | {s.max_ms:.1f} |")
    return "\n".join(lines)


def _render(
    ingestion: Sequence[tuple[str, int, int, float]],
    sections: Sequence[str],
    pg: dict[str, QualityReport],
    latency: str,
    plot_name: str,
    engine: Engine,
) -> str:
    lines = [
        "# Benchmark: retrieval quality and latency beside stock LlamaIndex",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} by `python -m benchmarks.bench_eval`, one run, "
        f"parser `{engine.settings.parser}`, top-{TOP_K} chunks per question, each question "
        "searching only its own document.",
        "",
        describe_machine(),
        "",
        "Page recall@k: 1 when an evidence page is among the first k distinct pages of the "
        "ranked chunks, averaged; MRR over distinct pages (0 beyond 10). Stock dense: PyMuPDF "
        "page text, `SentenceSplitter(1024, 200)`, `VectorStoreIndex`, MiniLM. Stock hybrid: "
        "`QueryFusionRetriever` (reciprocal rerank, one query) over that retriever and "
        "`BM25Retriever`. Variants: the project with one setting changed.",
        "",
        "## Ingestion",
        "",
        "| document | pages | chunks | seconds |",
        "|---|---:|---:|---:|",
        *[f"| {n} | {p} | {c} | {s:.1f} |" for n, p, c, s in ingestion],
        "",
        *sections,
        f"![page recall by question type]({plot_name})",
        "",
        "## Paul Graham essay (44 questions): context recall",
        "",
        "Context recall@k: share of reference sentences (> 20 chars) with ≥ 80% of their words "
        "in one of the top-k chunks; hit@1 / MRR: rank of the first chunk holding one.",
        "",
        "| system | hit@1 | MRR | recall@5 | recall@10 |",
        "|---|---:|---:|---:|---:|",
        *[
            f"| {name} | {r.hit_at[1]:.3f} | {r.mrr:.3f} | {r.recall_at[5]:.3f} | "
            f"{r.recall_at[10]:.3f} |"
            for name, r in pg.items()
        ],
        "",
    ]
    if latency:
        lines += [LATENCY_HEADING, "", latency, ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
