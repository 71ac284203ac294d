"""Compound questions asked of one collection holding every shared PDF, against their parts.

Two labelled questions (the MMLongBench-Doc dev split's and the two 10-Ks') are joined into one
question three ways ("A Also, b", "A? B?", "A, and b") and asked with `--top-k N`; the same two
questions are also asked alone with N/2 sources each (the same total budget), each as it reads
in the compound (ending in "?"). A part is found
when a source of the answer lies on one of its evidence pages of its own document.

Reported per budget and join: compound recall (parts found by the compound answer) beside the
parts' recall (found when asked alone), one retrieval over the whole compound (`plan=False`,
top N), the mean sub-questions and sources per answer, and the most sources any answer carried.
It reads the collection `library` that the library suite ingested (`python -m benchmarks run
--suite library` first; `--storage` names that suite's storage folder); budgets: `--budgets`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from statistics import fmean
from typing import Any

from benchmarks.datasets.library import LIBRARY_SETS, library_questions
from benchmarks.records import Record
from benchmarks.suites import SuiteOptions
from benchmarks.systems.project import project_engine
from citerag.answer.contract import AnswerResult

COLLECTION = "library"
Question = dict[str, Any]  # {id, document, question, evidence_pages, ...}


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _asked(text: str) -> str:
    return text.rstrip(" .") if text.rstrip().endswith("?") else text.rstrip(" .") + "?"


JOINS: dict[str, Callable[[str, str], str]] = {
    "A Also, b": lambda a, b: f"{_asked(a)} Also, {_lower_first(b.strip())}",
    "A? B?": lambda a, b: f"{_asked(a)} {_asked(b)}",
    "A, and b": lambda a, b: f"{_asked(a).rstrip('?')}, and {_lower_first(_asked(b))}",
}


@dataclass(frozen=True)
class Pair:
    kind: str  # which sets the two questions come from
    first: Question
    second: Question


@dataclass
class Asked:
    found: list[bool]  # per part
    found_in_first: list[bool]  # per part, among the first N sources as listed
    sub_questions: int
    sources: int
    seconds: float


def build_pairs(sets: dict[str, list[Question]]) -> list[Pair]:
    """Within each set, question i with question i + n/2 (mostly other documents); across the
    dev split and the 10-Ks, question i of each."""
    dev, tenk = sets["MMLongBench-Doc dev"], sets["10-K (finance_qa)"]
    pairs: list[Pair] = []
    for kind, questions in (("dev + dev", dev), ("10-K + 10-K", tenk)):
        half = len(questions) // 2
        pairs += [Pair(kind, questions[i], questions[i + half]) for i in range(half)]
    pairs += [Pair("dev + 10-K", a, b) for a, b in zip(dev, tenk, strict=False)]
    return pairs


def found_in(result: AnswerResult, question: Question, first: int | None = None) -> bool:
    pages = set(question["evidence_pages"])
    return any(
        s.document_name == question["document"] and s.page_number in pages
        for s in result.sources[:first]
    )


def ask(engine: Any, text: str, top_k: int, parts: Sequence[Question], plan: bool) -> Asked:
    started = time.perf_counter()
    result = engine.query(text, COLLECTION, top_k=top_k, plan=plan)
    seconds = time.perf_counter() - started
    return Asked(
        [found_in(result, q) for q in parts],
        [found_in(result, q, top_k) for q in parts],
        max(1, len(result.metadata.sub_questions)),
        len(result.sources),
        seconds,
    )


def run_budget(engine: Any, pairs: Sequence[Pair], budget: int) -> dict[str, Any]:
    alone: dict[str, Asked] = {}
    for pair in pairs:
        for part in (pair.first, pair.second):
            if part["id"] not in alone:
                alone[part["id"]] = ask(engine, _asked(part["question"]), budget // 2, [part], True)
    rows: dict[str, Any] = {}
    for join_name, join in JOINS.items():
        compound, single = [], []
        for pair in pairs:
            text = join(pair.first["question"], pair.second["question"])
            parts = [pair.first, pair.second]
            compound.append(ask(engine, text, budget, parts, True))
            single.append(ask(engine, text, budget, parts, False))
        rows[join_name] = {"compound": compound, "single": single}
        print(f"N={budget} {join_name}: {summary_line(pairs, alone, compound)}", flush=True)
    return {"alone": alone, "joins": rows}


def summary_line(pairs: Sequence[Pair], alone: dict[str, Asked], compound: list[Asked]) -> str:
    parts = [alone[q["id"]].found[0] for p in pairs for q in (p.first, p.second)]
    found = [f for asked in compound for f in asked.found]
    return f"compound {fmean(found):.3f}, parts {fmean(parts):.3f}"


def stored(results: dict[str, Any]) -> dict[str, Any]:
    """One budget's answers as the record keeps them."""
    return {
        "alone": {qid: asdict(asked) for qid, asked in results["alone"].items()},
        "joins": {
            join: {kind: [asdict(a) for a in asked] for kind, asked in rows.items()}
            for join, rows in results["joins"].items()
        },
    }


def run(options: SuiteOptions) -> Record:
    pairs = build_pairs(library_questions())
    engine = project_engine(options.storage_for("compound") / "project")
    try:
        engine.query("What was the total revenue?", COLLECTION)  # warm: models, state
        results = {
            str(budget): stored(run_budget(engine, pairs, budget)) for budget in options.budgets
        }
        documents = len(engine.docstore.list_documents(COLLECTION))
    finally:
        engine.close()
    sets = ", ".join(f"`{p.parent.name}/{p.name}`" for p in LIBRARY_SETS.values())
    return Record(
        suite="compound",
        command=options.command,
        variant=options.variant,
        settings=dict(options.settings),
        systems={"project": "Engine.query over the library collection"},
        datasets={"sets": sets, "documents": str(documents)},
        metrics={
            "pairs": [
                {"kind": p.kind, "first": p.first["id"], "second": p.second["id"]} for p in pairs
            ],
            "budgets": results,
        },
    )
