"""A shelf of filings in one collection: does the engine answer from the right filing and page?

`../shared/eval/financebench_dev`: 52 filings of 10 companies (10-Ks, 10-Qs, 8-Ks, earnings
releases, several years of each) ingested into ONE collection with one `main.py ingest` call,
then its 47 analyst questions asked with `--top-k 10`, beside stock LlamaIndex dense, BM25 and
RRF over the same files (`benchmarks/systems/stock_llamaindex.py`, the same splitter and model).
Per system: the right document first (the first source is the question's filing), page
hit@1/5/10 (an evidence page of the right filing among the first k distinct places) overall and
per question kind, and the answer p50. Also the cards' accuracy (company, kind, fiscal period
against `documents.json`, which the engine never reads) and each card as read.

`--reuse` keeps a shelf already ingested (ingest seconds then come from the stored timings).
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.datasets.library import EVAL, shared_pdfs
from benchmarks.records import Record
from benchmarks.suites import SuiteOptions
from benchmarks.suites.library_storage import stock_ingest
from benchmarks.systems.process import PROJECT, base_environment
from benchmarks.systems.project import project_environment, timed_library_ingest
from benchmarks.systems.stock_llamaindex import as_places, library_retrievers
from citerag.eval.metrics import percentile

SHELF = EVAL / "financebench_dev"
PDFS = SHELF / "pdfs"
COLLECTION = "filings"  # config.py's "filings" article: the financial profile
KS = (1, 5, 10)
TOP_K = 10
KINDS = {"10k": "annual report", "10q": "quarterly report", "8k": "current report"}
KINDS["earnings"] = "earnings release"
Place = tuple[str, int]
Retrieve = Callable[[str], list[Place]]


def questions() -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads((SHELF / "questions.json").read_text("utf-8"))
    return loaded


def pages_of(retrieve: Any) -> Any:
    """A retrieve of (document, page, text) as one of (document, page)."""
    return lambda question: [(doc, page) for doc, page, _ in retrieve(question)]


def project_engine(storage: Path) -> Any:
    """The engine as `main.py query --collection filings` opens it (the article's profile)."""
    import config
    import extraction_schemas
    from citerag.article import load_article
    from citerag.engine import Engine

    environ = dict(base_environment(), RAG_STORAGE_DIR=str(storage))
    target = load_article(config, extraction_schemas.SCHEMAS, None, COLLECTION, environ)
    return Engine(target.settings, schema=target.schema)


def card_accuracy(engine: Any) -> dict[str, Any]:
    """Each stored card against documents.json's company, kind and period."""
    truth = {d["doc_name"] + ".pdf": d for d in json.loads((SHELF / "documents.json").read_text())}
    state = engine.searchable_state(COLLECTION)
    rows: list[tuple[str, dict[str, Any], dict[str, bool]]] = []
    right: dict[str, int] = defaultdict(int)
    for doc in state.docs.values():
        name = str(next(iter(doc.places.values()))["doc_name"])
        card, want = doc.card, truth[name]
        checks = {
            "company": _squash(want["company"]) in _squash(card.organisation),
            "kind": card.kind == KINDS[want["doc_type"].lower()],
            "period": card.fiscal_year == want["doc_period"],
        }
        for field, ok in checks.items():
            right[field] += ok
        rows.append((name, card.to_dict(), checks))
    return {"rows": sorted(rows, key=lambda r: r[0]), "right": dict(right), "n": len(rows)}


# What a card's kind may be for each document type the shared sets name (MMLongBench-Doc's
# types, and the kind of the essay, the eBook and the 10-Ks).
ACCEPTED_KINDS = {
    "Academic paper": {"paper"},
    "Guidebook": {"manual", "guidebook"},
    "Brochure": {"brochure", "guidebook"},
    "Research report / Introduction": {"report", "government report"},
    "Administration/Industry file": {"legal document", "government report", "report"},
    "Financial report": {"annual report", "report"},
    "Tutorial/Workshop": {"guidebook", "manual", "report"},
    "essay": {"essay", ""},
    "eBook": {"book", "guidebook", ""},
    "10-K": {"annual report"},
}


def library_cards() -> dict[str, Any]:
    """The card of every other shared PDF (parsed as ingest parses it), its kind against the
    document type its set gives."""
    from citerag.enrich.cards import card_of
    from citerag.parse.select import parse_document
    from citerag.parse.validate import inspect_pdf

    types = {
        q["document"]: q["type"]
        for q in json.loads((EVAL / "mmlongbench_dev" / "questions.json").read_text())
    }
    types |= {"paul_graham_essay.pdf": "essay", "eBook-How-to-Build-a-Career-in-AI.pdf": "eBook"}
    types |= {p.name: "10-K" for p in (EVAL / "finance").glob("*.pdf")}
    rows = []
    cache = PROJECT / "storage" / "bench_shelf_parse_cache"
    for pdf in shared_pdfs():
        parsed = parse_document(pdf, inspect_pdf(pdf).sha256, "pymupdf", cache)
        card = card_of(pdf, parsed)
        kind_type = types.get(pdf.name, "")
        accepted = card.kind in ACCEPTED_KINDS.get(kind_type, set())
        rows.append((pdf.name, kind_type, card.to_dict(), accepted))
    return {"rows": rows, "right": sum(r[3] for r in rows), "n": len(rows)}


def _squash(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def project_places(engine: Any) -> tuple[Retrieve, dict[str, float]]:
    """The project's answer sources as places, and each question's milliseconds."""
    spent: dict[str, float] = {}

    def places(question: str) -> list[Place]:
        started = time.perf_counter()
        result = engine.query(question, COLLECTION, top_k=TOP_K)
        spent[question] = (time.perf_counter() - started) * 1000
        ranked = sorted(result.sources, key=lambda s: s.citation_number)
        return [(s.document_name, s.page_number) for s in ranked]

    return places, spent


def scored(retrieve: Retrieve) -> list[dict[str, Any]]:
    rows = []
    for q in questions():
        places = list(dict.fromkeys(retrieve(q["question"])))
        good = [doc == q["document"] and page in q["evidence_pages"] for doc, page in places]
        rows.append(
            {
                "kind": q["question_type"],
                "right_first": bool(places) and places[0][0] == q["document"],
                **{f"hit@{k}": any(good[:k]) for k in KS},
            }
        )
    return rows


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    keys = ["right_first", *(f"hit@{k}" for k in KS)]
    return {key: sum(r[key] for r in rows) / len(rows) for key in keys}


def prepared_shelf(options: SuiteOptions, storage: Path) -> dict[str, Any]:
    """The shelf ingested by the project and by stock LlamaIndex, each timed as a fresh
    process; the timings kept beside them for `--reuse`."""
    persist = storage / "stock"
    timings = storage / "ingest_seconds.json"
    ingest: dict[str, Any] = json.loads(timings.read_text()) if timings.exists() else {}
    if not options.reuse or not (storage / "docstore.sqlite").exists():
        env = project_environment(storage, options.settings, options.disabled_rankers)
        ingest["project"] = timed_library_ingest([PDFS], COLLECTION, env)
    if not options.reuse or not persist.exists():
        pdfs = sorted(PDFS.glob("*.pdf"))
        ingest["stock"] = stock_ingest("benchmarks.systems.stock_llamaindex", persist, pdfs)
    storage.mkdir(parents=True, exist_ok=True)
    timings.write_text(json.dumps(ingest))
    return ingest


def by_kind(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[row["kind"]].append(row)
    return {kind: summary(group) for kind, group in groups.items()}


def run(options: SuiteOptions) -> Record:
    storage = options.storage_for("shelf")
    ingest = prepared_shelf(options, storage)
    engine = project_engine(storage)
    project, spent = project_places(engine)
    stock = library_retrievers(storage / "stock", TOP_K)
    systems = {
        "project (default)": project,
        **{n: pages_of(as_places(r)) for n, r in stock.items()},
    }
    per_system = {name: scored(retrieve) for name, retrieve in systems.items()}
    latencies = list(spent.values())
    metrics: dict[str, Any] = {
        "questions": len(questions()),
        "systems": {name: summary(rows) for name, rows in per_system.items()},
        "by_kind": {name: by_kind(rows) for name, rows in per_system.items()},
        "cards": card_accuracy(engine),
        "library_cards": library_cards(),
    }
    engine.close()
    return Record(
        suite="shelf",
        command=options.command,
        variant=options.variant,
        settings={**options.settings, "DISABLED_RANKERS": ",".join(options.disabled_rankers)},
        systems={name: "" for name in systems},
        datasets={"shelf": f"financebench_dev: {metrics['cards']['n']} filings"},
        metrics=metrics,
        timings={
            "ingest": ingest,
            "p50_ms": percentile(latencies, 0.5),
            "p95_ms": percentile(latencies, 0.95),
            "load": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
        },
    )
