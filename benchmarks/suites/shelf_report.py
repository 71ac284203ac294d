"""`shelf.md` from a shelf record: answers per system and question kind, the cards' accuracy."""

from __future__ import annotations

from typing import Any

from benchmarks.records import Record
from benchmarks.tables import record_header

TOP_K = 10


def render(record: Record) -> str:
    results: dict[str, Any] = {**record.metrics, **record.timings}
    cards = results["cards"]
    n = cards["n"]
    what = (
        f"`financebench_dev`: {n} filings of 10 companies in ONE collection (one `main.py ingest`"
        f" call), its {results['questions']} questions asked with `--top-k {TOP_K}` (`main.py "
        "query`'s path: `Engine.query`), beside stock LlamaIndex dense, BM25 and RRF over the "
        "same files. Right document first: the first source is the question's filing."
    )
    lines = [
        *record_header("A shelf of filings in one collection", record, what),
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
            f"| {name} | {card['organisation']} | {card['ticker']} | {card['kind']} | "
            f"{card.get('fiscal_year') or ''} | {card.get('quarter') or ''} | "
            f"{card['period_end']} | {wrong} |"
        )
    library = results["library_cards"]
    lines += [
        "",
        "## Cards of the other shared PDFs",
        "",
        f"kind accepted for {library['right']} of {library['n']} (against the type each labelled"
        " set gives the document; `ACCEPTED_KINDS` in `benchmarks/suites/shelf.py` says which"
        " kinds count).",
        "",
        "| file | type | kind | title | organisation | fiscal year |",
        "|---|---|---|---|---|---:|",
    ]
    for name, kind_type, card, ok in library["rows"]:
        mark = "" if ok else " (not accepted)"
        title = card["title"].replace("|", "/")[:80]
        lines.append(
            f"| {name} | {kind_type} | {card['kind'] or '-'}{mark} | {title} | "
            f"{card['organisation']} | {card.get('fiscal_year') or ''} |"
        )
    return "\n".join(lines) + "\n"
