"""`enrichment.md` from an enrichment record: each rule's precision and recall on gold names."""

from __future__ import annotations

from benchmarks.records import Record
from benchmarks.tables import record_header


def render(record: Record) -> str:
    what = (
        f"Pages {record.datasets['pages']} of the Paul Graham essay, {record.datasets['gold']} "
        "gold names labelled by reading them; three rules for a lone capitalized word."
    )
    lines = [
        *record_header("Named entities by rules, on hand-labelled essay pages", record, what),
        "| rule | precision | recall | wrong ones |",
        "|---|---|---|---|",
    ]
    for name, rule in record.metrics["rules"].items():
        lines.append(
            f"| {name} | {rule['precision']:.2f} | {rule['recall']:.2f} "
            f"| {', '.join(rule['wrong'])} |"
        )
    return "\n".join(lines) + "\n"
