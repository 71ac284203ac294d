"""Retrieval on every kind of document: each labelled set and each document type, project vs stock.

Every shared PDF in one collection (the library suite's stored ingests, reused with `--reuse`),
every labelled question asked of the whole library, 10 chunks per system:

* page hit@1/5/10 on the 10-K questions, the statement questions and the MMLongBench-Doc dev
  split, overall and per document type of the dev split; context recall@5/@10 on the essay;
* for the project's default, for the project with each evidence signal switched the other way
  and other ranking parts off (setting-override variants), and for the stock systems;
* the project's retrieve p50 per variant (what a signal costs per question).
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from benchmarks.datasets.library import (
    DEV_SET,
    EVAL,
    PAGE_SETS,
    PDF_FOLDERS,
    essay_questions,
    library_questions,
    shared_pdfs,
)
from benchmarks.metrics.pages import place_hits
from benchmarks.metrics.timing import REPEATS, fastest_in_turns
from benchmarks.records import Record
from benchmarks.suites import SuiteOptions
from benchmarks.suites.library_storage import COLLECTION, LEAN, STOCK, prepared_library
from benchmarks.systems.project import (
    Retrieve,
    project_engine,
    project_environment,
    variant_retrieve,
)
from citerag.eval.metrics import score_question, summarize

KS = (1, 5, 10)
TOP_K = 10
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
    "project, no evidence, no best-sentence": {
        "sentence_weight": 0.0,
        **{key: 0.0 for key in SIGNALS.values()},
    },
    "project, no page evidence": {"page_weight": 0.0},
    "project, filing words unweighted": {"filing_keyword_weight": 1.0},
}
PROFILED = r"chunk_rankers\.py|evidence\.py|get_sentence_vectors|\(rank\)"


def variants(settings: Any) -> dict[str, dict[str, object]]:
    """The default, each evidence signal switched, and the other ranking parts off."""
    found: dict[str, dict[str, object]] = {DEFAULT: {}}
    for signal, key in SIGNALS.items():
        on = getattr(settings.retrieval, key) > 0
        found[f"project, {signal} evidence {'off' if on else 'on'}"] = {key: 0.0 if on else 1.0}
    return {**found, **OTHER_PARTS}


def page_hits(systems: Mapping[str, Retrieve]) -> dict[str, dict[str, dict[str, float]]]:
    """Group ("set" or "set / type") -> system -> {"hit@k": rate, "n": questions}."""
    table: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    for set_name, questions in library_questions(PAGE_SETS).items():
        for system, retrieve in systems.items():
            by_group: dict[str, list[dict[int, int]]] = defaultdict(list)
            for q in questions:
                places = [(d, p) for d, p, _ in retrieve(q["question"])]
                scored = place_hits(places, q["document"], q["evidence_pages"], KS)
                by_group[set_name].append(scored)
                if set_name == DEV_SET:
                    by_group[f"{set_name} / {q['type']}"].append(scored)
            for group, rows in by_group.items():
                rates = {f"hit@{k}": sum(r[k] for r in rows) / len(rows) for k in KS}
                table[group][system] = {**rates, "n": len(rows)}
            print(f"{set_name} / {system}: {table[set_name][system]}", flush=True)
    return dict(table)


def page_questions() -> list[str]:
    return [q["question"] for qs in library_questions(PAGE_SETS).values() for q in qs]


def essay_recall(systems: Mapping[str, Retrieve]) -> dict[str, dict[str, Any]]:
    """System -> the essay's context hit@1 and recall@k (citerag.eval.metrics)."""
    questions = essay_questions()
    found: dict[str, dict[str, Any]] = {}
    for name, retrieve in systems.items():
        report = summarize(
            [
                score_question([t for _, _, t in retrieve(q["query"])], q["reference_contexts"])
                for q in questions
            ]
        )
        found[name] = {
            "hit_at": {str(k): v for k, v in report.hit_at.items()},
            "recall_at": {str(k): v for k, v in report.recall_at.items()},
            "mrr": report.mrr,
            "questions": report.questions,
        }
    return found


def evidence_profile(retrieve: Retrieve) -> str:
    """Where the default retrieve spends its time in the parts the variants switch."""
    profiler = cProfile.Profile()
    profiler.enable()
    for question in page_questions():
        retrieve(question)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("cumulative").print_stats(PROFILED)
    return out.getvalue()


def run(options: SuiteOptions) -> Record:
    from benchmarks.systems.stock_lean import LeanDense
    from benchmarks.systems.stock_llamaindex import as_places, library_retrievers

    prepared_library(options)
    storage = options.storage_for("kinds")
    environment = project_environment(
        storage / "project", options.settings, options.disabled_rankers
    )
    engine = project_engine(storage / "project", environment)
    changes = variants(engine.settings)
    projects = {
        name: variant_retrieve(engine, COLLECTION, change, TOP_K)
        for name, change in changes.items()
    }
    stock = library_retrievers(storage / STOCK, TOP_K)
    systems: dict[str, Retrieve] = {
        **projects,
        **{name: as_places(r) for name, r in stock.items()},
        "lean stock": LeanDense(storage / LEAN, TOP_K),
    }
    metrics = {
        "hits": page_hits(systems),
        "essay": essay_recall(systems),
        "evidence_profile": evidence_profile(projects[DEFAULT]),
    }
    spent = fastest_in_turns(projects, page_questions())
    engine.close()
    folders = ", ".join(str(f.relative_to(EVAL)) for f in PDF_FOLDERS)
    described = {
        name: ", ".join(f"{k}={v}" for k, v in change.items()) or "config.py"
        for name, change in changes.items()
    }
    return Record(
        suite="kinds",
        command=options.command,
        variant=options.variant,
        settings={**options.settings, "DISABLED_RANKERS": ",".join(options.disabled_rankers)},
        systems=described,
        datasets={"pdfs": f"{len(shared_pdfs())} PDFs ({folders})"},
        metrics=metrics,
        timings={
            "retrieve_ms": {name: [round(v, 3) for v in values] for name, values in spent.items()},
            "repeats": REPEATS,
            "load": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
        },
    )
