"""A shelf of filings in one collection: does the engine answer from the right filing and page?

`../shared/eval/financebench_dev`: 52 filings of 10 companies (10-Ks, 10-Qs, 8-Ks, earnings
releases, several years of each) ingested into ONE collection with one `main.py ingest` call,
then its 47 analyst questions asked with `--top-k 10`, beside stock LlamaIndex dense, BM25 and
RRF over the same files
(`benchmarks/systems/stock_llamaindex.py`, the same splitter and model). Per system: the
right document first (the first source is the question's filing), page hit@1/5/10 (an evidence
page of the right filing among the first k distinct places) overall and per question kind, and
the answer p50. Also the cards' accuracy (company, kind, fiscal period against
`documents.json`, which the engine never reads) and each card as read.

    python -m benchmarks.bench_shelf [--storage DIR] [--reuse]

`--reuse` keeps a shelf already ingested under DIR (ingest seconds then come from its log).
Writes benchmarks/results/shelf.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.datasets.library import EVAL, shared_pdfs
from benchmarks.suites.library_storage import stock_ingest
from benchmarks.systems.process import timed_run
from benchmarks.systems.stock_llamaindex import as_places, library_retrievers
from benchmarks.tables import RESULTS, publish, shared_data_missing
from citerag.eval.machine import describe_machine
from citerag.eval.metrics import percentile

PROJECT = Path(__file__).resolve().parents[1]

SHELF = EVAL / "financebench_dev"
PDFS = SHELF / "pdfs"
COLLECTION = "filings"  # config.py's "filings" article: the financial profile
KS = (1, 5, 10)
TOP_K = 10
OUT = RESULTS / "shelf.md"
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


def project_ingest(storage: Path) -> dict[str, Any]:
    env = dict(os.environ, RAG_STORAGE_DIR=str(storage))
    command = [sys.executable, str(PROJECT / "main.py"), "ingest", str(PDFS)]
    seconds, stdout = timed_run([*command, "--collection", COLLECTION], env)
    total = stdout.strip().splitlines()[-1]
    print(f"project ingest: {seconds:.1f} s; {total}", flush=True)
    return {"seconds": seconds, "total": total}


def project_engine(storage: Path) -> Any:
    """The engine as `main.py query --collection filings` opens it (the article's profile)."""
    import config
    import extraction_schemas
    from citerag.article import load_article
    from citerag.engine import Engine

    environ = dict(os.environ, RAG_STORAGE_DIR=str(storage))
    target = load_article(config, extraction_schemas.SCHEMAS, None, COLLECTION, environ)
    return Engine(target.settings, schema=target.schema)


def card_accuracy(engine: Any) -> dict[str, Any]:
    """Each stored card against documents.json's company, kind and period."""
    truth = {d["doc_name"] + ".pdf": d for d in json.loads((SHELF / "documents.json").read_text())}
    state = engine.searchable_state(COLLECTION)
    rows: list[tuple[str, Any, dict[str, bool]]] = []
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
        rows.append((name, card, checks))
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
        rows.append((pdf.name, kind_type, card, card.kind in ACCEPTED_KINDS.get(kind_type, set())))
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


def render(results: dict[str, Any]) -> str:
    cards = results["cards"]
    n = cards["n"]
    lines = [
        "# A shelf of filings in one collection",
        "",
        f"{results['machine']} `financebench_dev`: {n} filings of 10 companies in ONE collection"
        f" (one `main.py ingest` call), its {results['questions']} questions asked with"
        f" `--top-k {TOP_K}` (`main.py query`'s path: `Engine.query`).",
        "Reproduce: `python -m benchmarks.bench_shelf` (add `--reuse` to keep the ingested shelf).",
        "",
        "## Answers",
        "",
        "| system | right document first | hit@1 | hit@5 | hit@10 |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, row in results["systems"].items():
        lines.append(
            f"| {name} | {row['right_first']:.2f} | {row['hit@1']:.2f} | {row['hit@5']:.2f}"
            f" | {row['hit@10']:.2f} |"
        )
    lines += ["", "Per question kind (hit@5; right document first in brackets):", ""]
    kinds = sorted({k for per in results["by_kind"].values() for k in per})
    lines += ["| system | " + " | ".join(kinds) + " |", "|---|" + "---:|" * len(kinds)]
    for name, per in results["by_kind"].items():
        cells = [f"{per[k]['hit@5']:.2f} ({per[k]['right_first']:.2f})" for k in kinds]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Project answer p50 {results['p50_ms']:.0f} ms, p95 {results['p95_ms']:.0f} ms, load "
        f"average {results['load']} when the questions were asked.",
        "",
        "| ingest, each a fresh process | seconds | what it printed |",
        "|---|---:|---|",
    ]
    for side, info in results["ingest"].items():
        printed = info.get("total") or f"{info.get('chunks', '?')} chunks"
        lines.append(f"| {side} | {info['seconds']:.1f} | {printed} |")
    right = cards["right"]
    lines += [
        "",
        "## Cards, offline rules",
        "",
        f"company {right.get('company', 0) / n:.2f}, kind {right.get('kind', 0) / n:.2f}, "
        f"fiscal period {right.get('period', 0) / n:.2f} ({n} filings, against `documents.json`).",
        "",
        "| file | organisation | ticker | kind | fiscal year | quarter | period end | wrong |",
        "|---|---|---|---|---:|---:|---|---|",
    ]
    for name, card, checks in cards["rows"]:
        wrong = ", ".join(k for k, ok in checks.items() if not ok)
        lines.append(
            f"| {name} | {card.organisation} | {card.ticker} | {card.kind} | "
            f"{card.fiscal_year or ''} | {card.quarter or ''} | {card.period_end} | {wrong} |"
        )
    library = results["library_cards"]
    lines += [
        "",
        "## Cards of the other shared PDFs",
        "",
        f"kind accepted for {library['right']} of {library['n']} (against the type each labelled"
        " set gives the document; `ACCEPTED_KINDS` in the script says which kinds count).",
        "",
        "| file | type | kind | title | organisation | fiscal year |",
        "|---|---|---|---|---|---:|",
    ]
    for name, kind_type, card, ok in library["rows"]:
        mark = "" if ok else " (not accepted)"
        title = card.title.replace("|", "/")[:80]
        lines.append(
            f"| {name} | {kind_type} | {card.kind or '-'}{mark} | {title} | "
            f"{card.organisation} | {card.fiscal_year or ''} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", type=Path, default=PROJECT / "storage" / "bench_shelf")
    parser.add_argument("--reuse", action="store_true", help="keep the stored ingests")
    args = parser.parse_args()
    if shared_data_missing([PDFS]):
        return 0
    pdfs = sorted(PDFS.glob("*.pdf"))
    persist = args.storage / "stock"
    timings = args.storage / "ingest_seconds.json"  # the ingests' own figures, kept for --reuse
    ingest: dict[str, Any] = json.loads(timings.read_text()) if timings.exists() else {}
    if not args.reuse or not (args.storage / "docstore.sqlite").exists():
        ingest["project"] = project_ingest(args.storage)
    if not args.reuse or not persist.exists():
        ingest["stock"] = stock_ingest("benchmarks.systems.stock_llamaindex", persist, pdfs)
    timings.write_text(json.dumps(ingest))
    engine = project_engine(args.storage)
    project, spent = project_places(engine)
    stock = {name: pages_of(as_places(r)) for name, r in library_retrievers(persist).items()}
    systems = {"project (default)": project, **stock}
    per_system = {name: scored(retrieve) for name, retrieve in systems.items()}
    by_kind: dict[str, dict[str, dict[str, float]]] = {}
    for name, rows in per_system.items():
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            groups[row["kind"]].append(row)
        by_kind[name] = {kind: summary(group) for kind, group in groups.items()}
    latencies = list(spent.values())
    summaries = {name: summary(rows) for name, rows in per_system.items()}
    results: dict[str, Any] = {
        "machine": describe_machine(),
        "questions": len(questions()),
        "systems": summaries,
        "by_kind": by_kind,
        "p50_ms": percentile(latencies, 0.5),
        "p95_ms": percentile(latencies, 0.95),
        "load": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
        "ingest": ingest,
        "cards": card_accuracy(engine),
        "library_cards": library_cards(),
    }
    for name, row in summaries.items():
        print(name, {k: round(v, 3) for k, v in row.items()}, flush=True)
    publish(render(results), OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
