"""Compound questions asked of one collection holding every shared PDF, against their parts.

Two labelled questions (the MMLongBench-Doc dev split's and the two 10-Ks') are joined into one
question three ways ("A Also, b", "A? B?", "A, and b") and asked with `--top-k N`; the same two
questions are also asked alone with N/2 sources each (the same total budget), each as it reads
in the compound (ending in "?"). A part is found
when a source of the answer lies on one of its evidence pages of its own document.

Reported per budget and join: compound recall (parts found by the compound answer) beside the
parts' recall (found when asked alone), one retrieval over the whole compound (`plan=False`,
top N), the mean sub-questions and sources per answer, and the most sources any answer carried.
Writes benchmarks/results/compound.md.

    python -m benchmarks.bench_compound --storage DIR [--budgets 10 20] [--label NAME]

DIR holds the collection `library` with every shared PDF (`main.py ingest ../shared/eval/...
--collection library`, or a copy of one); it is only read.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import config
from benchmarks.datasets.library import LIBRARY_SETS, library_questions
from benchmarks.tables import RESULTS, publish, shared_data_missing
from citerag.answer.contract import AnswerResult
from citerag.eval.machine import describe_machine

PROJECT = Path(__file__).resolve().parents[1]

COLLECTION = "library"
OUT = RESULTS / "compound.md"
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


def recall(found: Sequence[bool]) -> float:
    return statistics.fmean(found) if found else 0.0


def summary_line(pairs: Sequence[Pair], alone: dict[str, Asked], compound: list[Asked]) -> str:
    parts = [alone[q["id"]].found[0] for p in pairs for q in (p.first, p.second)]
    found = [f for asked in compound for f in asked.found]
    return f"compound {recall(found):.3f}, parts {recall(parts):.3f}"


def kinds_of(pairs: Sequence[Pair]) -> list[str]:
    return list(dict.fromkeys(p.kind for p in pairs))


def render(
    pairs: Sequence[Pair], results: dict[int, dict[str, Any]], label: str, documents: int
) -> str:
    kinds = kinds_of(pairs)
    lines = [
        "# Compound questions that keep their parts",
        "",
        f"{describe_machine()}. Written by `python -m benchmarks.bench_compound` ({label}).",
        "",
        f"{len(pairs)} pairs of labelled questions "
        f"({', '.join(f'{k}: {count(pairs, k)}' for k in kinds)}) from "
        f"{', '.join(f'`{p.parent.name}/{p.name}`' for p in LIBRARY_SETS.values())}, asked of "
        f"one collection holding every shared PDF ({documents} documents). A part is found when "
        "a source of the answer lies on one of its evidence pages of its own document. "
        "*First N listed*: the same among the answer's first N sources as listed. *Parts alone*: "
        "each question asked by itself with N/2 sources (the same total budget). "
        "*One retrieval*: the whole compound as one question (`plan=False`), top N.",
        "",
        "| N | join | compound recall | first N sources listed | parts alone, N/2 each | "
        "one retrieval, top N | "
        "sub-questions / answer | sources / answer | most sources | compound p50 ms | "
        "part alone p50 ms |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for budget, data in results.items():
        alone: dict[str, Asked] = data["alone"]
        parts = [alone[q["id"]].found[0] for p in pairs for q in (p.first, p.second)]
        for join_name, row in data["joins"].items():
            compound: list[Asked] = row["compound"]
            single: list[Asked] = row["single"]
            lines.append(
                f"| {budget} | {join_name} | {recall([f for a in compound for f in a.found]):.3f} "
                f"| {recall([f for a in compound for f in a.found_in_first]):.3f} "
                f"| {recall(parts):.3f} | {recall([f for a in single for f in a.found]):.3f} "
                f"| {statistics.fmean(a.sub_questions for a in compound):.2f} "
                f"| {statistics.fmean(a.sources for a in compound):.1f} "
                f"| {max(a.sources for a in compound)} "
                f"| {1000 * statistics.median(a.seconds for a in compound):.0f} "
                f"| {1000 * statistics.median(a.seconds for a in alone.values()):.0f} |"
            )
    lines += ["", 'Compound recall by pair kind (join "A Also, b"):', ""]
    lines += by_kind(pairs, results)
    return "\n".join(lines) + "\n"


def count(pairs: Sequence[Pair], kind: str) -> int:
    return sum(1 for p in pairs if p.kind == kind)


def by_kind(pairs: Sequence[Pair], results: dict[int, dict[str, Any]]) -> list[str]:
    lines = ["| N | pairs | compound recall | parts alone, N/2 each |", "|---:|---|---:|---:|"]
    for budget, data in results.items():
        compound: list[Asked] = data["joins"]["A Also, b"]["compound"]
        for kind in kinds_of(pairs):
            chosen = [i for i, p in enumerate(pairs) if p.kind == kind]
            found = [f for i in chosen for f in compound[i].found]
            parts = [
                data["alone"][q["id"]].found[0]
                for i in chosen
                for q in (pairs[i].first, pairs[i].second)
            ]
            lines.append(f"| {budget} | {kind} | {recall(found):.3f} | {recall(parts):.3f} |")
    return lines


def before_section(earlier: str) -> str:
    """The first table of an earlier report (other code, same pairs), under its own heading."""
    label = earlier.split("bench_compound.py` (", 1)[-1].split(")", 1)[0]
    table = [line for line in earlier.split("\n\n") if line.startswith("| N | join")][0]
    return f"\n## The same run on {label}\n\n{table}\n"


def open_engine(storage: Path) -> Any:
    from benchmarks.systems.profiles import with_finance_words
    from citerag.engine import Engine
    from citerag.settings import settings_from_config

    environ = dict(os.environ, RAG_STORAGE_DIR=str(storage))
    return Engine(with_finance_words(settings_from_config(config, environ=environ)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--storage", type=Path, required=True, help="holds collection library")
    parser.add_argument("--budgets", type=int, nargs="+", default=[10, 20])
    parser.add_argument("--label", default="this branch", help="what code was measured")
    parser.add_argument(
        "--before", type=Path, help="a compound.md written by other code, shown below this one's"
    )
    args = parser.parse_args()
    if shared_data_missing(list(LIBRARY_SETS.values())):
        return 0
    pairs = build_pairs(library_questions())
    engine = open_engine(args.storage)
    try:
        engine.query("What was the total revenue?", COLLECTION)  # warm: models, state
        results = {budget: run_budget(engine, pairs, budget) for budget in args.budgets}
        documents = len(engine.docstore.list_documents(COLLECTION))
    finally:
        engine.close()
    report = render(pairs, results, args.label, documents)
    if args.before:
        report += before_section(args.before.read_text(encoding="utf-8"))
    publish(report, OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
