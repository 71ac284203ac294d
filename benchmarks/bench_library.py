"""Every shared PDF in one collection: ingest cost, page hits and answer latency, project vs stock.

One run prints and writes (`benchmarks/results/library.md`):

* ingest seconds of the project (`main.py ingest` over the shared folders, one fresh process,
  fresh storage) and of the stock LlamaIndex path (`stock_library.py`, one fresh process), both
  timed from outside, imports and model loads included; `--levers` adds project ingests with
  other embedding backends; the embedding-bound limit (all page text encoded once by the same
  model, in windows it can read) is measured beside them;
* hit@1/5/10 over the 50 10-K questions and the 58 MMLongBench-Doc dev questions asked of that
  one collection (a hit: a chunk of the right document on an evidence page among the first k
  distinct pages), for the project and for stock dense, BM25 and RRF (QueryFusionRetriever);
* answer p50/p95 (`Engine.query`, default mode, extractive answer with highlights) beside stock
  dense retrieve p50/p95, each question timed in turn for both, and where the answer's time goes
  (cProfile, top entries).

    python benchmarks/bench_library.py [--storage DIR] [--reuse] [--levers torch onnx-int8]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.library_data import (  # noqa: E402
    EVAL,
    PDF_FOLDERS,
    library_questions,
    project_engine,
    shared_pdfs,
)
from benchmarks.library_notes import LEVER_NOTES  # noqa: E402
from benchmarks.report import RESULTS, publish, shared_data_missing  # noqa: E402
from citerag.embed.embedder import Embedder  # noqa: E402
from citerag.eval.machine import describe_machine  # noqa: E402
from citerag.eval.metrics import percentile  # noqa: E402
from citerag.settings import Settings  # noqa: E402

COLLECTION = "library"
KS = (1, 5, 10)
TOP_K = 10
OUT = RESULTS / "library.md"
Place = tuple[str, int]  # (document name, 1-based page)
Retrieve = Callable[[str], list[Place]]


def timed_run(command: Sequence[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[:3])} failed:\n{done.stderr[-3000:]}")
    return seconds, done.stdout


STOCK_OWN_EMBEDDER = "stock dense retrieve, the project's question embedder"


def lever_settings(lever: str) -> dict[str, str]:
    """'onnx-int8', 'pooled' or both ('onnx-int8+pooled') as the variables that set them; what
    the lever leaves out is the default."""
    env = {"EMBEDDING_BACKEND": "auto", "SENTENCE_VECTORS": Settings().embedding.sentence_vectors}
    for part in lever.split("+"):
        name = "SENTENCE_VECTORS" if part in ("separate", "pooled") else "EMBEDDING_BACKEND"
        env[name] = part
    return env


def lever_label(env: dict[str, str]) -> str:
    backend = env.get("EMBEDDING_BACKEND", "auto")
    if backend == "auto":
        backend = f"auto ({Embedder(backend=backend).backend})"  # what it picks here
    return (
        f"embedding_backend={backend}, sentence_vectors={env.get('SENTENCE_VECTORS', 'separate')}"
    )


def project_ingest(storage: Path, lever: dict[str, str]) -> dict[str, Any]:
    env = dict(os.environ, RAG_STORAGE_DIR=str(storage), **lever)
    command = [sys.executable, str(PROJECT / "main.py"), "ingest", *map(str, PDF_FOLDERS)]
    seconds, stdout = timed_run([*command, "--collection", COLLECTION], env)
    total = stdout.strip().splitlines()[-1]
    print(f"project ingest ({lever_label(lever)}): {seconds:.1f} s; {total}", flush=True)
    return {"seconds": seconds, "total": total}


def stock_ingest(persist: Path, pdfs: Sequence[Path]) -> dict[str, Any]:
    command = [sys.executable, str(PROJECT / "benchmarks" / "stock_library.py"), "--persist"]
    seconds, stdout = timed_run([*command, str(persist), *map(str, pdfs)], dict(os.environ))
    stats = json.loads(stdout.strip().splitlines()[-1])
    print(f"stock ingest: {seconds:.1f} s ({stats['chunks']} chunks)", flush=True)
    return {"seconds": seconds, **stats}


def warm_model_export(backends: Sequence[str]) -> None:
    """Export the ONNX models before timing: a user pays that once per machine, not per run."""
    for backend in backends:
        code = f"from citerag.embed.embedder import Embedder; Embedder(backend={backend!r}).load()"
        subprocess.run([sys.executable, "-c", code], check=True, cwd=PROJECT)


def embedding_bound(pdfs: Sequence[Path]) -> dict[str, float]:
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


def stock_llama_retrievers(persist: Path) -> dict[str, Any]:
    """Stock dense, BM25 and RRF (`QueryFusionRetriever`) LlamaIndex retrievers over the
    persisted stock index, 10 chunks each."""
    from llama_index.core import StorageContext, load_index_from_storage
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
    from llama_index.retrievers.bm25 import BM25Retriever

    from benchmarks.baselines import minilm_embed_model

    context = StorageContext.from_defaults(persist_dir=str(persist))
    index = load_index_from_storage(context, embed_model=minilm_embed_model())
    dense = index.as_retriever(similarity_top_k=TOP_K)
    bm25 = BM25Retriever.from_defaults(
        nodes=list(context.docstore.docs.values()), similarity_top_k=TOP_K
    )
    fusion = QueryFusionRetriever(
        [dense, bm25],
        llm=MockLLM(),
        mode=FUSION_MODES.RECIPROCAL_RANK,
        num_queries=1,
        similarity_top_k=TOP_K,
        use_async=False,
    )
    return {"stock dense": dense, "stock BM25": bm25, "stock RRF": fusion}


def stock_places(retrievers: dict[str, Any]) -> dict[str, Retrieve]:
    """The stock retrievers as (document, page) places in rank order."""

    def places(retriever: Any) -> Retrieve:
        return lambda question: [
            (str(hit.node.metadata["doc_name"]), int(hit.node.metadata["page"]))
            for hit in retriever.retrieve(question)
        ]

    return {name: places(r) for name, r in retrievers.items()}


def project_retriever(engine: Any) -> Retrieve:
    from citerag.nodes import doc_name_of, page_of

    return lambda question: [
        (doc_name_of(hit.node), page_of(hit.node)) for hit in engine.retrieve(question, COLLECTION)
    ]


def hits(places: list[Place], document: str, evidence: Sequence[int]) -> dict[int, int]:
    distinct: list[Place] = []
    for place in places:
        if place not in distinct:
            distinct.append(place)
    good = [doc == document and page in evidence for doc, page in distinct]
    return {k: int(any(good[:k])) for k in KS}


def quality(systems: dict[str, Retrieve]) -> dict[str, dict[str, dict[int, float]]]:
    """Set -> system -> k -> hit rate."""
    table: dict[str, dict[str, dict[int, float]]] = {}
    for set_name, questions in library_questions().items():
        table[set_name] = {}
        for system, retrieve in systems.items():
            scored = [
                hits(retrieve(q["question"]), q["document"], q["evidence_pages"]) for q in questions
            ]
            table[set_name][system] = {k: sum(s[k] for s in scored) / len(scored) for k in KS}
            print(f"{set_name} / {system}: {table[set_name][system]}", flush=True)
    return table


def latency(
    engine: Any, stock_dense: Any, persist: Path, rounds: int
) -> dict[str, dict[str, list[float]]]:
    """Milliseconds per question and labelled set, each question timed in turn for every path.

    Stock dense retrieve runs twice: as stock LlamaIndex embeds the question (PyTorch, through
    `HuggingFaceEmbedding`: `stock_dense`) and with the project's own embedder (the persisted
    index opened once more with it), which shows the search alone."""
    from llama_index.core import StorageContext, load_index_from_storage

    context = StorageContext.from_defaults(persist_dir=str(persist))
    own_embedder = load_index_from_storage(context, embed_model=engine.embed_model)
    paths: dict[str, Callable[[str], object]] = {
        "stock dense retrieve": stock_dense.retrieve,
        STOCK_OWN_EMBEDDER: own_embedder.as_retriever(similarity_top_k=TOP_K).retrieve,
        "project retrieve": lambda q: engine.retrieve(q, COLLECTION),
        "project answer": lambda q: engine.query(q, COLLECTION),
    }
    sets = library_questions()
    spent: dict[str, dict[str, list[float]]] = {name: {s: [] for s in sets} for name in paths}
    for _ in range(rounds):
        for set_name, questions in sets.items():
            for question in questions:
                for name, call in paths.items():
                    started = time.perf_counter()
                    call(question["question"])
                    spent[name][set_name].append((time.perf_counter() - started) * 1000)
    return spent


def answer_profile(engine: Any, limit: int = 18) -> str:
    questions = [q["question"] for qs in library_questions().values() for q in qs]
    profiler = cProfile.Profile()
    profiler.enable()
    for question in questions:
        engine.query(question, COLLECTION)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("cumulative")
    stats.print_stats(limit)
    return out.getvalue()


def render(results: dict[str, Any]) -> str:
    ingest = results["ingest"]
    stock_s = ingest["stock"]["seconds"]
    lines = [
        "# The shared PDFs as one library: project against stock LlamaIndex",
        "",
        f"{results['machine']} {results['pdfs']} PDFs "
        f"({', '.join(str(f.relative_to(EVAL)) for f in PDF_FOLDERS)}) in one collection. "
        f"Run: `python benchmarks/bench_library.py{results['command']}`, {results['date']}.",
        "",
        "## Ingest (one fresh process each, imports and model load included)",
        "",
        "| path | seconds | × stock |",
        "|---|---:|---:|",
        f"| stock (get_text, SentenceSplitter 1024/200, MiniLM via HuggingFaceEmbedding, "
        f"bm25s; {ingest['stock']['chunks']} chunks) | {stock_s:.1f} | 1.00 |",
    ]
    for label, row in ingest["project"].items():
        lines.append(
            f"| project, {label} (`main.py ingest`: {row['total']}) "
            f"| {row['seconds']:.1f} | {row['seconds'] / stock_s:.2f} |"
        )
    bound = results["embedding_bound"]
    lines += [
        "",
        f"Embedding-bound limit: all page text ({bound['tokens']:,} word pieces) encoded once by "
        f"the default embedder in {bound['windows']:,} windows of 254 takes "
        f"{bound['seconds']:.1f} s in-process, {bound['seconds'] / stock_s:.2f}× the stock "
        "ingest. The stock path embeds only the first 256 word pieces of each 1024-token chunk "
        "(about a third of the text); the project embeds all the text: with "
        "sentence_vectors=separate every sentence on its own plus one head per page, with "
        "pooled each page once (its sentences pooled from its tokens).",
        "",
        *LEVER_NOTES,
        "",
        "## Page hits, every question asked of the whole library",
        "",
        "A hit: a retrieved chunk of the question's document on one of its evidence pages among "
        f"the first k distinct (document, page) places; {TOP_K} chunks per system.",
        "",
        "| set | system | hit@1 | hit@5 | hit@10 |",
        "|---|---|---:|---:|---:|",
    ]
    for set_name, systems in results["quality"].items():
        for system, rates in systems.items():
            cells = " | ".join(f"{rates[k]:.3f}" for k in KS)
            lines.append(f"| {set_name} | {system} | {cells} |")
    lines += ["", "## Latency (ms per question, every question in turn)", ""]
    spent = results["latency"]
    sets = list(spent["stock dense retrieve"])
    lines += [
        "| path | p50 | p95 | × stock dense p50 | " + " | ".join(f"p50 {s}" for s in sets) + " |",
        "|---|---:|---:|---:|" + "---:|" * len(sets),
    ]
    stock = spent["stock dense retrieve"]
    stock_p50 = percentile([v for values in stock.values() for v in values], 0.5)
    for name, by_set in spent.items():
        every = [v for values in by_set.values() for v in values]
        p50, p95 = percentile(every, 0.5), percentile(every, 0.95)
        set_p50 = {s: percentile(by_set[s], 0.5) for s in sets}
        per_set = " | ".join(
            f"{set_p50[s]:.1f} ({set_p50[s] / percentile(stock[s], 0.5):.2f}×)" for s in sets
        )
        lines.append(f"| {name} | {p50:.1f} | {p95:.1f} | {p50 / stock_p50:.2f} | {per_set} |")
    lines += [
        "",
        f"'{STOCK_OWN_EMBEDDER}' is the same stock index asked with the project's question "
        "embedder instead of PyTorch: the difference to 'stock dense retrieve' is what embedding "
        "one question costs stock LlamaIndex here, and the rest is the search.",
    ]
    lines += ["", "Where the answer's time goes (cProfile over one pass of every question):", ""]
    lines += ["```", results["profile"].strip(), "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", type=Path, default=PROJECT / "storage" / "bench_library")
    parser.add_argument("--reuse", action="store_true", help="keep stored ingests, skip timing")
    parser.add_argument(
        "--levers",
        nargs="*",
        default=[],
        help="other ingests timed: an embedding backend, 'pooled' or 'separate', or both "
        "joined by '+' (onnx-int8+pooled)",
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--backend", default="auto", help="the project's embedding backend for the whole run"
    )
    parser.add_argument(
        "--sentence-vectors", default="", help="the project's sentence vectors for the whole run"
    )
    args = parser.parse_args()
    own = lever_settings("+".join(p for p in (args.backend, args.sentence_vectors) if p))
    os.environ.update(own)  # the questions' engine, as the ingest
    if shared_data_missing(list(PDF_FOLDERS)):
        return 0
    pdfs = shared_pdfs()
    levers = [lever_settings(lever) for lever in args.levers]
    warm_model_export(
        [own["EMBEDDING_BACKEND"], *(v.get("EMBEDDING_BACKEND", "auto") for v in levers)]
    )
    results: dict[str, Any] = {"machine": describe_machine(), "pdfs": len(pdfs)}
    results["date"] = time.strftime("%Y-%m-%d")
    results["flags"] = "".join(
        f" --{name} {value}"
        for name, value in (("backend", args.backend), ("sentence-vectors", args.sentence_vectors))
        if value not in ("", "auto")
    )
    timed_levers = f" --levers {' '.join(args.levers)}" if args.levers else ""
    results["command"] = results["flags"] + timed_levers
    stock_dir, project_dir = args.storage / "stock", args.storage / "project"
    timings_file = args.storage / "ingest.json"
    if args.reuse and timings_file.is_file():
        results["ingest"] = json.loads(timings_file.read_text())
    else:
        shutil.rmtree(args.storage, ignore_errors=True)
        args.storage.mkdir(parents=True)
        ingest: dict[str, Any] = {"stock": stock_ingest(stock_dir, pdfs), "project": {}}
        ingest["project"][lever_label(own)] = project_ingest(project_dir, own)
        for name, lever in zip(args.levers, levers, strict=True):
            ingest["project"][lever_label(lever)] = project_ingest(args.storage / name, lever)
            shutil.rmtree(args.storage / name, ignore_errors=True)
        timings_file.write_text(json.dumps(ingest))
        results["ingest"] = ingest
    results["embedding_bound"] = embedding_bound(pdfs)
    engine = project_engine(project_dir)
    stock = stock_llama_retrievers(stock_dir)
    results["quality"] = quality({"project": project_retriever(engine), **stock_places(stock)})
    results["latency"] = latency(engine, stock["stock dense"], stock_dir, args.rounds)
    results["profile"] = answer_profile(engine)
    engine.close()
    suffix = results["flags"].replace(" --backend ", "_").replace(" --sentence-vectors ", "_")
    publish(render(results), OUT.with_name(f"library{suffix}.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
