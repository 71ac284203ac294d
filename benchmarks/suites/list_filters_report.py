"""`list_filters.md` from a list_filters record: each way to filter on a list field, per Milvus
deployment, and what scalar indexes change."""

from __future__ import annotations

from benchmarks.records import Record
from benchmarks.tables import record_header

TOP_K = 10


def render(record: Record) -> str:
    data = record.datasets
    what = (
        f"{int(data['rows']):,} rows × {data['dims']} dims; rows holding the year asked: "
        f"{data['matching']}; top {TOP_K}, {data['queries']} queries. Deployments: "
        + "; ".join(f"{name} ({kind})" for name, kind in record.systems.items())
        + "."
    )
    methods = record.metrics["methods"]
    searches = {k: v for k, v in methods.items() if " | scalar | " not in k}
    scalars = {k: v for k, v in methods.items() if " | scalar | " in k}
    lines = [
        *record_header("A filter on a list field in Milvus", record, what),
        "| deployment | year asked | method | p50 ms | recall vs exact |",
        "|---|---|---|---|---|",
        *[
            f"| {name.replace(' | ', ' | ')} | {row['p50_ms']:.1f} | {row['recall']:.3f} |"
            for name, row in searches.items()
        ],
        "",
    ]
    if scalars:
        lines += [
            "Top-10 search with a filter on the scalar columns the retriever pushes:",
            "",
            "| deployment | filter, index | p50 ms |",
            "|---|---|---|",
            *[
                f"| {name.split(' | ')[0]} | {name.split(' | ')[2]} | {row['p50_ms']:.1f} |"
                for name, row in scalars.items()
            ],
            "",
        ]
    return "\n".join(lines)
