"""`scale.md` from a scale record: per deployment and size, what one serving process costs,
what a change through another process costs, storage per chunk, and page hits inside the big
library beside the source library alone."""

from __future__ import annotations

from typing import Any

from benchmarks.records import Record
from benchmarks.tables import record_header

GROWTH = (
    "How the libraries grow: the source library (every shared PDF, ingested once) goes in "
    "unchanged, so the labelled questions' documents are inside; copies of its documents follow "
    "until the size is reached. Each copy renames the source's names (the words of its entities "
    "and cards' organisations, authors and tickers that it writes capitalized at least 10 times "
    "as often as in lower case) to pseudo-words of the same length drawn per copy, shifts every "
    "standalone year 1800-2099 by the copy's offset (+1, -1, +2, -2, ... up to 25 years), in the "
    "chunk text, metadata lists, table contexts, cards, section trees and document names, and "
    "adds Gaussian noise of 0.48 of its norm to every sentence, chunk and page vector, "
    "normalised again (cosine about 0.90 to the source). So names, years and vectors grow with "
    "the library and an approximate index never sees two equal vectors. Copies are written in "
    "batches through the project's stores; nothing is embedded again "
    "(`benchmarks/datasets/realistic_copies.py`, `scaled_library.py`)."
)


def _pair(values: list[float] | None, digits: int = 0) -> str:
    return f"{values[0]:.{digits}f} / {values[1]:.{digits}f}" if values else "-"


def _ran(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("status") == "ran"]


def serving_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| deployment | chunks | build s (chunks/s) | cold open s | RSS MB after open / after "
        "questions (peak) | retrieve p50 / p95 ms, 1 client | 4 clients (questions/s) "
        "| answer p50 / p95 ms, 1 client | 4 clients (answers/s) | load 1 min |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in _ran(rows):
        m, b = row["measure"], row["build"]
        rate = b["chunks"] / b["seconds"] if b.get("seconds") else 0
        lines.append(
            f"| {row['deployment']} | {m['chunks']:,} | {b['seconds']:.0f} ({rate:,.0f}) "
            f"| {m['cold_open_s']:.1f} | {m['after_open']['rss_mb']:.0f} / "
            f"{m['after_questions']['rss_mb']:.0f} ({m['after_questions']['peak_rss_mb']:.0f}) "
            f"| {_pair(m['retrieve_ms'])} | {_pair(m['retrieve_concurrent']['ms'])} "
            f"({m['retrieve_concurrent']['per_s']:.1f}) | {_pair(m['answer_ms'])} "
            f"| {_pair(m['answer_concurrent']['ms'])} ({m['answer_concurrent']['per_s']:.1f}) "
            f"| {_pair(m.get('load'), 1)} |"
        )
    return lines


def changes_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| deployment | chunks | written by | add s | first question after add s (cites it) "
        "| delete s | first question after delete s (cites it) |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for row in _ran(rows):
        c = row["measure"].get("changes")
        if not c:
            continue
        lines.append(
            f"| {row['deployment']} | {row['measure']['chunks']:,} | {c['writer']} "
            f"| {c['add_s']:.1f} | {c['first_question_after_add_s']:.2f} "
            f"({'yes' if c['cited_after_add'] else 'no'}) | {c['delete_s']:.1f} "
            f"| {c['first_question_after_delete_s']:.2f} "
            f"({'yes' if c['cited_after_delete'] else 'no'}) |"
        )
    return lines


def storage_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| deployment | chunks | docstore KB/chunk | Milvus KB/chunk | keyword files KB/chunk "
        "| total GB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in _ran(rows):
        stored, chunks = dict(row["storage_bytes"]), row["build"]["chunks"]
        # The server's own files, as its build recorded them (a library built before builds
        # kept them has no figure: its server folder held the library when it was measured).
        empty = row["build"].get("server_empty_bytes")
        if row["deployment"] == "server" and empty is None:
            stored.pop("milvus")
        else:
            stored["milvus"] -= empty or 0
        per = {k: v / chunks / 1e3 for k, v in stored.items()}
        milvus = f"{per['milvus']:.1f}" if "milvus" in per else "not measured"
        lines.append(
            f"| {row['deployment']} | {chunks:,} | {per['docstore']:.1f} | {milvus} "
            f"| {per['keywords']:.1f} | {sum(stored.values()) / 1e9:.2f} |"
        )
    return lines


def hits_table(rows: list[dict[str, Any]], own: dict[str, Any]) -> list[str]:
    ran = [r for r in _ran(rows) if "hits" in r["measure"]]
    heads = ["own library"] + [f"{r['deployment']} {r['measure']['chunks']:,}" for r in ran]
    lines = [
        "| set | " + " | ".join(heads) + " |",
        "|---|" + "---:|" * len(heads),
    ]
    for name, rates in own.get("hits", {}).items():
        cells = [_hits(rates)] + [_hits(r["measure"]["hits"].get(name)) for r in ran]
        lines.append(f"| {name} ({rates['n']}) | " + " | ".join(cells) + " |")
    return lines


def _hits(rates: dict[str, float] | None) -> str:
    return f"{rates['hit@5']:.3f}" if rates else "-"


def render(record: Record) -> str:
    rows: list[dict[str, Any]] = record.metrics["rows"]
    own: dict[str, Any] = record.metrics.get("own_library", {})
    systems = "; ".join(f"`{k}`: {v}" for k, v in record.systems.items())
    what = (
        f"Deployments: {systems}. Every size of every deployment is served by a fresh process "
        "(cold open and resident memory are what a new `serve` process pays): "
        f"{record.datasets['questions']}; then the same questions from 4 threads at once; then "
        f"{record.datasets['added']} (not in the library) added and deleted, each followed by "
        "one question about it."
    )
    lines = [*record_header("A library at scale", record, what), GROWTH, ""]
    lines += ["## One serving process", "", *serving_table(rows), ""]
    if own.get("retrieve_ms"):
        lines += [
            f"The source library alone ({own['chunks']:,} chunks, Milvus Lite): cold open "
            f"{own['cold_open_s']:.1f} s, RSS {own['after_questions']['rss_mb']:.0f} MB, "
            f"retrieve {_pair(own['retrieve_ms'])} ms, answer {_pair(own['answer_ms'])} ms.",
            "",
        ]
    lines += ["## A change through another process", "", *changes_table(rows), ""]
    lines += [
        "Milvus Lite locks its data folder to one process (`DataDirLockedError`), so on the "
        "embedded deployment the serving process itself adds and deletes; on the server a "
        "separate OS process writes through the same docstore file, keyword files and server.",
        "",
    ]
    lines += ["## Storage per chunk", "", *storage_table(rows), ""]
    lines += [
        "On the server, Milvus is its data folder (segments, write-ahead log, etcd) after a "
        'flush, less what it held before the library was written; "not measured" where the '
        "library was built before its build recorded that (its total leaves Milvus out).",
        "",
    ]
    lines += ["## Page hit@5 of the labelled questions, inside the big library", ""]
    lines += [*hits_table(rows, own), ""]
    lines += ["## What ran", ""]
    for row in rows:
        size = f"{row['deployment']} {row['size']:,}"
        if row.get("measured"):
            size += f" (kept from the run of {row['measured']})"
        if row["status"] == "ran":
            lines.append(f"- {size}: ran ({row['build']['copies']} copies).")
        elif row["status"] == "refused":
            lines.append(f"- {size}: refused. {row['why']}")
        else:
            lines.append(f"- {size}: failed: {row.get('why', '')}")
    lines.append(
        f"- Load average (1, 5, 15 min) at the end: {record.timings.get('load')}. A load above "
        "the core count means other processes shared the CPUs: latencies, cold opens and build "
        "times are then upper bounds of what an idle machine gives."
    )
    return "\n".join(lines) + "\n"
