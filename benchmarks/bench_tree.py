"""Benchmark: `query --mode tree` beside the default mode on the finance questions, one run.

- Page recall@1/3/5/10 and MRR per question type on the 50 labelled finance questions
  (../shared/eval/finance/finance_qa.json) and the 24 statement questions
  (benchmarks/data/statement_questions.json), each question asked of a collection holding only
  its own 10-K, and of one collection holding both 10-Ks (where tree mode ranks the files).
- Whether an evidence page is in the text each mode hands to the answerer, and how much text.
- Tree build time as a share of each PDF's ingest time.
Writes benchmarks/results/tree.md.

    .venv/bin/python -m benchmarks.bench_tree [--storage DIR]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import config
from benchmarks.metrics.pages import PageScore, score_pages, summarize_latency
from benchmarks.systems.profiles import with_finance_words
from benchmarks.systems.project import collection_for, ingest_all
from benchmarks.tables import (
    publish,
    render_latency_table,
    render_question_set,
    shared_data_missing,
)
from citerag.engine import Engine
from citerag.eval.machine import describe_machine
from citerag.nodes import doc_name_of, page_of
from citerag.settings import settings_from_config
from citerag.tools.tree_mode import MAX_NODE_CHARS, node_content
from citerag.tree.ingest_step import TREE_SECONDS
from citerag.tree.model import DocumentTree
from citerag.tree.stored import stored_tree

PROJECT = Path(__file__).resolve().parents[1]

FINANCE = PROJECT.parent / "shared" / "eval" / "finance"
PDFS = [FINANCE / "NETFLIX_2020_10K.pdf", FINANCE / "MICROSOFT_2021_10K.pdf"]
QUESTION_SETS = {
    "finance_qa": FINANCE / "finance_qa.json",
    "statements": PROJECT / "benchmarks" / "data" / "statement_questions.json",
}
OUT = PROJECT / "benchmarks" / "results" / "tree.md"
BOTH = "benchtree-both-10ks"
TOP_K = 10
OWN, SHARED = "own 10-K", "both 10-Ks"
SUM_SCORING = "tree mode with 1/sqrt(N+1)·Σ node scores"
TITLE_HALF = "tree mode with title weight 0.5"


@dataclass(frozen=True)
class Ranked:
    """One cited page, in rank order; pages of another document get a page no evidence has."""

    page: int


@dataclass
class Run:
    """One mode over one kind of collection: per-question scores, context and latency."""

    scores: list[PageScore]
    in_context: list[int]  # 1 when an evidence page's text was handed to the answerer
    context_chars: list[int]
    context_pages: list[int]
    milliseconds: list[float]


Answer = tuple[list[Ranked], bool, int, int]  # ranked pages, evidence in context, chars, pages


class TreeTimes(logging.Handler):
    """Collects the tree build time that each ingest logs."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seconds: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        value = getattr(record, TREE_SECONDS, None)
        if value is not None:
            self.seconds[str(getattr(record, "document", ""))] = float(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--storage", help="keep the project's storage here (re-runs skip ingest)")
    args = parser.parse_args()
    if shared_data_missing([*PDFS, *QUESTION_SETS.values()]):
        return 0
    with tempfile.TemporaryDirectory(prefix="citerag-bench-tree-") as scratch:
        storage = Path(args.storage) if args.storage else Path(scratch)
        settings = settings_from_config(config).with_overrides(
            storage_dir=storage, llm_provider="", reranker="colbert-if-installed"
        )
        engine = Engine(with_finance_words(settings))
        try:
            report = run(engine)
        finally:
            engine.close()
    publish(report, OUT)
    return 0


def run(engine: Engine) -> str:
    load_before = os.getloadavg()
    ingestion = _ingest(engine)
    trees: dict[tuple[str, str], DocumentTree] = {}
    engine.retrieve("warm up", BOTH, TOP_K)  # models loaded, indexes in memory
    engine.tree_answer("warm up", BOTH)
    sections, contexts, latency = [], {}, {}
    for set_name, path in QUESTION_SETS.items():
        questions = json.loads(path.read_text(encoding="utf-8"))
        runs: dict[str, Run] = {}
        for scope in (OWN, SHARED):
            runs[f"default mode, {scope}"] = _measure(questions, _asker(engine, scope, None))
            runs[f"tree mode, {scope}"] = _measure(questions, _asker(engine, scope, trees))
            with mock.patch("citerag.tools.tree_search.node_evidence", pageindex_evidence):
                runs[f"{SUM_SCORING}, {scope}"] = _measure(questions, _asker(engine, scope, trees))
            with mock.patch("citerag.tools.tree_search.TITLE_WEIGHT", 0.5):
                runs[f"{TITLE_HALF}, {scope}"] = _measure(questions, _asker(engine, scope, trees))
        scores = {name: r.scores for name, r in runs.items()}
        sections.append(render_question_set(f"{set_name} ({len(questions)} questions)", scores))
        print(sections[-1])
        contexts[set_name] = runs
        latency.update({f"{name}, {set_name}": r.milliseconds for name, r in runs.items()})
    loads = [", ".join(f"{x:.1f}" for x in load) for load in (load_before, os.getloadavg())]
    machine = f"{describe_machine()} Load average (1, 5, 15 min) at start: {loads[0]}; at end: "
    return _render(engine, machine + f"{loads[1]}.", ingestion, sections, contexts, latency)


def pageindex_evidence(hits: Sequence[float], chunk_count: int) -> float:
    """PageIndex's node score, 1/sqrt(N+1) * the sum of its N chunks' scores (for comparison)."""
    return sum(hits) / math.sqrt(chunk_count + 1)


def _asker(
    engine: Engine, scope: str, trees: dict[tuple[str, str], DocumentTree] | None
) -> Callable[[dict[str, Any]], Answer]:
    """Asks in the default mode (`trees` None) or tree mode, of the scope's collection."""

    def ask(question: dict[str, Any]) -> Answer:
        collection = collection_for(question["document"]) if scope == OWN else BOTH
        if trees is None:
            return _default(engine, question, collection)
        return _tree(engine, question, collection, trees)

    return ask


def _ingest(engine: Engine) -> list[tuple[str, str, int, float, float | None]]:
    """(document, collection, pages, ingest seconds, tree seconds) for each ingest."""
    times = TreeTimes()
    tree_log = logging.getLogger("citerag.tree.ingest_step")
    tree_log.setLevel(logging.INFO)
    tree_log.addHandler(times)
    rows = []
    try:
        for name, pages, _chunks, seconds in ingest_all(engine, PDFS):
            rows.append((name, "own", pages, seconds, times.seconds.pop(name, None)))
        for pdf in PDFS:
            outcome = engine.ingest(pdf, BOTH)
            print(f"ingested {pdf.name} into {BOTH}: {outcome.status}")
            tree_seconds = times.seconds.pop(pdf.name, None)
            rows.append(
                (pdf.name, "both (parse cached)", outcome.pages, outcome.seconds, tree_seconds)
            )
    finally:
        tree_log.removeHandler(times)
    return rows


def _measure(questions: Sequence[dict[str, Any]], ask: Callable[[dict[str, Any]], Answer]) -> Run:
    result = Run([], [], [], [], [])
    for question in questions:
        started = time.perf_counter()
        ranked, in_context, chars, pages = ask(question)
        result.milliseconds.append((time.perf_counter() - started) * 1000)
        result.scores.append(
            score_pages(ranked, question["evidence_pages"], question["id"], question["type"])
        )
        result.in_context.append(int(in_context))
        result.context_chars.append(chars)
        result.context_pages.append(pages)
    return result


def _default(engine: Engine, question: dict[str, Any], collection: str) -> Answer:
    nodes = engine.retrieve(question["question"], collection, TOP_K)
    ranked = [
        _ranked(doc_name_of(n.node), page_of(n.node), question, i) for i, n in enumerate(nodes)
    ]
    pages = {(doc_name_of(n.node), page_of(n.node)) for n in nodes}
    hit = any(p.page in question["evidence_pages"] for p in ranked)
    chars = sum(len(n.node.get_content()) for n in nodes)
    return ranked, hit, chars, len(pages)


def _tree(
    engine: Engine,
    question: dict[str, Any],
    collection: str,
    trees: dict[tuple[str, str], DocumentTree],
) -> Answer:
    """Cited pages in citation order: each source's page, then its highlights' pages."""
    result = engine.tree_answer(question["question"], collection)
    ranked: list[Ranked] = []
    delivered: set[tuple[str, int]] = set()
    for source in result.sources:
        key = (collection, source.document_name)
        if key not in trees:
            trees[key] = stored_tree(engine.docstore, collection, source.document_name)
        node = trees[key].find(getattr(source, "node_id", ""))
        content = node_content(node) if node is not None else None
        pages = [source.page_number]
        if content is not None and node is not None:
            pages += [content.page_at(h.startOffset, node.start_index) for h in source.highlights]
            delivered |= {(source.document_name, p) for p in content.pages()}
        ranked += [_ranked(source.document_name, p, question, len(ranked)) for p in pages]
    evidence = {(question["document"], p) for p in question["evidence_pages"]}
    chars = sum(len(s.content) for s in result.sources)
    return ranked, bool(evidence & delivered), chars, len(delivered)


def _ranked(document: str, page: int, question: dict[str, Any], index: int) -> Ranked:
    return Ranked(page if document == question["document"] else -1 - index)


def _context_table(contexts: dict[str, dict[str, Run]]) -> str:
    lines = [
        "| questions | system | evidence page in context | mean pages | mean characters |",
        "|---|---|---:|---:|---:|",
    ]
    for set_name, runs in contexts.items():
        for name, r in runs.items():
            hit, pages = statistics.fmean(r.in_context), statistics.fmean(r.context_pages)
            chars = statistics.fmean(r.context_chars)
            lines.append(f"| {set_name} | {name} | {hit:.3f} | {pages:.1f} | {chars:,.0f} |")
    return "\n".join(lines)


def _ingest_table(rows: Sequence[tuple[str, str, int, float, float | None]]) -> str:
    lines = [
        "| document | collection | pages | ingest s | tree build s | tree share of ingest |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, where, pages, seconds, tree_seconds in rows:
        tree = f"{tree_seconds:.2f}" if tree_seconds is not None else "n/a (not re-ingested)"
        share = f"{tree_seconds / seconds:.1%}" if tree_seconds is not None and seconds else "n/a"
        lines.append(f"| {name} | {where} | {pages} | {seconds:.1f} | {tree} | {share} |")
    return "\n".join(lines)


def _render(
    engine: Engine,
    machine: str,
    ingestion: Sequence[tuple[str, str, int, float, float | None]],
    sections: Sequence[str],
    contexts: dict[str, dict[str, Run]],
    latency: dict[str, list[float]],
) -> str:
    latencies = {name: summarize_latency(ms) for name, ms in latency.items()}
    return "\n".join(
        [
            "# Benchmark: tree mode beside the default mode",
            "",
            f"Measured {time.strftime('%Y-%m-%d')} by `python -m benchmarks.bench_tree` at commit "
            f"{_commit()}, one run, parser `{engine.settings.parse.parser}`, no LLM (offline node "
            "selection, extractive answers).",
            "",
            machine,
            "",
            "Default mode: `Engine.retrieve` (hybrid + rerank step), top-10 chunks, pages in rank "
            "order. Tree mode: `query --mode tree` (`tree_answer`): files ranked (a file the "
            "question names first, then by its best chunk), 5 sections per file chosen offline "
            "(a node scores its best chunk's score plus title/summary terms), each section a "
            "source whose page is its best-scored chunk's page; cited pages in citation order "
            "are each source's page, then the pages of its highlights. The row with "
            "1/sqrt(N+1)·Σ node scores swaps in PageIndex's node score (the sum of a node's N "
            "chunks' scores over sqrt(N+1)), all else equal; the row with title weight 0.5 "
            "doubles the title/summary term share's weight (0.25 by default). Pages of the other "
            "10-K (in the shared collection) take a rank but never match. Page recall@k: 1 when "
            "an evidence page is among the first k distinct pages; MRR over distinct pages (0 "
            "beyond 10).",
            "",
            "## Ingestion and tree build time",
            "",
            _ingest_table(ingestion),
            "",
            *sections,
            "## Evidence in the text handed to the answerer",
            "",
            "Default mode: the 10 chunks' pages. Tree mode: the pages whose text is in the chosen "
            f"sections' content (each cut at {MAX_NODE_CHARS:,} characters).",
            "",
            _context_table(contexts),
            "",
            "## Latency per question (warm after the first)",
            "",
            render_latency_table(latencies),
            "",
        ]
    )


def _commit() -> str:
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT, capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    return found.stdout.strip() or "unknown"


if __name__ == "__main__":
    sys.exit(main())
