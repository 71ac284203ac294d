"""The vector index's part of a question at 100k and 1M chunks on the Milvus standalone server:
search latency (one client and four), recall against exact search (unfiltered, with a year
filter, within a few documents), the server's memory and its storage per chunk.

The full scale suite (`benchmarks.suites.scale`) writes every store and takes about 30 minutes
per 100k chunks here; this benchmark writes only what Milvus holds, so that the size where the
server's approximate index matters most can be measured, per index type (`--index-type`, the
`MILVUS_INDEX_TYPE` values). The copies are made once per size and written to each index
type's collection; "write" is the seconds of those inserts (runs before 2026-12-08 02:45 UTC
also counted making the copies). Its rows are what ingestion
writes (`citerag.ingest.vectors.vector_rows`) for the realistic copies of the scale suite
(`benchmarks.datasets.scaled_library.copies`: the shared library first, then copies with names
renamed, years shifted and vectors perturbed), through citerag's own `MilvusIndex`.

The questions are every labelled question of the library's sets and of financebench, embedded
by the project's embedder. Exact search is numpy over the same float32 vectors, so recall@35 is
the share of the exact top 35 (cosine) that the server returns, with the same filter applied.

Run: python -m benchmarks.dense_scale [--sizes 100000 1000000] [--index-type ivf_flat autoindex]
[--storage FOLDER]
The server's data folder is kept under FOLDER (default storage/dense_scale), so a second run
measures without writing again.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from benchmarks.datasets.library import EVAL, LIBRARY_SETS
from benchmarks.datasets.scaled_library import SourceDocument, copies, read_source
from benchmarks.suites.scale import folder_bytes
from benchmarks.tables import RESULTS, publish, shared_data_missing
from citerag.enrich.fields import YEARS
from citerag.eval.machine import describe_machine
from citerag.ingest.vectors import vector_rows
from citerag.store.base import VectorQuery, VectorRow
from citerag.store.milvus_index import MilvusIndex, milvus_collection_name
from citerag.store.milvus_lists import CUT, list_entity

SOURCE = Path("storage/bench_scale/source")  # the scale suite's ingested shared library
TOP_K = 35  # what the retriever asks of the dense signal
BATCH_ROWS = 5000
SCOPE_DOCS = 10  # a question routed to a few documents
INDEX_WAIT_S = 3600
QUESTION_SETS = {**LIBRARY_SETS, "financebench": EVAL / "financebench_dev" / "questions.json"}


class Library:
    """The rows' vectors, years and documents, held for exact search."""

    def __init__(self) -> None:
        self.vectors: list[np.ndarray] = []
        self.years: list[list[str]] = []
        self.doc_ids: list[str] = []
        self.chunk_ids: list[str] = []
        self.cut: list[bool] = []  # some list value left out of the row's bounded columns
        self.places: list[tuple[str, int]] = []  # (document name, page)
        self.rows: list[VectorRow] = []  # what is written, once per index type

    def matrix(self) -> np.ndarray:
        return np.concatenate(self.vectors).astype(np.float32)


def library_of(documents: Sequence[SourceDocument], size: int) -> Library:
    """The realistic copies of `documents` up to `size` chunks, as rows and as arrays."""
    library = Library()
    for copied in copies(documents, "dense", size):
        library.vectors.append(copied.vectors)
        rows = vector_rows(copied.chunks, copied.vectors)
        library.rows += rows
        for row in rows:
            library.years.append(list(row.lists.get(YEARS) or []))
            library.doc_ids.append(row.doc_id)
            library.chunk_ids.append(row.chunk_id)
            library.cut.append(bool(list_entity(row.lists, row.lists_cut)[CUT]))
            library.places.append((row.doc_name, row.page))
    return library


def write_rows(index: MilvusIndex, collection: str, rows: Sequence[VectorRow]) -> None:
    """`rows` written in batches, as ingestion writes them."""
    for start in range(0, len(rows), BATCH_ROWS):
        _insert(index, collection, list(rows[start : start + BATCH_ROWS]))


def _insert(index: MilvusIndex, collection: str, rows: list[VectorRow]) -> None:
    index.ensure_collection(collection, int(rows[0].vector.shape[0]))
    index.insert(collection, rows)


def indexed(index: MilvusIndex, collection: str) -> float:
    """Seconds until the server's index covers every row (after a flush)."""
    started = time.perf_counter()
    name = milvus_collection_name(collection)
    client = index.client
    client.flush(name)
    while time.perf_counter() - started < INDEX_WAIT_S:
        pending = 0
        for index_name in client.list_indexes(name):
            described = client.describe_index(name, index_name)
            pending += int(described.get("pending_index_rows", 0))
        if not pending:
            break
        time.sleep(5)
    client.release_collection(name)
    client.load_collection(name)
    return time.perf_counter() - started


def questions() -> list[dict[str, Any]]:
    """Every labelled question: {question, document, evidence_pages, ...}."""
    found = []
    for path in QUESTION_SETS.values():
        found += json.loads(path.read_text(encoding="utf-8"))
    return found


def page_hits(library: Library, asked: Sequence[dict[str, Any]], hits: list[set[int]]) -> float:
    """The share of the questions on a document of the library (under its own name: the
    source's, copy 0) that have a labelled page among their hits."""
    names = {name for name, _ in library.places}
    scored = []
    for question, rows in zip(asked, hits, strict=True):
        if question["document"] not in names:
            continue
        labelled = {(question["document"], int(p)) for p in question.get("evidence_pages") or []}
        scored.append(any(library.places[r] in labelled for r in rows))
    return statistics.fmean(scored) if scored else 0.0


def exact(matrix: np.ndarray, query: np.ndarray, allowed: np.ndarray | None) -> set[int]:
    scores = matrix @ query
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
        count = int(allowed.sum())
    else:
        count = len(scores)
    k = min(TOP_K, count)
    best = np.argpartition(-scores, k - 1)[:k] if k else np.array([], dtype=np.int64)
    return {int(i) for i in best}


def variants(library: Library, rng: np.random.Generator) -> dict[str, Any]:
    """Per filter: (filters for the index, a row mask for exact search)."""
    counts: dict[str, int] = {}
    for held in library.years:
        for year in held:
            counts[year] = counts.get(year, 0) + 1
    common = max(counts, key=lambda y: counts[y])
    chosen = sorted(rng.choice(sorted(set(library.doc_ids)), SCOPE_DOCS, replace=False))
    # A row whose lists were cut passes a list filter in Milvus (the retriever checks it after).
    year_mask = np.array([common in held for held in library.years]) | np.array(library.cut)
    doc_mask = np.isin(np.array(library.doc_ids), chosen)
    return {
        "unfiltered": (None, None),
        f"year {common} ({int(year_mask.sum()):,} rows)": (
            MetadataFilters(filters=[MetadataFilter(key=YEARS, value=common)]),
            year_mask,
        ),
        f"{SCOPE_DOCS} documents ({int(doc_mask.sum()):,} rows)": (
            MetadataFilters(
                filters=[MetadataFilter(key="doc_id", value=chosen, operator=FilterOperator.IN)]
            ),
            doc_mask,
        ),
    }


@dataclass(frozen=True)
class Asked:
    """The labelled questions and their query vectors, in the same order."""

    questions: list[dict[str, Any]]
    vectors: np.ndarray


def measure(index: MilvusIndex, collection: str, library: Library, asked: Asked) -> dict[str, Any]:
    queries = asked.vectors
    matrix = library.matrix()
    row_of = _row_ids(library)
    figures: dict[str, Any] = {}
    for name, (filters, mask) in variants(library, np.random.default_rng(0)).items():
        search = _searcher(index, collection, filters)
        search(queries[0])  # the first search after a load pays for the segments' warm-up
        times, recalls, found, wanted = [], [], [], []
        for query in queries:
            started = time.perf_counter()
            hits = search(query)
            times.append((time.perf_counter() - started) * 1000)
            want = exact(matrix, query, mask)
            got = {row_of[h] for h in hits}
            recalls.append(len(want & got) / max(len(want), 1))
            found.append(got)
            wanted.append(want)
        figures[name] = {
            "p50_ms": statistics.median(times),
            "p95_ms": _p95(times),
            "recall": statistics.fmean(recalls),
        }
        if mask is None:
            figures[name]["page_hit"] = page_hits(library, asked.questions, found)
            figures[name]["page_hit_exact"] = page_hits(library, asked.questions, wanted)
        print(collection, name, figures[name], flush=True)
    figures["4 clients, unfiltered"] = _concurrent(_searcher(index, collection, None), queries)
    return figures


def _row_ids(library: Library) -> dict[str, int]:
    """Chunk id -> row number, in the library's order."""
    return {chunk_id: i for i, chunk_id in enumerate(library.chunk_ids)}


def _searcher(
    index: MilvusIndex, collection: str, filters: MetadataFilters | None
) -> Callable[[np.ndarray], list[str]]:
    def search(query: np.ndarray) -> list[str]:
        found = index.search(collection, VectorQuery(query[None, :], TOP_K, filters))
        return [chunk_id for chunk_id, _ in found[0]]

    return search


def _concurrent(search: Callable[[np.ndarray], list[str]], queries: np.ndarray) -> dict[str, Any]:
    def timed(query: np.ndarray) -> float:
        started = time.perf_counter()
        search(query)
        return (time.perf_counter() - started) * 1000

    with ThreadPoolExecutor(4) as pool:
        times = list(pool.map(timed, [*queries, *queries]))
    return {"p50_ms": statistics.median(times), "p95_ms": _p95(times)}


def _p95(times: Sequence[float]) -> float:
    return float(np.percentile(times, 95))


def resident_mib(pid: int) -> float:
    """The process's resident memory (VmRSS), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def one_size(
    index: MilvusIndex, pid: int, data: Path, size: int, library: Library, asked: Asked
) -> dict[str, Any]:
    """Write (unless a finished write of this size is kept), index, load and measure one size."""
    collection = f"dense_{index.capabilities.index_type.lower()}_{size}"
    marker = data.parent / f"{collection}.json"
    kept: dict[str, Any] = json.loads(marker.read_text()) if marker.is_file() else {}
    row: dict[str, Any] = {"chunks": len(library.rows)}
    if not kept or not index.has_collection(collection):
        index.drop_collection(collection)
        kept = {"bytes_before": folder_bytes(data)}
        started = time.perf_counter()
        write_rows(index, collection, library.rows)
        kept["write_s"] = time.perf_counter() - started
        kept["index_s"] = indexed(index, collection)
        kept["bytes"] = folder_bytes(data) - kept["bytes_before"]
        marker.write_text(json.dumps(kept))
    else:
        index.client.load_collection(milvus_collection_name(collection))
    row |= kept
    row["server_rss_mib"] = resident_mib(pid)
    row["searches"] = measure(index, collection, library, asked)
    row["server_rss_after_mib"] = resident_mib(pid)
    index.client.release_collection(milvus_collection_name(collection))
    return row


def report(rows: list[dict[str, Any]], questions: int, command: str) -> str:
    lines = [
        "# The vector index at scale on the Milvus standalone server",
        "",
        f"{describe_machine()} "
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
        f" (load {os.getloadavg()[0]:.1f}: other jobs ran beside it).",
        "",
        f"{questions} labelled questions (10-K, MMLongBench-Doc dev, financebench), top {TOP_K}, "
        "recall against exact cosine search with the same filter (a row whose lists were cut "
        "passes a list filter, as it does in Milvus); the labelled page column counts the "
        "questions on a document of the source library, whose pages are labelled. Reproduce: "
        f"`python -m benchmarks.dense_scale {command}`.",
        "",
        "| index | chunks | write | index built | Milvus data per chunk | server RSS loaded "
        "| search | p50 / p95 ms | recall@35 | labelled page in the top 35 (exact search) |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for row in rows:
        per_chunk = (row.get("bytes", 0)) / max(row["chunks"], 1) / 1024
        head = (
            f"| {row['index']} | {row['chunks']:,} | {row.get('write_s', 0):.0f} s "
            f"| {row.get('index_s', 0):.0f} s "
            f"| {per_chunk:.1f} KB | {row['server_rss_mib']:,.0f} MiB"
        )
        for name, figures in row["searches"].items():
            recall = f"{figures['recall']:.3f}" if "recall" in figures else "-"
            hit = "-"
            if "page_hit" in figures:
                hit = f"{figures['page_hit']:.3f} ({figures['page_hit_exact']:.3f})"
            timing = f"{figures['p50_ms']:.1f} / {figures['p95_ms']:.1f}"
            lines.append(f"{head} | {name} | {timing} | {recall} | {hit} |")
            head = "| | | | | |"
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--storage", type=Path, default=Path("storage/dense_scale"))
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument(
        "--index-type", nargs="+", default=["auto"], help="MILVUS_INDEX_TYPE values to compare"
    )
    args = parser.parse_args()
    if shared_data_missing(list(QUESTION_SETS.values())):
        return
    if not (args.source / "docstore.sqlite").is_file():
        raise SystemExit(
            f"No ingested library at {args.source}: run the scale suite once "
            "(python -m benchmarks run --suite scale --sizes 10000), or pass --source."
        )
    from benchmarks.systems.project import project_engine
    from devservers import start_milvus

    labelled = questions()
    engine = project_engine(args.source)
    try:
        asked = Asked(labelled, engine.embedder.embed([q["question"] for q in labelled]))
        documents = read_source(engine.stores, "library")
    finally:
        engine.close()
    server = start_milvus(args.storage / "milvus_server")
    rows = []
    try:
        for size in args.sizes:
            library = library_of(documents, size)  # once for every index type
            for index_type in args.index_type:
                index = MilvusIndex(server.uri, index_type=index_type)
                data = server.data_dir / "data"
                row = one_size(index, server.pid, data, size, library, asked)
                rows.append({"index": index.capabilities.index_type, **row})
                print(json.dumps(rows[-1]), flush=True)
                index.close()
    finally:
        server.stop()
    sizes = "_".join(str(s) for s in args.sizes)  # one file per set of sizes asked
    command = f"--sizes {' '.join(map(str, args.sizes))} --index-type {' '.join(args.index_type)}"
    publish(report(rows, len(labelled), command), RESULTS / f"dense_scale_{sizes}.md")


if __name__ == "__main__":
    main()
