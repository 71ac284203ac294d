"""Retrieval on every kind of document: each labelled set and each document type, project vs stock.

Every shared PDF in one collection (the library of `bench_library.py`; its stored ingests are
reused with `--reuse`), every labelled question asked of the whole library, 10 chunks per
system. One run prints and writes `benchmarks/results/kinds.md`:

* page hit@1/5/10 (a chunk of the question's document on an evidence page among the first k
  distinct places) on the 10-K questions, the statement questions and the MMLongBench-Doc dev
  split, overall and per document type of the dev split; context recall@5/@10 on the essay;
* for the project's default, for the project with each evidence signal (entities, years,
  quoted phrases, topics) switched the other way and other ranking parts off, and for
  stock dense, stock BM25 and stock hybrid (`QueryFusionRetriever`, reciprocal rank);
* the project's retrieve p50 with each signal on and off (what a signal costs per question).

    python benchmarks/bench_kinds.py [--storage DIR] [--reuse]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.bench_eval import REPEATS, _timed  # noqa: E402
from benchmarks.bench_library import (  # noqa: E402
    COLLECTION,
    KS,
    TOP_K,
    hits,
    lever_settings,
    project_ingest,
    stock_ingest,
    stock_llama_retrievers,
)
from benchmarks.kinds_notes import NOTES  # noqa: E402
from benchmarks.library_data import (  # noqa: E402
    EVAL,
    LIBRARY_SETS,
    PDF_FOLDERS,
    project_engine,
    shared_pdfs,
)
from benchmarks.report import RESULTS, publish, shared_data_missing  # noqa: E402
from citerag.eval.machine import describe_machine  # noqa: E402
from citerag.eval.metrics import percentile, score_question, summarize  # noqa: E402

OUT = RESULTS / "kinds.md"
PAGE_SETS = {
    **LIBRARY_SETS,
    "statements": PROJECT / "benchmarks" / "data" / "statement_questions.json",
}
DEV_SET = "MMLongBench-Doc dev"
ESSAY = "Paul Graham essay"
ESSAY_QA = EVAL / "paul_graham" / "paul_graham_qa.json"
DEFAULT = "project (default)"
# Each signal, switched the other way from the default (its name says which way).
SIGNALS: dict[str, str] = {
    "entities": "evidence_entities",
    "years": "evidence_years",
    "quotes": "evidence_quotes",
    "topics": "evidence_topics",
}
OTHER_PARTS: dict[str, dict[str, object]] = {
    "project, no best-sentence ranking": {"sentence_weight": 0.0},
    "project, no evidence signal": {key: 0.0 for key in SIGNALS.values()},
    "project, no evidence, no best-sentence (before)": {
        "sentence_weight": 0.0,
        **{key: 0.0 for key in SIGNALS.values()},
    },
    "project, no page evidence": {"page_weight": 0.0},
    "project, filing words unweighted": {"filing_keyword_weight": 1.0},
}
Hit = tuple[str, int, str]  # (document name, page, chunk text)
System = Callable[[str], list[Hit]]


def variants(settings: Any) -> dict[str, dict[str, object]]:
    """The default, each evidence signal switched, and the other ranking parts off."""
    found: dict[str, dict[str, object]] = {DEFAULT: {}}
    for signal, key in SIGNALS.items():
        on = getattr(settings.retrieval, key) > 0
        found[f"project, {signal} evidence {'off' if on else 'on'}"] = {key: 0.0 if on else 1.0}
    return {**found, **OTHER_PARTS}


def project_systems(engine: Any) -> tuple[dict[str, System], dict[str, str]]:
    """One retrieve per variant over the library (the engine's stores, the variant's settings),
    and each variant's changed settings as text."""
    from llama_index.core.schema import QueryBundle

    from citerag.nodes import doc_name_of, page_of
    from citerag.query.query_factory import QueryFactory

    state = engine.searchable_state(COLLECTION)
    systems: dict[str, System] = {}
    described: dict[str, str] = {}
    for name, changes in variants(engine.settings).items():
        settings = engine.settings.with_overrides(**changes)
        factory = QueryFactory(
            settings, engine.docstore, engine.vectors, engine.embed_model, engine.embedder
        )

        def retrieve(question: str, factory: QueryFactory = factory) -> list[Hit]:
            query = QueryBundle(question)
            nodes = factory.retriever(state).retrieve(query)
            reranker = factory.postprocessors(COLLECTION, TOP_K).reranker
            ranked = reranker.postprocess_nodes(nodes, query)
            return [(doc_name_of(n.node), page_of(n.node), n.node.get_content()) for n in ranked]

        systems[name] = retrieve
        described[name] = ", ".join(f"{k}={v}" for k, v in changes.items()) or "config.py"
    return systems, described


def stock_systems(persist: Path) -> dict[str, System]:
    def hits_of(retriever: Any) -> System:
        return lambda question: [
            (str(h.node.metadata["doc_name"]), int(h.node.metadata["page"]), h.node.get_content())
            for h in retriever.retrieve(question)
        ]

    return {name: hits_of(r) for name, r in stock_llama_retrievers(persist).items()}


Rates = dict[int, float]


def page_quality(systems: Mapping[str, System]) -> dict[str, dict[str, Rates]]:
    """Group ("set" or "set / type") -> system -> k -> hit rate (k 0: the group's size)."""
    table: dict[str, dict[str, Rates]] = defaultdict(dict)
    for set_name, path in PAGE_SETS.items():
        questions = json.loads(path.read_text(encoding="utf-8"))
        for system, retrieve in systems.items():
            by_group: dict[str, list[dict[int, int]]] = defaultdict(list)
            for q in questions:
                found = retrieve(q["question"])
                scored = hits([(d, p) for d, p, _ in found], q["document"], q["evidence_pages"])
                by_group[set_name].append(scored)
                if set_name == DEV_SET:
                    by_group[f"{set_name} / {q['type']}"].append(scored)
            for group, rows in by_group.items():
                table[group][system] = {k: sum(r[k] for r in rows) / len(rows) for k in KS}
                table[group][system][0] = len(rows)
            print(f"{set_name} / {system}: {table[set_name][system]}", flush=True)
    return dict(table)


def page_questions() -> list[str]:
    return [
        q["question"]
        for path in PAGE_SETS.values()
        for q in json.loads(path.read_text(encoding="utf-8"))
    ]


def evidence_profile(retrieve: System) -> str:
    """Where the default retrieve spends its time on the evidence and best-sentence rankings
    (cProfile over every page-set question, entries of those parts only)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for question in page_questions():
        retrieve(question)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("cumulative")
    stats.print_stats(r"evidence\.py|_by_best_sentence|\(_evidence\)|get_sentence_vectors|\(rank\)")
    return out.getvalue()


def essay_quality(systems: Mapping[str, System]) -> dict[str, Any]:
    questions = json.loads(ESSAY_QA.read_text(encoding="utf-8"))
    return {
        name: summarize(
            [
                score_question([t for _, _, t in retrieve(q["query"])], q["reference_contexts"])
                for q in questions
            ]
        )
        for name, retrieve in systems.items()
    }


def render(results: dict[str, Any]) -> str:
    lines = [
        "# Retrieval on every kind of document: project against stock LlamaIndex",
        "",
        f"{results['machine']} {results['pdfs']} PDFs "
        f"({', '.join(str(f.relative_to(EVAL)) for f in PDF_FOLDERS)}) in one collection; every "
        "question asked of the whole library. "
        f"Run: `python benchmarks/bench_kinds.py`, {results['date']}.",
        "",
        f"A hit: a chunk of the question's document on an evidence page among the first k "
        f"distinct (document, page) places; {TOP_K} chunks per system. Stock: PyMuPDF page "
        "text, `SentenceSplitter(1024, 200)`, MiniLM (`VectorStoreIndex`), `BM25Retriever`, "
        "and `QueryFusionRetriever` (reciprocal rank, one query) over both. Project variants: "
        "the default with one setting changed:",
        "",
        *[f"- {name}: {changes}" for name, changes in results["variants"].items()],
        "",
        "## Page hits per labelled set and per document type of the dev split",
        "",
        "| set | n | system | hit@1 | hit@5 | hit@10 |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for group, systems in results["pages"].items():
        for system, rates in systems.items():
            cells = " | ".join(f"{rates[k]:.3f}" for k in KS)
            lines.append(f"| {group} | {int(rates[0])} | {system} | {cells} |")
    lines += [
        "",
        f"## {ESSAY} (44 questions): context recall, asked of the whole library",
        "",
        "Share of reference sentences (> 20 chars) with ≥ 80% of their words in one of the top-k "
        "chunks; hit@1: a chunk holding one ranked first.",
        "",
        "| system | hit@1 | recall@5 | recall@10 |",
        "|---|---:|---:|---:|",
    ]
    for name, report in results["essay"].items():
        lines.append(
            f"| {name} | {report.hit_at[1]:.3f} | {report.recall_at[5]:.3f} | "
            f"{report.recall_at[10]:.3f} |"
        )
    lines += [
        "",
        "## What each variant costs per question",
        "",
        f"Retrieve ms over every page-set question, each timed {REPEATS} times per variant, "
        "the variants taking turns, fastest kept (a shared 2-core machine; load average "
        f"{results['load']}).",
        "",
        "| system | p50 | p95 |",
        "|---|---:|---:|",
    ]
    for name, values in results["spent"].items():
        lines.append(f"| {name} | {percentile(values, 0.5):.1f} | {percentile(values, 0.95):.1f} |")
    lines += [
        "",
        "Where the default's time goes in the parts this benchmark switches (cProfile, every "
        "page-set question once):",
        "",
        "```",
        results["profile"].strip(),
        "```",
        "",
        *NOTES,
    ]
    return "\n".join([*lines, ""])


def prepared_storage(storage: Path, reuse: bool) -> None:
    """The library ingested by the project and by the stock path (kept when `reuse`)."""
    if reuse and (storage / "project").is_dir() and (storage / "stock").is_dir():
        return
    shutil.rmtree(storage, ignore_errors=True)
    storage.mkdir(parents=True)
    stock_ingest(storage / "stock", shared_pdfs())
    project_ingest(storage / "project", lever_settings(os.environ.get("EMBEDDING_BACKEND", "auto")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", type=Path, default=PROJECT / "storage" / "bench_library")
    parser.add_argument("--reuse", action="store_true", help="keep the stored ingests")
    args = parser.parse_args()
    if shared_data_missing([*PDF_FOLDERS, *PAGE_SETS.values(), ESSAY_QA]):
        return 0
    prepared_storage(args.storage, args.reuse)
    engine = project_engine(args.storage / "project")
    projects, described = project_systems(engine)
    systems = {**projects, **stock_systems(args.storage / "stock")}
    results: dict[str, Any] = {
        "machine": describe_machine(),
        "pdfs": len(shared_pdfs()),
        "date": time.strftime("%Y-%m-%d"),
        "variants": described,
        "pages": page_quality(systems),
        "essay": essay_quality(systems),
        "spent": _timed(projects, page_questions()),
        "load": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
        "profile": evidence_profile(projects[DEFAULT]),
    }
    engine.close()
    publish(render(results), OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
