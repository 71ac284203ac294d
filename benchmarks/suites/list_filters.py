"""How a filter on a list field (a chunk's years or entities) should reach Milvus Lite.

20,000 random 384-dim unit vectors, each row with 0-3 "years"; the filter keeps the rows holding
one year (about 2%). Compared, for top-10 search: an ARRAY field with `array_contains`, the
matching ids (found in memory, as the collection state does) pushed as `id in [...]`, and an
unfiltered search of 35 whose hits are then filtered (what a retriever does without pushdown).
Recall is against exact search over the matching rows.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from pymilvus import DataType, MilvusClient

from benchmarks.records import Record
from benchmarks.suites import SuiteOptions

ROWS, DIM, QUERIES, TOP_K = 20_000, 384, 30, 10
YEARS = [str(y) for y in range(1970, 2020)]


def run(options: SuiteOptions) -> Record:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((ROWS, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    years = [list(rng.choice(YEARS, size=rng.integers(0, 4), replace=False)) for _ in range(ROWS)]
    queries = vectors[rng.choice(ROWS, QUERIES)] + 0.1 * rng.standard_normal((QUERIES, DIM))
    wanted = "1996"
    matching = [i for i, ys in enumerate(years) if wanted in ys]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for index_type in ("FLAT", "HNSW"):
            client = milvus_collection(
                Path(folder) / f"{index_type}.db", vectors, years, index_type
            )
            rows += measure(client, index_type, vectors, queries, matching, wanted)
            client.close()
    return Record(
        suite="list_filters",
        command=options.command,
        variant=options.variant,
        systems={name: "Milvus Lite" for name, _, _ in rows},
        datasets={
            "rows": str(ROWS),
            "dims": str(DIM),
            "matching": str(len(matching)),
            "queries": str(QUERIES),
        },
        metrics={"methods": {name: {"p50_ms": ms, "recall": r} for name, ms, r in rows}},
    )


def milvus_collection(
    path: Path, vectors: np.ndarray, years: list[list[str]], index: str
) -> MilvusClient:
    client = MilvusClient(str(path))
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=32)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DIM)
    schema.add_field(
        "years", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=8, max_length=8
    )
    params = client.prepare_index_params()
    extra = {"M": 16, "efConstruction": 200} if index == "HNSW" else {}
    params.add_index("vector", index_type=index, metric_type="IP", params=extra)
    client.create_collection("c", schema=schema, index_params=params)
    data = [{"id": f"c{i}", "vector": vectors[i].tolist(), "years": years[i]} for i in range(ROWS)]
    for start in range(0, ROWS, 5000):
        client.insert("c", data[start : start + 5000])
    client.flush("c")
    client.load_collection("c")
    return client


def measure(
    client: MilvusClient,
    index: str,
    vectors: np.ndarray,
    queries: np.ndarray,
    matching: list[int],
    wanted: str,
) -> list[tuple[str, float, float]]:
    truth = [
        {f"c{matching[j]}" for j in np.argsort(-(vectors[matching] @ q))[:TOP_K]} for q in queries
    ]
    ids = ", ".join(f'"c{i}"' for i in matching)
    allowed = {f"c{i}" for i in matching}

    def search(expression: str, limit: int = TOP_K) -> Callable[[np.ndarray], set[str]]:
        def run(query: np.ndarray) -> set[str]:
            hits = client.search("c", data=[query.tolist()], limit=limit, filter=expression)[0]
            return {str(h["id"]) for h in hits}

        return run

    def post_filtered(query: np.ndarray) -> set[str]:
        return {h for h in search("", 35)(query) if h in allowed}

    methods = {
        "array_contains(years, ...)": search(f'array_contains(years, "{wanted}")'),
        "id in [matching ids]": search(f"id in [{ids}]"),
        "top 35 unfiltered, then filtered": post_filtered,
    }
    rows = []
    for name, method in methods.items():
        method(queries[0])  # warm
        times, recalls = [], []
        for query, expected in zip(queries, truth, strict=True):
            started = time.perf_counter()
            found = method(query)
            times.append(time.perf_counter() - started)
            recalls.append(len(found & expected) / len(expected))
        rows.append(
            (f"{index}: {name}", 1000 * statistics.median(times), statistics.fmean(recalls))
        )
        print(rows[-1])
    return rows
