"""`compound.md` from a compound record: compound recall beside the parts asked alone, per
budget and join, and per pair kind."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from benchmarks.records import Record
from benchmarks.tables import record_header

Pair = dict[str, str]  # {kind, first, second}: the two questions' ids
Asked = dict[str, Any]  # {found, found_in_first, sub_questions, sources, seconds}


def recall(found: Sequence[bool]) -> float:
    return statistics.fmean(found) if found else 0.0


def kinds_of(pairs: Sequence[Pair]) -> list[str]:
    return list(dict.fromkeys(p["kind"] for p in pairs))


def count(pairs: Sequence[Pair], kind: str) -> int:
    return sum(1 for p in pairs if p["kind"] == kind)


def parts_alone(pairs: Sequence[Pair], alone: dict[str, Asked]) -> list[bool]:
    return [alone[p[part]]["found"][0] for p in pairs for part in ("first", "second")]


def budget_rows(budget: str, data: dict[str, Any], pairs: Sequence[Pair]) -> list[str]:
    alone: dict[str, Asked] = data["alone"]
    lines = []
    for join_name, row in data["joins"].items():
        compound: list[Asked] = row["compound"]
        single: list[Asked] = row["single"]
        lines.append(
            f"| {budget} | {join_name} | {recall([f for a in compound for f in a['found']]):.3f} "
            f"| {recall([f for a in compound for f in a['found_in_first']]):.3f} "
            f"| {recall(parts_alone(pairs, alone)):.3f} "
            f"| {recall([f for a in single for f in a['found']]):.3f} "
            f"| {statistics.fmean(a['sub_questions'] for a in compound):.2f} "
            f"| {statistics.fmean(a['sources'] for a in compound):.1f} "
            f"| {max(a['sources'] for a in compound)} "
            f"| {1000 * statistics.median(a['seconds'] for a in compound):.0f} "
            f"| {1000 * statistics.median(a['seconds'] for a in alone.values()):.0f} |"
        )
    return lines


def by_kind(pairs: Sequence[Pair], budgets: dict[str, Any]) -> list[str]:
    lines = ["| N | pairs | compound recall | parts alone, N/2 each |", "|---:|---|---:|---:|"]
    for budget, data in budgets.items():
        compound: list[Asked] = data["joins"]["A Also, b"]["compound"]
        for kind in kinds_of(pairs):
            chosen = [i for i, p in enumerate(pairs) if p["kind"] == kind]
            found = [f for i in chosen for f in compound[i]["found"]]
            parts = parts_alone([pairs[i] for i in chosen], data["alone"])
            lines.append(f"| {budget} | {kind} | {recall(found):.3f} | {recall(parts):.3f} |")
    return lines


def render(record: Record) -> str:
    pairs: list[Pair] = record.metrics["pairs"]
    budgets: dict[str, Any] = record.metrics["budgets"]
    kinds = kinds_of(pairs)
    what = (
        f"{len(pairs)} pairs of labelled questions "
        f"({', '.join(f'{k}: {count(pairs, k)}' for k in kinds)}) from "
        f"{record.datasets['sets']}, asked of one collection holding every shared PDF "
        f"({record.datasets['documents']} documents). A part is found when a source of the "
        "answer lies on one of its evidence pages of its own document. *First N listed*: the "
        "same among the answer's first N sources as listed. *Parts alone*: each question asked "
        "by itself with N/2 sources (the same total budget). *One retrieval*: the whole "
        "compound as one question (`plan=False`), top N."
    )
    lines = [
        *record_header("Compound questions that keep their parts", record, what),
        "| N | join | compound recall | first N sources listed | parts alone, N/2 each | "
        "one retrieval, top N | "
        "sub-questions / answer | sources / answer | most sources | compound p50 ms | "
        "part alone p50 ms |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for budget, data in budgets.items():
        lines += budget_rows(budget, data, pairs)
    lines += ["", 'Compound recall by pair kind (join "A Also, b"):', ""]
    lines += by_kind(pairs, budgets)
    return "\n".join(lines) + "\n"
