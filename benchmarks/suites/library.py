"""Every shared PDF in one collection: ingest cost, page hits and answer latency, project vs stock.

* ingest seconds of the project (`main.py ingest`), of stock LlamaIndex (`HuggingFaceEmbedding`
  + `VectorStoreIndex` + bm25s) and of the lean stock (plain `SentenceTransformer.encode`), each
  a fresh process timed from outside, imports and model loads included; `--levers` adds
  project ingests with other embedding settings; the embedding-bound limit (all page text
  encoded once by the same model, in windows it can read) beside them;
* hit@1/5/10 over the 10-K and MMLongBench-Doc dev questions asked of the whole library;
* answer p50/p95 beside each stock's dense retrieve, every question in turn for every path, and
  where the answer's time goes (cProfile, top entries).
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.datasets.library import EVAL, PDF_FOLDERS, library_questions, shared_pdfs
from benchmarks.metrics.pages import place_hits
from benchmarks.records import Record
from benchmarks.suites import SuiteOptions
from benchmarks.suites.library_storage import COLLECTION, LEAN, STOCK, prepared_library
from benchmarks.systems.project import (
    Retrieve,
    engine_retrieve,
    project_engine,
    project_environment,
)

KS = (1, 5, 10)
TOP_K = 10
STOCK_DENSE = "stock dense retrieve"
OWN_EMBEDDER = "stock dense retrieve, the project's question embedder"
LEAN_DENSE = "lean stock retrieve (encode, dot product)"
SYSTEMS = {
    "project": "`main.py ingest` into one collection, asked through `Engine.retrieve`",
    "stock dense": "PyMuPDF get_text, SentenceSplitter(1024, 200), MiniLM via "
    "HuggingFaceEmbedding, VectorStoreIndex",
    "stock BM25": "BM25Retriever (bm25s) over the stock nodes",
    "stock RRF": "QueryFusionRetriever (reciprocal rank, one query) over stock dense and BM25",
    "lean stock": "the same pages, splitter and MiniLM; plain SentenceTransformer.encode "
    "batches of 64 of the chunk text alone (LlamaIndex also embeds each node's metadata, and "
    "counts it in the chunk size, so it cuts a few more chunks); numpy dot product",
}


def embedding_bound(pdfs: list[Path]) -> dict[str, float]:
    """All page text encoded once by the default embedder, in windows of what it reads."""
    import pymupdf

    from citerag.embed.embedder import Embedder

    embedder = Embedder()
    tokenizer = embedder.model.tokenizer
    windows: list[str] = []
    tokens = 0
    for pdf in pdfs:
        with pymupdf.open(pdf) as doc:
            for page in doc:
                ids = tokenizer(page.get_text(), add_special_tokens=False)["input_ids"]
                tokens += len(ids)
                windows += [tokenizer.decode(ids[i : i + 254]) for i in range(0, len(ids), 254)]
    started = time.perf_counter()
    embedder.embed(windows)
    return {"tokens": tokens, "windows": len(windows), "seconds": time.perf_counter() - started}


def page_hits(systems: dict[str, Retrieve]) -> dict[str, dict[str, dict[str, float]]]:
    """Set -> system -> {"hit@k": rate, "n": questions}."""
    table: dict[str, dict[str, dict[str, float]]] = {}
    for set_name, questions in library_questions().items():
        table[set_name] = {}
        for system, retrieve in systems.items():
            scored = [
                place_hits(
                    [(d, p) for d, p, _ in retrieve(q["question"])],
                    q["document"],
                    q["evidence_pages"],
                    KS,
                )
                for q in questions
            ]
            rates = {f"hit@{k}": sum(s[k] for s in scored) / len(scored) for k in KS}
            table[set_name][system] = {**rates, "n": len(scored)}
            print(f"{set_name} / {system}: {rates}", flush=True)
    return table


def latency(paths: dict[str, Callable[[str], object]], rounds: int) -> dict[str, Any]:
    """Path -> set -> milliseconds per question, each question timed in turn for every path."""
    sets = library_questions()
    spent: dict[str, dict[str, list[float]]] = {name: {s: [] for s in sets} for name in paths}
    for _ in range(rounds):
        for set_name, questions in sets.items():
            for question in questions:
                for name, call in paths.items():
                    started = time.perf_counter()
                    call(question["question"])
                    elapsed = (time.perf_counter() - started) * 1000
                    spent[name][set_name].append(round(elapsed, 3))
    return spent


def answer_profile(engine: Any, limit: int = 18) -> str:
    questions = [q["question"] for qs in library_questions().values() for q in qs]
    profiler = cProfile.Profile()
    profiler.enable()
    for question in questions:
        engine.query(question, COLLECTION)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("cumulative").print_stats(limit)
    return out.getvalue()


def run(options: SuiteOptions) -> Record:
    from llama_index.core import StorageContext, load_index_from_storage

    from benchmarks.systems.stock_lean import LeanDense
    from benchmarks.systems.stock_llamaindex import as_places, library_retrievers

    ingest = prepared_library(options)
    storage = options.storage_for("library")
    pdfs = shared_pdfs()
    bound = embedding_bound(pdfs)
    environment = project_environment(
        storage / "project", options.settings, options.disabled_rankers
    )
    engine = project_engine(storage / "project", environment)
    stock = library_retrievers(storage / STOCK, TOP_K)
    lean = LeanDense(storage / LEAN, TOP_K)
    systems: dict[str, Retrieve] = {
        "project": engine_retrieve(engine, COLLECTION),
        **{name: as_places(r) for name, r in stock.items()},
        "lean stock": lean,
    }
    hits = page_hits(systems)
    context = StorageContext.from_defaults(persist_dir=str(storage / STOCK))
    own_embedder = load_index_from_storage(context, embed_model=engine.embed_model)
    paths: dict[str, Callable[[str], object]] = {
        STOCK_DENSE: stock["stock dense"].retrieve,
        OWN_EMBEDDER: own_embedder.as_retriever(similarity_top_k=TOP_K).retrieve,
        LEAN_DENSE: lean,
        "project retrieve": lambda q: engine.retrieve(q, COLLECTION),
        "project answer": lambda q: engine.query(q, COLLECTION),
    }
    spent = latency(paths, options.rounds)
    profile = answer_profile(engine)
    engine.close()
    folders = ", ".join(str(f.relative_to(EVAL)) for f in PDF_FOLDERS)
    return Record(
        suite="library",
        command=options.command,
        variant=options.variant,
        settings={**options.settings, "DISABLED_RANKERS": ",".join(options.disabled_rankers)},
        systems=SYSTEMS,
        datasets={"pdfs": f"{len(pdfs)} PDFs ({folders})", **library_datasets()},
        metrics={"hits": hits, "embedding_bound": bound, "answer_profile": profile},
        timings={
            "ingest": ingest,
            "latency_ms": spent,
            "fresh_caches": options.fresh_caches,
            "load": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
        },
    )


def library_datasets() -> dict[str, str]:
    return {name: str(len(qs)) + " questions" for name, qs in library_questions().items()}
