"""Benchmark of the sub-question engine and enrichment on ../shared/eval, offline.

- Ingest time with `metadata=entity` beside `none` (the essay and the Netflix 10-K).
- Compound questions: the 44 Paul Graham questions joined in pairs ("A Also, B"); context
  recall over both parts' references for the compound answer (its top 20 sources by score),
  the parts asked alone (top 10 each) and one retrieval over the whole compound (top 20).
- Warm latency p50/p95: the parts alone vs the compounds.
- Where filters help: year questions on the essay (share of cited sources whose page mentions
  the year), the 44 questions' recall@10 and the Netflix questions' page recall@10, for each
  filter scope of years and entities.
`--storage` keeps the ingests (a re-run reports the ingest times first measured).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pymupdf

from benchmarks.datasets.library import EVAL
from benchmarks.records import Record
from benchmarks.suites import SuiteOptions
from benchmarks.systems.profiles import FINANCE
from citerag.answer.contract import AnswerResult
from citerag.engine import Engine
from citerag.enrich.step import Enricher
from citerag.eval.metrics import score_question
from citerag.settings import Settings

PG_PDF = EVAL / "paul_graham" / "paul_graham_essay.pdf"
PG_QA = EVAL / "paul_graham" / "paul_graham_qa.json"
NETFLIX = EVAL / "finance" / "NETFLIX_2020_10K.pdf"
FINANCE_QA = EVAL / "finance" / "finance_qa.json"
SCOPES = {
    "no filters": {"years": "none", "entities": "none"},
    "years on vectors": {"years": "vector", "entities": "none"},
    "years everywhere": {"years": "both", "entities": "none"},
    "entities on vectors": {"years": "none", "entities": "vector"},
    "entities everywhere": {"years": "none", "entities": "both"},
    "years everywhere, entities on vectors": {"years": "both", "entities": "vector"},
}
# facts.FILTER_SCOPES (the default) is years everywhere, entities not applied; the values are
# citerag.tools.retriever.FilterScope's ("both": every ranking, "vector", "none").
CITATION = re.compile(r"\[(\d+)\]")


def ingest_times(root: Path, metadata: str) -> list[tuple[str, str, int, float, float]]:
    """(metadata, document, pages, ingest seconds, seconds of the enrich step alone). An ingest
    is timed when it happens; a re-run on the same storage reports the time first measured."""
    engine = Engine(Settings(storage_dir=root / metadata, metadata=metadata))
    timings_file = root / metadata / "ingest_seconds.json"
    timings = json.loads(timings_file.read_text()) if timings_file.exists() else {}
    try:
        rows = []
        for pdf, collection in ((PG_PDF, "pg"), (NETFLIX, "netflix")):
            outcome = engine.ingest(pdf, collection)
            if outcome.status != "skipped":
                timings[pdf.name] = outcome.seconds
                timings_file.write_text(json.dumps(timings))
            chunks = engine.docstore.chunks_of(collection, outcome.doc_id)
            copies = [c.model_copy(deep=True) for c in chunks]
            started = time.perf_counter()
            Enricher(metadata).enrich(copies)
            enrich_s = time.perf_counter() - started
            rows.append((metadata, pdf.name, outcome.pages, timings.get(pdf.name, 0.0), enrich_s))
            print(f"{metadata}: {pdf.name} {outcome.status} in {outcome.seconds:.1f} s")
        return rows
    finally:
        engine.close()


def measure(engine: Engine) -> dict[str, Any]:
    questions = [q for q in json.loads(PG_QA.read_text()) if q["reference_contexts"]]
    ask(engine, "What did the author work on?", "pg", None)  # warm: models, states
    return {
        "compound": compound_recall(engine, questions),
        "years": year_questions(engine),
        "pg_scopes": {name: pg_recall(engine, questions, s) for name, s in SCOPES.items()},
        "pg_single": pg_recall(engine, questions, None, plan=False),
        "finance_scopes": {name: finance_recall(engine, s) for name, s in SCOPES.items()},
    }


def ask(
    engine: Engine,
    question: str,
    collection: str,
    scopes: dict[str, str] | None,
    top_k: int = 10,
    plan: bool = True,
) -> tuple[AnswerResult, float]:
    from llama_index.core.schema import QueryBundle

    from citerag.query.cited_query_engine import answer_from_response

    started = time.perf_counter()
    if plan:
        sub = engine.subquestion_engine(collection, top_k=top_k, filter_scopes=scopes)
        result = answer_from_response(sub.query(QueryBundle(question)))  # type: ignore[arg-type]
    else:
        result = engine.query(question, collection, top_k=top_k, plan=False)
    return result, time.perf_counter() - started


def by_score(result: AnswerResult, k: int) -> list[str]:
    ranked = sorted(result.sources, key=lambda s: -s.score)
    return [s.content for s in ranked[:k]]


def compound_recall(engine: Engine, questions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for first, second in zip(questions[0::2], questions[1::2], strict=False):
        references = first["reference_contexts"] + second["reference_contexts"]
        a, time_a = ask(engine, first["query"], "pg", None)
        b, time_b = ask(engine, second["query"], "pg", None)
        compound_text = f"{first['query']} Also, {second['query']}"
        compound, time_c = ask(engine, compound_text, "pg", None, top_k=20)  # the parts' budget
        single, _ = ask(engine, compound_text, "pg", None, top_k=20, plan=False)
        rows.append(
            {
                "parts": recall(by_score(a, 10) + by_score(b, 10), references),
                "compound": recall(by_score(compound, 20), references),
                "compound_all": recall([s.content for s in compound.sources], references),
                "single": recall([s.content for s in single.sources], references),
                "sub_questions": len(compound.metadata.sub_questions),
                "sources": len(compound.sources),
                "times": (time_a, time_b, time_c),
                "plan": [str(p["question"])[:60] for p in compound.metadata.sub_questions],
            }
        )
    return {"rows": rows}


def recall(texts: Sequence[str], references: Sequence[str]) -> float:
    return score_question(list(texts), references, recall_ks=(len(texts) or 1,)).recall_at[
        len(texts) or 1
    ]


def year_questions(engine: Engine) -> dict[str, dict[str, float]]:
    with pymupdf.open(PG_PDF) as document:
        pages = [page.get_text() for page in document]
    mentioned = sorted({y for text in pages for y in re.findall(r"\b(19[6-9]\d|20[01]\d)\b", text)})
    results: dict[str, dict[str, float]] = {}
    for name, scopes in SCOPES.items():
        precision, hits = [], []
        for year in mentioned:
            result, _ = ask(engine, f"What did the author do in {year}?", "pg", scopes)
            cited = {int(n) for n in CITATION.findall(result.answer)}
            pages_cited = [s.page_number for s in result.sources if s.citation_number in cited]
            good = [p for p in pages_cited if year in pages[p - 1]]
            precision.append(len(good) / len(pages_cited) if pages_cited else 0.0)
            hits.append(1.0 if good else 0.0)
        results[name] = {
            "questions": len(mentioned),
            "precision": statistics.fmean(precision),
            "hit": statistics.fmean(hits),
        }
        print(f"years, {name}: {results[name]}")
    return results


def pg_recall(
    engine: Engine,
    questions: Sequence[dict[str, Any]],
    scopes: dict[str, str] | None,
    plan: bool = True,
) -> float:
    scores = [
        recall(
            by_score(ask(engine, q["query"], "pg", scopes, plan=plan)[0], 10),
            q["reference_contexts"],
        )
        for q in questions
    ]
    print(f"pg recall@10 {scopes}: {statistics.fmean(scores):.3f}")
    return statistics.fmean(scores)


def finance_recall(engine: Engine, scopes: dict[str, str]) -> float:
    questions = [q for q in json.loads(FINANCE_QA.read_text()) if q["document"] == NETFLIX.name]
    found = []
    for q in questions:
        result, _ = ask(engine, q["question"], "netflix", scopes)
        pages = {s.page_number for s in result.sources[:10]}
        found.append(len(pages & set(q["evidence_pages"])) / len(set(q["evidence_pages"])))
    print(f"netflix page recall@10 {scopes}: {statistics.fmean(found):.3f}")
    return statistics.fmean(found)


def run(options: SuiteOptions) -> Record:
    root = options.storage_for("subquestions")
    ingest_rows = [ingest_times(root, metadata) for metadata in ("none", "entity")]
    engine = Engine(Settings(storage_dir=root / "entity", metadata="entity", vocabulary=FINANCE))
    try:
        data = measure(engine)
    finally:
        engine.close()
    return Record(
        suite="subquestions",
        command=options.command,
        variant=options.variant,
        settings=dict(options.settings),
        systems={name: json.dumps(scopes) for name, scopes in SCOPES.items()},
        datasets={"essay": PG_QA.name, "finance": FINANCE_QA.name},
        metrics=data,
        timings={"ingest": [[list(row) for row in block] for block in ingest_rows]},
    )
