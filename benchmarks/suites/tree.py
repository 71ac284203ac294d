"""Tree mode (`query --mode tree`) beside the default mode on the finance questions.

- Page recall@1/3/5/10 and MRR per question type on the 50 labelled finance questions
  (../shared/eval/finance/finance_qa.json) and the 24 statement questions
  (benchmarks/data/statement_questions.json), each question asked of a collection holding only
  its own 10-K, and of one collection holding both 10-Ks (where tree mode ranks the files).
- Two scoring levers over the same stores: PageIndex's node score and a heavier title weight.
- Whether an evidence page is in the text each mode hands to the answerer, and how much text.
- Tree build time as a share of each PDF's ingest time.

The ingests are made afresh in `storage/bench_tree` (`--storage` elsewhere) so that the tree
build is timed; `--reuse` keeps them, and their ingest and tree times are then not measured.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any
from unittest import mock

import config
from benchmarks.metrics.pages import score_pages
from benchmarks.records import Record
from benchmarks.suites import SuiteOptions
from benchmarks.systems.process import PROJECT
from benchmarks.systems.profiles import with_finance_words
from benchmarks.systems.project import collection_for, ingest_all
from citerag.engine import Engine
from citerag.nodes import doc_name_of, page_of
from citerag.settings import settings_from_config
from citerag.tools.tree_mode import MAX_NODE_CHARS, node_content
from citerag.tree.ingest_step import TREE_SECONDS
from citerag.tree.model import DocumentTree
from citerag.tree.stored import stored_tree

FINANCE = PROJECT.parent / "shared" / "eval" / "finance"
PDFS = [FINANCE / "NETFLIX_2020_10K.pdf", FINANCE / "MICROSOFT_2021_10K.pdf"]
QUESTION_SETS = {
    "finance_qa": FINANCE / "finance_qa.json",
    "statements": PROJECT / "benchmarks" / "data" / "statement_questions.json",
}
BOTH = "benchtree-both-10ks"
TOP_K = 10
OWN, SHARED = "own 10-K", "both 10-Ks"
DEFAULT, TREE = "default mode", "tree mode"
SUM_SCORING = "tree mode with 1/sqrt(N+1)·Σ node scores"
TITLE_HALF = "tree mode with title weight 0.5"
Question = dict[str, Any]  # {id, type, document, question, evidence_pages}
Trees = dict[tuple[str, str], DocumentTree]


@dataclass(frozen=True)
class Ranked:
    """One cited page, in rank order; pages of another document get a page no evidence has."""

    page: int


@dataclass(frozen=True)
class Answer:
    ranked: list[Ranked]
    evidence_in_context: bool  # an evidence page's text was handed to the answerer
    context_chars: int
    context_pages: int


@dataclass
class Run:
    """One system over one question set, per question, as the record keeps it."""

    scores: list[dict[str, Any]] = field(default_factory=list)  # {id, type, hits, rr, pages}
    in_context: list[int] = field(default_factory=list)
    context_chars: list[int] = field(default_factory=list)
    context_pages: list[int] = field(default_factory=list)
    milliseconds: list[float] = field(default_factory=list)


class TreeTimes(logging.Handler):
    """Collects the tree build time that each ingest logs."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seconds: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        value = getattr(record, TREE_SECONDS, None)
        if value is not None:
            self.seconds[str(getattr(record, "document", ""))] = float(value)


def pageindex_evidence(hits: Sequence[float], chunk_count: int) -> float:
    """PageIndex's node score, 1/sqrt(N+1) * the sum of its N chunks' scores (for comparison)."""
    return sum(hits) / math.sqrt(chunk_count + 1)


def ingest(engine: Engine) -> list[dict[str, Any]]:
    """Each PDF into its own collection, then both into one; pages, seconds and tree seconds."""
    times = TreeTimes()
    tree_log = logging.getLogger("citerag.tree.ingest_step")
    tree_log.setLevel(logging.INFO)
    tree_log.addHandler(times)
    rows = []
    try:
        for name, pages, _chunks, seconds in ingest_all(engine, PDFS):
            rows.append(_ingest_row(name, "own", pages, seconds, times.seconds.pop(name, None)))
        for pdf in PDFS:
            outcome = engine.ingest(pdf, BOTH)
            print(f"ingested {pdf.name} into {BOTH}: {outcome.status}", flush=True)
            tree_seconds = times.seconds.pop(pdf.name, None)
            where = "both (parse cached)"
            rows.append(_ingest_row(pdf.name, where, outcome.pages, outcome.seconds, tree_seconds))
    finally:
        tree_log.removeHandler(times)
    return rows


def _ingest_row(
    name: str, where: str, pages: int, seconds: float, tree_seconds: float | None
) -> dict[str, Any]:
    return {
        "document": name,
        "collection": where,
        "pages": pages,
        "seconds": seconds,
        "tree_seconds": tree_seconds,
    }


def default_answer(engine: Engine, question: Question, collection: str) -> Answer:
    """The reranked top-10 chunks' pages in rank order."""
    nodes = engine.retrieve(question["question"], collection, TOP_K)
    ranked = [
        _ranked(doc_name_of(n.node), page_of(n.node), question, i) for i, n in enumerate(nodes)
    ]
    pages = {(doc_name_of(n.node), page_of(n.node)) for n in nodes}
    hit = any(p.page in question["evidence_pages"] for p in ranked)
    chars = sum(len(n.node.get_content()) for n in nodes)
    return Answer(ranked, hit, chars, len(pages))


def tree_answer(engine: Engine, question: Question, collection: str, trees: Trees) -> Answer:
    """Cited pages in citation order: each source's page, then its highlights' pages."""
    result = engine.tree_answer(question["question"], collection)
    ranked: list[Ranked] = []
    delivered: set[tuple[str, int]] = set()
    for source in result.sources:
        key = (collection, source.document_name)
        if key not in trees:
            trees[key] = stored_tree(engine.docstore, collection, source.document_name)
        node = trees[key].find(source.section.node_id) if source.section else None
        content = node_content(node) if node is not None else None
        pages = [source.page_number]
        if content is not None and node is not None:
            pages += [content.page_at(h.startOffset, node.start_index) for h in source.highlights]
            delivered |= {(source.document_name, p) for p in content.pages()}
        ranked += [_ranked(source.document_name, p, question, len(ranked)) for p in pages]
    evidence = {(question["document"], p) for p in question["evidence_pages"]}
    chars = sum(len(s.content) for s in result.sources)
    return Answer(ranked, bool(evidence & delivered), chars, len(delivered))


def _ranked(document: str, page: int, question: Question, index: int) -> Ranked:
    return Ranked(page if document == question["document"] else -1 - index)


def asker(engine: Engine, scope: str, trees: Trees | None) -> Callable[[Question], Answer]:
    """Asks in the default mode (`trees` None) or tree mode, of the scope's collection."""

    def ask(question: Question) -> Answer:
        collection = collection_for(question["document"]) if scope == OWN else BOTH
        if trees is None:
            return default_answer(engine, question, collection)
        return tree_answer(engine, question, collection, trees)

    return ask


def measure(questions: Sequence[Question], ask: Callable[[Question], Answer]) -> Run:
    run = Run()
    for question in questions:
        started = time.perf_counter()
        answer = ask(question)
        run.milliseconds.append((time.perf_counter() - started) * 1000)
        score = score_pages(
            answer.ranked, question["evidence_pages"], question["id"], question["type"]
        )
        run.scores.append(
            {
                "id": score.question_id,
                "type": score.question_type,
                "hits": {str(k): hit for k, hit in score.hits.items()},
                "rr": score.reciprocal_rank,
                "pages": list(score.pages),
            }
        )
        run.in_context.append(int(answer.evidence_in_context))
        run.context_chars.append(answer.context_chars)
        run.context_pages.append(answer.context_pages)
    return run


def measure_set(engine: Engine, questions: Sequence[Question], trees: Trees) -> dict[str, Run]:
    """Every system over one question set; the levers patch tree search's scoring."""
    runs: dict[str, Run] = {}
    for scope in (OWN, SHARED):
        runs[f"{DEFAULT}, {scope}"] = measure(questions, asker(engine, scope, None))
        runs[f"{TREE}, {scope}"] = measure(questions, asker(engine, scope, trees))
        with mock.patch("citerag.tools.tree_search.node_evidence", pageindex_evidence):
            runs[f"{SUM_SCORING}, {scope}"] = measure(questions, asker(engine, scope, trees))
        with mock.patch("citerag.tools.tree_search.TITLE_WEIGHT", 0.5):
            runs[f"{TITLE_HALF}, {scope}"] = measure(questions, asker(engine, scope, trees))
    return runs


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def run(options: SuiteOptions) -> Record:
    storage = options.storage_for("tree")
    if not options.reuse:
        shutil.rmtree(storage, ignore_errors=True)  # a fresh ingest, so the tree build is timed
    settings = settings_from_config(config).with_overrides(
        storage_dir=storage, llm_provider="", reranker="colbert-if-installed"
    )
    engine = Engine(with_finance_words(settings))
    load_before = _load()
    try:
        ingestion = ingest(engine)
        engine.retrieve("warm up", BOTH, TOP_K)  # models loaded, indexes in memory
        engine.tree_answer("warm up", BOTH)
        trees: Trees = {}
        sets: dict[str, dict[str, Any]] = {}
        latency: dict[str, list[float]] = {}
        for set_name, path in QUESTION_SETS.items():
            questions = json.loads(path.read_text(encoding="utf-8"))
            runs = measure_set(engine, questions, trees)
            sets[set_name] = {
                "questions": len(questions),
                "systems": {name: _stored(r) for name, r in runs.items()},
            }
            latency |= {f"{name}, {set_name}": r.milliseconds for name, r in runs.items()}
            print(f"{set_name}: {len(questions)} questions measured", flush=True)
        parser = engine.settings.parse.parser
    finally:
        engine.close()
    return Record(
        suite="tree",
        command=options.command,
        variant=options.variant,
        settings=dict(options.settings),
        systems={
            DEFAULT: f"Engine.retrieve, top {TOP_K} chunks",
            TREE: "Engine.tree_answer, offline node selection, extractive answers",
            SUM_SCORING: "tree mode, node score 1/sqrt(N+1) times the sum of its chunks' scores",
            TITLE_HALF: "tree mode, title/summary term weight 0.5",
        },
        datasets={
            "pdfs": ", ".join(p.name for p in PDFS),
            "sets": ", ".join(f"`{p.parent.name}/{p.name}`" for p in QUESTION_SETS.values()),
            "parser": parser,
            "max_node_chars": str(MAX_NODE_CHARS),
        },
        metrics={"sets": sets, "ingestion": ingestion},
        timings={
            "latency_ms": latency,
            "load": {"start": load_before, "end": _load()},
            "reused": options.reuse,
        },
    )


def _stored(run: Run) -> dict[str, Any]:
    stored = asdict(run)
    del stored["milliseconds"]  # kept under the record's timings
    return stored
