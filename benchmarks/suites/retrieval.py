"""Retrieval per document on ../shared/eval: the project and its variants beside stock LlamaIndex.

- Finance (the 50 labelled questions over two 10-Ks, and the 24 statement questions in
  benchmarks/data): page recall@1/3/5/10 and MRR per question type, for project variants,
  stock dense (VectorStoreIndex, SentenceSplitter(1024, 200), MiniLM) and stock hybrid
  (QueryFusionRetriever, reciprocal rerank, over that index and BM25Retriever).
- Paul Graham (44 questions): context recall@5/@10, hit@1, MRR, for the same systems.
- Warm latency p50/p95 on the Microsoft 10-K questions and on a collection of 10,000+ chunks
  (`--skip-latency` leaves it out).

Each question searches only its own document (one collection per PDF). `--compare KEY=VALUE`
measures the default beside that one setting changed (no latency), into
`retrieval_<key>_<value>.md`.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import config
from benchmarks.datasets.library import EVAL, PAGE_SETS
from benchmarks.metrics.pages import ALL_TYPES, PageScore, score_pages, summarize_by_type
from benchmarks.metrics.timing import REPEATS, fastest_in_turns
from benchmarks.records import Record
from benchmarks.suites import SuiteOptions
from benchmarks.systems.profiles import with_finance_words
from benchmarks.systems.project import (
    collection_for,
    ingest_all,
    ingest_tag,
    project_variants,
)
from benchmarks.systems.stock_llamaindex import build_stock_suite
from citerag.engine import Engine
from citerag.eval.metrics import score_question, summarize
from citerag.settings import settings_from_config

PG_PDF = EVAL / "paul_graham" / "paul_graham_essay.pdf"
PG_QA = EVAL / "paul_graham" / "paul_graham_qa.json"
FINANCE = EVAL / "finance"
QUESTION_SETS = {
    "finance_qa": PAGE_SETS["10-K (finance_qa)"],
    "statements": PAGE_SETS["statements"],
}
PDFS = [PG_PDF, FINANCE / "NETFLIX_2020_10K.pdf", FINANCE / "MICROSOFT_2021_10K.pdf"]
TOP_K = 10
DEFAULT = "project (default)"
# What each default was chosen against, measured in the same run.
VARIANTS: dict[str, dict[str, object]] = {
    DEFAULT: {},
    "project, 512-token chunks": {"chunk_size": 512, "chunk_overlap": 128},
    "project, RRF k 60": {"rrf_k": 60},
    "project, filing words unweighted": {"filing_keyword_weight": 1.0},
    "project, no page evidence": {"page_weight": 0.0},
    "project, page weight 2": {"page_weight": 2.0},
    "project + MaxSim rerank": {"reranker": "maxsim"},
    "project + best-sentence rerank": {"reranker": "sentence"},
}


def compared(change: str) -> tuple[dict[str, dict[str, object]], str]:
    """The default beside one changed setting ("name=value"), and the results file's suffix."""
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
    return {DEFAULT: {}, f"project, {name}={text}": {name: value}}, f"{name}_{text}"


def page_score(system: Any, question: dict[str, Any]) -> PageScore:
    passages = system.retrieve(question["question"], question["document"], TOP_K)
    return score_pages(passages, question["evidence_pages"], question["id"], question["type"])


def page_summaries(systems: list[Any]) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """Set -> system -> question type (and "all") -> {recall_at: {k: rate}, mrr, n}."""
    found: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for set_name, path in QUESTION_SETS.items():
        questions = json.loads(path.read_text(encoding="utf-8"))
        found[set_name] = {}
        for system in systems:
            by_type = summarize_by_type([page_score(system, q) for q in questions])
            found[set_name][system.name] = {
                kind: {
                    "recall_at": {str(k): v for k, v in s.recall_at.items()},
                    "mrr": s.mrr,
                    "n": s.n,
                }
                for kind, s in by_type.items()
            }
            print(set_name, system.name, found[set_name][system.name][ALL_TYPES], flush=True)
    return found


def essay_recall(systems: list[Any]) -> dict[str, dict[str, Any]]:
    questions = json.loads(PG_QA.read_text(encoding="utf-8"))
    found = {}
    for system in systems:
        report = summarize(
            [
                score_question(
                    [p.text for p in system.retrieve(q["query"], PG_PDF.name, TOP_K)],
                    q["reference_contexts"],
                )
                for q in questions
            ]
        )
        found[system.name] = {
            "hit_at": {str(k): v for k, v in report.hit_at.items()},
            "recall_at": {str(k): v for k, v in report.recall_at.items()},
            "mrr": report.mrr,
            "questions": report.questions,
        }
    return found


def latency(engine: Engine, suite: Any) -> dict[str, list[float]]:
    """Milliseconds per question for each path on the Microsoft 10-K and on a collection of
    10,000+ chunks (the library's documents copied)."""
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
    rows = fastest_in_turns(
        {
            "Microsoft 10-K: project retrieve (hybrid + page evidence + rerank step)": (
                lambda q: engine.retrieve(q, collection, TOP_K)
            ),
            "Microsoft 10-K: project full query (sub-questions, highlights, extractive answer)": (
                lambda q: engine.query(q, collection, top_k=TOP_K)
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
    rows |= fastest_in_turns(
        {
            f"{chunks:,} chunks: project retrieve": lambda q: engine.retrieve(q, "big", TOP_K),
            f"{chunks:,} chunks: project full query": lambda q: engine.query(q, "big", top_k=TOP_K),
            f"{chunks:,} chunks: stock dense retrieve (same chunks)": stock.retrieve,
        },
        questions,
    )
    drop_collection(engine, "big")
    return rows


def run(options: SuiteOptions) -> Record:
    storage = options.storage_for("retrieval")
    variants, variant = compared(options.compare) if options.compare else (VARIANTS, "")
    settings = settings_from_config(config).with_overrides(
        storage_dir=storage, llm_provider="", reranker="auto"
    )
    engine = Engine(with_finance_words(settings))
    try:
        ingestion = ingest_all(engine, PDFS)
        for changes in variants.values():
            if ingest_tag(changes):
                ingestion += ingest_all(engine, PDFS, changes)
        systems: list[Any] = project_variants(engine, variants)
        stock = build_stock_suite(PDFS, engine.embed_model)
        systems += stock.baselines
        metrics = {"pages": page_summaries(systems), "essay": essay_recall(systems)}
        skip = options.skip_latency or bool(options.compare)
        spent = {} if skip else latency(engine, stock)
        parser = engine.settings.parse.parser
    finally:
        engine.close()
    return Record(
        suite="retrieval",
        command=options.command,
        variant="_".join(p for p in (variant, options.variant) if p),
        settings=dict(options.settings),
        systems={
            name: ", ".join(f"{k}={v}" for k, v in change.items()) or "config.py"
            for name, change in variants.items()
        }
        | {b.name: "stock LlamaIndex" for b in stock.baselines},
        datasets={name: str(path.name) for name, path in QUESTION_SETS.items()}
        | {"essay": PG_QA.name, "parser": parser},
        metrics=metrics,
        timings={
            "ingestion": [list(row) for row in ingestion],
            "latency_ms": spent,
            "repeats": REPEATS,
            "load": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
            "cores": os.cpu_count(),
        },
    )
