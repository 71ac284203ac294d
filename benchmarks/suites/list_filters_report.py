"""`list_filters.md` from a list_filters record: each way to filter on a list field."""

from __future__ import annotations

from benchmarks.records import Record
from benchmarks.tables import record_header

TOP_K = 10


def render(record: Record) -> str:
    data = record.datasets
    what = (
        f"{int(data['rows']):,} rows × {data['dims']} dims, {data['matching']} rows hold the "
        f"year asked; top {TOP_K}, {data['queries']} queries."
    )
    lines = [
        *record_header("A filter on a list field in Milvus Lite", record, what),
        "| method | p50 ms | recall vs exact |",
        "|---|---|---|",
        *[
            f"| {name} | {row['p50_ms']:.1f} | {row['recall']:.3f} |"
            for name, row in record.metrics["methods"].items()
        ],
        "",
    ]
    return "\n".join(lines)
