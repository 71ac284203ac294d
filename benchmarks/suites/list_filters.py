"""How a filter on a list field (a chunk's years) should reach Milvus, and what citerag does.

60,000 random 384-dim unit vectors written through citerag's own `MilvusIndex` (its schema: the
years as an ARRAY<VARCHAR> column), each row with 0-3 years of 1970-2019, and 10% of rows also
with 2020. Two filters: a rare year (1996, about 2% of rows) and a common one (2020, about 6,000
rows: more than the 5,000 ids the retriever pushed as a list before). For top-10 search, compared:
- the filter in the search (`array_contains`),
- the matching ids (found in memory, as the collection state does) as `id in [...]`,
- an unfiltered top 35 whose hits are then filtered (what a retriever does without pushdown),
- citerag before this change (ids up to 5,000, else the unfiltered top 35 filtered) and now
  (`retrieve.list_scope`: ids up to the index's `id_list_limit`, else the filter in the search).
Recall is against exact search over the matching rows. On Milvus Lite (FLAT, the embedded
default) and on the Milvus 2.3.5 standalone server (AUTOINDEX = HNSW) when it can be started.

Scalar indexes: neither deployment can index an ARRAY field (Lite: "field type ARRAY does not
support scalar index"; 2.3.5: "create index on Array field is not supported"), so array filters
are a scan. The scalar columns the retriever pushes (doc_id, page) can be indexed: measured
before and after (Lite: INVERTED; 2.3.5: Trie on VARCHAR, STL_SORT on INT64).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from benchmarks.records import Record
from benchmarks.suites import SuiteOptions
from citerag.retrieve.list_scope import MAX_PUSHED_IDS, list_scope
from citerag.store.base import VectorQuery, VectorRow
from citerag.store.milvus_index import MilvusIndex, milvus_collection_name

ROWS, DIM, QUERIES, TOP_K, UNFILTERED = 60_000, 384, 30, 10, 35
COMMON_SHARE = 0.10
INDEX_WAIT_S = 300
YEARS = [str(y) for y in range(1970, 2020)]
RARE, COMMON = "1996", "2020"
ROWS_PER_DOC = 200
COLLECTION = "list_filters"
Search = Callable[[np.ndarray], list[str]]


def run(options: SuiteOptions) -> Record:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((ROWS, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    years = [list(rng.choice(YEARS, size=rng.integers(0, 4), replace=False)) for _ in range(ROWS)]
    for held in years:
        if rng.random() < COMMON_SHARE:
            held.append(COMMON)
    queries = vectors[rng.choice(ROWS, QUERIES)] + 0.1 * rng.standard_normal((QUERIES, DIM))
    methods: dict[str, dict[str, Any]] = {}
    systems: dict[str, str] = {}
    matching = {year: [i for i, ys in enumerate(years) if year in ys] for year in (RARE, COMMON)}
    with tempfile.TemporaryDirectory() as folder:
        for deployment, uri, stop in deployments(Path(folder)):
            try:
                index = MilvusIndex(uri)
                caps = index.capabilities
                systems[deployment] = f"{caps.version}, {caps.index_type}"
                write(index, vectors, years)
                for year, rows in matching.items():
                    for name, ms, recall in measure(index, vectors, queries, rows, year):
                        label = f"{deployment} | {year} ({len(rows):,} rows) | {name}"
                        methods[label] = {"p50_ms": ms, "recall": recall}
                        print(label, f"{ms:.1f} ms", f"recall {recall:.3f}", flush=True)
                for name, ms in scalar_indexes(index, queries):
                    methods[f"{deployment} | scalar | {name}"] = {"p50_ms": ms, "recall": 1.0}
                    print(deployment, name, f"{ms:.1f} ms", flush=True)
                index.drop_collection(COLLECTION)
                index.close()
            finally:
                stop()
    return Record(
        suite="list_filters",
        command=options.command,
        variant=options.variant,
        systems=systems,
        datasets={
            "rows": str(ROWS),
            "dims": str(DIM),
            "matching": f"{RARE}: {len(matching[RARE])}, {COMMON}: {len(matching[COMMON])}",
            "queries": str(QUERIES),
        },
        metrics={"methods": methods, "max_pushed_ids": MAX_PUSHED_IDS},
    )


def deployments(folder: Path) -> list[tuple[str, str, Callable[[], None]]]:
    """Milvus Lite, and the Milvus standalone server when this machine can start one."""
    found: list[tuple[str, str, Callable[[], None]]] = [
        ("Milvus Lite", str(folder / "lite.db"), lambda: None)
    ]
    try:
        from devservers import start_milvus

        server = start_milvus(folder / "server")
    except Exception as error:  # no binary here: the Lite rows alone
        print(f"no Milvus server ({error}); measuring Milvus Lite only")
        return found
    found.append(("Milvus 2.3.5 server", server.uri, server.stop))
    return found


def write(index: MilvusIndex, vectors: np.ndarray, years: list[list[str]]) -> None:
    rows = [
        VectorRow(
            chunk_id=f"c{i}",
            vector=vectors[i],
            doc_id=f"d{i // ROWS_PER_DOC}",
            doc_name=f"d{i // ROWS_PER_DOC}.pdf",
            page=1 + (i % ROWS_PER_DOC) // 10,
            node_type="text",
            section="",
            label="",
            preview="",
            lists={"years": years[i]},
        )
        for i in range(ROWS)
    ]
    index.ensure_collection(COLLECTION, DIM)
    for start in range(0, ROWS, 5000):
        index.insert(COLLECTION, rows[start : start + 5000])
    if index.is_server:  # searched once its index is built (segments still growing use an
        # interim index whose recall is lower: the first minute after an ingest)
        name = milvus_collection_name(COLLECTION)
        index.client.flush(name)
        deadline = time.monotonic() + INDEX_WAIT_S
        while time.monotonic() < deadline:
            built = index.client.describe_index(name, "vector")
            if int(built.get("pending_index_rows", 0)) == 0 and built.get("indexed_rows"):
                break
            time.sleep(2)


def measure(
    index: MilvusIndex, vectors: np.ndarray, queries: np.ndarray, matching: list[int], year: str
) -> list[tuple[str, float, float]]:
    truth = [
        {f"c{matching[j]}" for j in np.argsort(-(vectors[matching] @ q))[:TOP_K]} for q in queries
    ]
    ids = sorted(f"c{i}" for i in matching)
    allowed = set(ids)
    year_filter = MetadataFilters(
        filters=[MetadataFilter(key="years", value=[year], operator=FilterOperator.ANY)]
    )

    def search(limit: int = TOP_K, **given: Any) -> Search:
        def run(query: np.ndarray) -> list[str]:
            hits = index.search(COLLECTION, VectorQuery(query.reshape(1, -1), limit, **given))
            return [chunk_id for chunk_id, _ in hits[0] if chunk_id in allowed][:TOP_K]

        return run

    def now(query: np.ndarray) -> list[str]:
        scope = list_scope(index, COLLECTION, allowed, year_filter)
        return search(filters=scope.filters, node_ids=scope.ids)(query)

    by_ids, after = search(node_ids=ids), search(UNFILTERED)
    methods: dict[str, Search] = {
        "array_contains in the search": search(filters=year_filter),
        "id in [matching ids]": by_ids,
        f"top {UNFILTERED} unfiltered, then filtered": after,
        "citerag before": by_ids if len(ids) <= MAX_PUSHED_IDS else after,
        "citerag now": now,
    }
    if index.is_server:  # citerag searches with Strong consistency: ~200 ms a search on 2.3.5
        name = milvus_collection_name(COLLECTION)
        listed = ", ".join(f'"{i}"' for i in ids)

        def bounded(expression: str) -> Search:
            def run(query: np.ndarray) -> list[str]:
                hits = index.client.search(
                    name,
                    data=[query.tolist()],
                    limit=TOP_K,
                    filter=expression,
                    consistency_level="Bounded",
                )[0]
                return [str(hit["id"]) for hit in hits]

            return run

        methods["array_contains, Bounded consistency"] = bounded(f'array_contains(years, "{year}")')
        methods["id in [matching ids], Bounded consistency"] = bounded(f"id in [{listed}]")
    return [(name, *timed(method, queries, truth)) for name, method in methods.items()]


def timed(method: Search, queries: np.ndarray, truth: list[set[str]]) -> tuple[float, float]:
    method(queries[0])  # warm
    times, recalls = [], []
    for query, expected in zip(queries, truth, strict=True):
        started = time.perf_counter()
        found = set(method(query))
        times.append(time.perf_counter() - started)
        recalls.append(len(found & expected) / len(expected))
    return 1000 * statistics.median(times), statistics.fmean(recalls)


def scalar_indexes(index: MilvusIndex, queries: np.ndarray) -> list[tuple[str, float]]:
    """Top-10 search p50 with a filter on documents and on pages, before and after a scalar
    index on `doc_id` and `page` (where the deployment takes one)."""
    client, name = index.client, milvus_collection_name(COLLECTION)
    documents = ", ".join(f'"d{i}"' for i in range(5))
    expressions = {
        "doc_id in [5 documents]": f"doc_id in [{documents}]",
        "page <= 3": "page <= 3",
    }

    def p50(expression: str) -> float:
        times = []
        for query in queries:
            started = time.perf_counter()
            client.search(name, data=[query.tolist()], limit=TOP_K, filter=expression)
            times.append(time.perf_counter() - started)
        return 1000 * statistics.median(times)

    rows = [(f"{what}, no scalar index", p50(e)) for what, e in expressions.items()]
    kinds = {"doc_id": "INVERTED", "page": "INVERTED"}
    if index.is_server:
        kinds = {"doc_id": "Trie", "page": "STL_SORT"}
    client.release_collection(name)
    params = client.prepare_index_params()
    for field, kind in kinds.items():
        params.add_index(field_name=field, index_type=kind, index_name=f"{field}_scalar")
    try:
        client.create_index(name, params)
    except Exception as error:
        print(f"scalar index refused: {error}")
        client.load_collection(name)
        return rows
    client.load_collection(name)
    label = " / ".join(f"{field} {kind}" for field, kind in kinds.items())
    rows += [(f"{what}, {label}", p50(e)) for what, e in expressions.items()]
    return rows
