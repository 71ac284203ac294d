"""Benchmark on ../shared/eval: ingestion speed, warm query latency and retrieval quality.

Retrieval quality is measured on the 44 Paul Graham questions for dense-only, BM25-only,
fused and fused+rerank (each local reranker), beside a stock LlamaIndex baseline run in the
same process: VectorStoreIndex over the same pages, SentenceSplitter(1024, 200), top-10, the
same MiniLM. Writes benchmarks/results/retrieval.md (retrieval_mineru.md with --parser mineru).

    .venv/bin/python benchmarks/bench_eval.py [--skip-ingest-all] [--parser pymupdf|mineru]
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

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

import config  # noqa: E402
from citerag.engine import Engine  # noqa: E402
from citerag.eval.machine import describe_machine  # noqa: E402
from citerag.eval.metrics import QualityReport, percentile, score_question, summarize  # noqa: E402
from citerag.parse.select import parse_document  # noqa: E402
from citerag.retrieve.rerank import (  # noqa: E402
    BestSentenceReranker,
    MaxSimReranker,
    NoReranker,
    Reranker,
    RerankInput,
)
from citerag.settings import settings_from_config  # noqa: E402
from citerag.types import ScoredChunk  # noqa: E402

EVAL = PROJECT.parent / "shared" / "eval"
PG_PDF = EVAL / "paul_graham" / "paul_graham_essay.pdf"
PG_QA = EVAL / "paul_graham" / "paul_graham_qa.json"
ALL_PDFS = [
    PG_PDF,
    EVAL / "career_ai" / "eBook-How-to-Build-a-Career-in-AI.pdf",
    EVAL / "finance" / "NETFLIX_2020_10K.pdf",
    EVAL / "finance" / "MICROSOFT_2021_10K.pdf",
]
RESULTS_DIR = PROJECT / "benchmarks" / "results"
TOP_K = 10


def main() -> int:
    args = _arguments()
    if not PG_PDF.exists() or not PG_QA.exists():
        print(f"skipped: {EVAL} is absent; put the shared evaluation data beside the project")
        return 0
    questions = json.loads(PG_QA.read_text())
    with tempfile.TemporaryDirectory(prefix="citerag-bench-") as storage:
        settings = settings_from_config(config).with_overrides(
            storage_dir=Path(storage), parser=args.parser, llm_provider=""
        )
        engine = Engine(settings)
        try:
            ingestion = bench_ingestion(engine, [PG_PDF] if args.skip_ingest_all else ALL_PDFS)
            quality = bench_quality(engine, questions)
            latency = bench_latency(engine, [q["query"] for q in questions])
            reranker_used = engine.query_engine.reranker.name
        finally:
            engine.close()
        baseline = bench_baseline(settings, questions)
    report = render(ingestion, quality, baseline, latency, reranker_used, args.parser)
    results = RESULTS_DIR / (
        "retrieval.md" if args.parser == "pymupdf" else f"retrieval_{args.parser}.md"
    )
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(report)
    print(report)
    print(f"written to {results.relative_to(PROJECT)}")
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-ingest-all", action="store_true", help="ingest only Paul Graham")
    parser.add_argument("--parser", default="pymupdf", choices=("pymupdf", "mineru"))
    return parser.parse_args()


def bench_ingestion(engine: Engine, pdfs: Sequence[Path]) -> list[tuple[str, int, int, float]]:
    rows = []
    for pdf in pdfs:
        if not pdf.exists():
            print(f"skipped {pdf.name}: not found")
            continue
        collection = "pg" if pdf == PG_PDF else "bench"
        outcome = engine.ingest(pdf, collection)
        rows.append((pdf.name, outcome.pages, outcome.chunks, outcome.seconds))
        print(f"ingested {pdf.name}: {outcome.pages} pages in {outcome.seconds:.1f} s")
    return rows


def bench_quality(engine: Engine, questions: Sequence[dict]) -> dict[str, QualityReport]:
    pipeline = engine.query_engine
    rerankers: dict[str, Reranker] = {
        "fused + rerank: best sentence (blended)": BestSentenceReranker(),
        "fused + rerank: MaxSim MiniLM tokens (blended)": MaxSimReranker(engine.embedder),
        "fused (no rerank)": NoReranker(),
    }
    lists: dict[str, list[list[str]]] = {
        name: [] for name in ["dense only", "BM25 only", *rerankers]
    }
    for question in questions:
        found = pipeline.candidates(question["query"], "pg", top_k=TOP_K)
        retrieval = found.retrieval
        texts = _texts(engine, [*retrieval.dense, *retrieval.keyword])
        lists["dense only"].append([texts[i] for i in retrieval.dense[:TOP_K]])
        lists["BM25 only"].append([texts[i] for i in retrieval.keyword[:TOP_K]])
        fused_chunks = engine.docstore.get_chunks("pg", [i for i, _ in retrieval.fused])
        candidates = [
            ScoredChunk(c, s) for c, (_, s) in zip(fused_chunks, retrieval.fused, strict=True)
        ]
        request = RerankInput(
            question["query"], found.query_vector, candidates, found.sentence_vectors
        )
        for name, reranker in rerankers.items():
            lists[name].append([c.chunk.text for c in reranker.rerank(request, TOP_K)])
    return {
        name: summarize(
            [
                score_question(r, q["reference_contexts"])
                for r, q in zip(runs, questions, strict=True)
            ]
        )
        for name, runs in lists.items()
    }


def _texts(engine: Engine, ids: Sequence[str]) -> dict[str, str]:
    return {c.id: c.text for c in engine.docstore.get_chunks("pg", list(dict.fromkeys(ids)))}


def bench_latency(engine: Engine, questions: Sequence[str]) -> list[float]:
    engine.query(questions[0], "pg")  # warm: models loaded, indexes in memory
    timings = []
    for question in questions:
        started = time.perf_counter()
        engine.query(question, "pg")
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def bench_baseline(settings, questions: Sequence[dict]) -> QualityReport:  # type: ignore[no-untyped-def]
    """Stock LlamaIndex: VectorStoreIndex, SentenceSplitter(1024, 200), top-10, same MiniLM."""
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    from citerag.embed.embedder import default_model_path
    from citerag.parse.validate import inspect_pdf

    parsed = parse_document(
        PG_PDF, inspect_pdf(PG_PDF).sha256, settings.parser, settings.parse_cache_dir
    )
    documents = [Document(text=page.text, metadata={"page": page.number}) for page in parsed.pages]
    embed_model = HuggingFaceEmbedding(
        model_name=str(settings.embedding_model or default_model_path())
    )
    index = VectorStoreIndex.from_documents(
        documents,
        embed_model=embed_model,
        transformations=[SentenceSplitter(chunk_size=1024, chunk_overlap=200)],
    )
    retriever = index.as_retriever(similarity_top_k=TOP_K)
    scores = [
        score_question(
            [n.node.get_content() for n in retriever.retrieve(q["query"])], q["reference_contexts"]
        )
        for q in questions
    ]
    return summarize(scores)


def render(
    ingestion: Sequence[tuple[str, int, int, float]],
    quality: dict[str, QualityReport],
    baseline: QualityReport,
    latency: Sequence[float],
    reranker_used: str,
    parser: str,
) -> str:
    lines = [
        "# Benchmark: ingestion, latency and retrieval quality",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} by `benchmarks/bench_eval.py` (parser `{parser}`).",
        "",
        describe_machine(),
        "",
        "## Ingestion (cold: empty storage, no parse cache)",
        "",
        "| document | pages | chunks | seconds | pages/s |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, pages, chunks, seconds in ingestion:
        lines.append(f"| {name} | {pages} | {chunks} | {seconds:.1f} | {pages / seconds:.2f} |")
    lines += [
        "",
        f"## Warm query latency ({len(latency)} Paul Graham questions, extractive answer, "
        f"reranker `{reranker_used}`)",
        "",
        f"p50 **{percentile(latency, 0.5):.0f} ms**, p95 **{percentile(latency, 0.95):.0f} ms**, "
        f"max {max(latency):.0f} ms (the whole `engine.query`: embed, retrieve, rerank, "
        "highlight, answer).",
        "",
        "## Retrieval quality (44 Paul Graham questions)",
        "",
        "Context recall@k: share of reference sentences (> 20 chars) with ≥ 80% of their words "
        "in one of the top-k chunks. hit@k / MRR: a chunk is relevant when it contains such a "
        "sentence. Rerankers are blended with the retrieval order (weighted reciprocal rank, "
        "retrieval ×2; see `citerag/retrieve/rerank.py`). The latency run uses the default "
        "reranker; MaxSim caches chunk token vectors per process, so the first question over a "
        "chunk pays for its token embedding.",
        "",
        "| method | hit@1 | hit@3 | hit@5 | hit@10 | MRR | recall@5 | recall@10 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows: list[tuple[str, QualityReport]] = [
        *quality.items(),
        ("LlamaIndex baseline (1024/200, top-10)", baseline),
    ]
    lines += [_quality_row(name, report) for name, report in rows]
    return "\n".join(lines) + "\n"


def _quality_row(name: str, r: QualityReport) -> str:
    hits = " | ".join(f"{r.hit_at[k]:.3f}" for k in (1, 3, 5, 10))
    return f"| {name} | {hits} | {r.mrr:.3f} | {r.recall_at[5]:.3f} | {r.recall_at[10]:.3f} |"


if __name__ == "__main__":
    sys.exit(main())
