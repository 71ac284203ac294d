"""Memory and time of a collection's in-process state at scale: what each chunk and page costs.

Builds a collection of N chunks (default 10,000) from real 10-K text: the Microsoft and Netflix
10-K pages (PyMuPDF text) cut into chunks of about 1,000 characters, three per page, copied as
documents of 100 pages until N chunks exist (each copy its own document, chunk and page ids;
head vectors random, 384 dimensions), enriched as ingest does offline (the rules extractor:
years, dates, amounts, percents, caption labels, entities). Everything is written through the
project's stores (SQLite docstore, bm25s-files keyword index), one document at a time; the page
rows go into a Milvus Lite page collection afterwards, from the docstore, as a collection made
before the page collection gets them on its first open (timed). Then, in a fresh index object,
tracemalloc measures the cold open (keyword segments loaded from disk, state loaded from the
docstore without chunk text), and the time of a refresh after one more document (delta), of a
keyword search, of a year filter over the whole collection, of the chunks carrying a few named
entities (what the evidence signals ask) and of a page head vector search (all pages, and a
third of them allowed).

Run: .venv/bin/python -m benchmarks.state_memory [--chunks 10000] [--chunks-per-page 3]
A stored library (the scale suite's realistic ones): `--storage FOLDER --collection NAME` gives
its state's memory and a cold open's time, first and from the documents' kept states.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pymupdf
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from benchmarks.systems.profiles import FINANCE
from benchmarks.tables import RESULTS, publish, shared_data_missing
from citerag.enrich.fields import ENTITIES, YEARS
from citerag.enrich.step import Enricher
from citerag.eval.machine import describe_machine
from citerag.ingest.page_rows import restore_page_rows
from citerag.nodes import chunk_node, page_vector_key
from citerag.retrieve.collection_state import CollectionState, refresh_state
from citerag.retrieve.page_evidence import keyword_entries
from citerag.retrieve.snapshot_source import SnapshotSource
from citerag.store.base import Stores
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.milvus_index import MilvusIndex
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.types import DocumentRecord

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "finance"
PDFS = [SHARED / "MICROSOFT_2021_10K.pdf", SHARED / "NETFLIX_2020_10K.pdf"]
PAGES_PER_DOC = 100
CHUNKS_PER_PAGE = 3
CHUNK_CHARS = 1000
DIM = 384
QUERIES = ["total revenue", "capital expenditures cash flow", "streaming members", "goodwill"]
YEARS_ASKED = ["2019", "2020", "2021", "2018"]
ENRICHER = Enricher("entity")  # no GLiNER weights given: the rules extractor's entities


def page_texts() -> list[str]:
    texts = []
    for path in PDFS:
        with pymupdf.open(path) as pdf:
            texts += [page.get_text() for page in pdf if len(page.get_text()) > 300]
    return texts


def document(doc_id: str, pages: list[str], per_page: int = CHUNKS_PER_PAGE) -> list[TextNode]:
    nodes: list[TextNode] = []
    for number, text in enumerate(pages, start=1):
        for part in range(per_page):
            start = part * CHUNK_CHARS
            nodes.append(
                chunk_node(
                    node_id=f"{doc_id[:16]}-{len(nodes):05d}",
                    doc_id=doc_id,
                    doc_name=f"{doc_id[:8]}.pdf",
                    page=number,
                    chunk_index=len(nodes),
                    text=text[start : start + CHUNK_CHARS] or text[:CHUNK_CHARS],
                    start=start,
                    section=f"Item {number % 15}",
                    block_type="table" if part == 1 else "text",
                )
            )
    return nodes


def write(
    store: SQLiteDocStore,
    keywords: BM25FilesIndex,
    doc_id: str,
    pages: list[str],
    per_page: int = CHUNKS_PER_PAGE,
) -> int:
    nodes = document(doc_id, pages, per_page)
    ENRICHER.enrich(nodes)
    store.put_document(
        DocumentRecord(doc_id, f"{doc_id}.pdf", "big", len(pages), "copy", "pending", time.time())
    )
    store.put_chunks("big", nodes)
    rng = np.random.default_rng(len(nodes))
    heads = {
        page_vector_key(doc_id, n): rng.standard_normal((1, DIM)) for n in range(1, len(pages) + 1)
    }
    store.put_sentence_vectors("big", heads)
    keywords.add_document("big", doc_id, keyword_entries(nodes))
    store.mark_ready("big", doc_id)
    return len(nodes)


def lookups(state: CollectionState, store: SQLiteDocStore) -> tuple[float, float]:
    """Median seconds of a year filter over the collection and of the chunks carrying five of
    its entities (spread over its first document's distinct values)."""
    first = next(iter(state.docs))
    held = store.chunk_metadata(state.name, first, [ENTITIES])
    known = sorted({str(v).casefold() for c in held for v in c.metadata.get(ENTITIES, [])})
    named = known[:: max(len(known) // 5, 1)][:5]
    source = SnapshotSource(state, store, lambda vector, top_k, allowed: [])
    year_times, entity_times = [], []
    for year in YEARS_ASKED * 5:
        filters = MetadataFilters(
            filters=[MetadataFilter(key=YEARS, value=[year], operator=FilterOperator.ANY)]
        )
        started = time.perf_counter()
        state.matching(filters)
        year_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        source.carriers(ENTITIES, named)
        entity_times.append(time.perf_counter() - started)
    return statistics.median(year_times), statistics.median(entity_times)


def run(chunks: int, folder: Path, per_page: int = CHUNKS_PER_PAGE) -> str:
    texts = page_texts()
    store = SQLiteDocStore(folder / "docstore.sqlite")
    keywords = BM25FilesIndex(folder / "keywords")
    written, copy = 0, 0
    while written < chunks:
        first = (copy * PAGES_PER_DOC) % len(texts)
        pages = [texts[(first + i) % len(texts)] for i in range(PAGES_PER_DOC)]
        written += write(store, keywords, f"{copy:016x}" + "0" * 48, pages, per_page)
        copy += 1
    milvus = MilvusIndex(str(folder / "milvus.db"))
    started = time.perf_counter()
    restore_page_rows(Stores(store, milvus, keywords), "big")
    fill_s = time.perf_counter() - started
    tracemalloc.start()
    started = time.perf_counter()
    fresh = BM25FilesIndex(folder / "keywords")
    fresh.doc_ids("big")
    keyword_bytes, _ = tracemalloc.get_traced_memory()
    state = refresh_state(None, store, fresh, "big", FINANCE, milvus.pages)
    cold_s = time.perf_counter() - started
    total_bytes, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n_pages = len(state.page_ids)
    state_bytes = total_bytes - keyword_bytes
    reopen_s, _ = state_cold_open(store, folder / "keywords", "big")
    write(store, keywords, "f" * 64, texts[:PAGES_PER_DOC], per_page)
    started = time.perf_counter()
    newer = refresh_state(state, store, fresh, "big", FINANCE)
    delta_s = time.perf_counter() - started
    searches = []
    for query in QUERIES * 5:
        started = time.perf_counter()
        newer.keyword_hits("chunk", query, 35)
        searches.append(time.perf_counter() - started)
    year_s, entity_s = lookups(newer, store)
    vectors = np.random.default_rng(1).standard_normal((20, DIM)).astype(np.float32)
    every = page_search_ms(newer, vectors, None)
    third = page_search_ms(newer, vectors, set(list(newer.page_ids)[::3]))
    milvus.close()
    store.close()
    n_chunks, mib = len(state.places), 2**20
    per_entry = keyword_bytes / (n_chunks + n_pages)
    rows = [
        ("chunks / pages / documents", f"{n_chunks} / {n_pages} / {len(state.docs)}"),
        ("keyword index", f"{keyword_bytes / mib:.1f} MiB, {per_entry:.0f} B per entry"),
        ("state without keywords", f"{state_bytes / mib:.1f} MiB"),
        ("state per chunk (page share included)", f"{state_bytes / n_chunks:.0f} B"),
        ("cold open (keywords from files, state from docstore)", f"{cold_s:.2f} s"),
        ("cold open again (from the documents' kept states)", f"{reopen_s:.2f} s"),
        ("refresh after one 100-page document (delta)", f"{delta_s * 1000:.0f} ms"),
        ("chunk keyword search p50", f"{statistics.median(searches) * 1000:.1f} ms"),
        ("year filter over every chunk p50 (`matching`)", f"{year_s * 1000:.2f} ms"),
        ("chunks carrying 5 named entities p50 (`carriers`)", f"{entity_s * 1000:.2f} ms"),
        ("page head vector search p50, top 35 of every page", f"{every:.1f} ms"),
        ("page head vector search p50, top 35 of a third of the pages", f"{third:.1f} ms"),
        ("page rows written from the docstore (an old collection's first open)", f"{fill_s:.1f} s"),
    ]
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    return (
        f"# Collection state memory at {chunks} chunks\n\n"
        f"{describe_machine()} (loaded: other jobs ran beside it).\n"
        f"Text: Microsoft and Netflix 10-K pages, cut into {per_page} chunks of 1,000 characters "
        "per page, copied as 100-page documents.\n\n| measure | value |\n|---|---:|\n"
        + table
        + "\n"
    )


def state_cold_open(
    store: SQLiteDocStore, keywords: Path, collection: str, traced: bool = False
) -> tuple[float, int]:
    """Seconds of a new process's state of `collection` (keyword files opened first), and with
    `traced` its bytes by tracemalloc (which slows the open several times: time it untraced)."""
    fresh = BM25FilesIndex(keywords)
    fresh.doc_ids(collection)
    gc.collect()
    if traced:
        tracemalloc.start()
    started = time.perf_counter()
    state = refresh_state(None, store, fresh, collection, FINANCE)
    seconds = time.perf_counter() - started
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] if traced else 0
    tracemalloc.stop()
    del state
    return seconds, held


def library_report(storage: Path, collection: str) -> str:
    """The state of a stored library (a scale suite's) as a new process opens it: the first
    open keeps the states of documents it had to read from their chunks, the next read those."""
    store = SQLiteDocStore(storage / "docstore.sqlite")
    chunks = sum(count for count, _ in store.chunk_stats(collection).values())
    first_s, _ = state_cold_open(store, storage / "keywords", collection)
    again_s, _ = state_cold_open(store, storage / "keywords", collection)
    _, held = state_cold_open(store, storage / "keywords", collection, traced=True)
    store.close()
    return (
        f"# Collection state memory of {collection} ({chunks:,} chunks)\n\n"
        f"{describe_machine()} (loaded: other jobs ran beside it).\n"
        f"Library: `{storage}` (the scale suite's).\n\n| measure | value |\n|---|---:|\n"
        f"| state (tracemalloc) | {held / 2**20:.1f} MiB, {held / max(chunks, 1):.0f} B a chunk |\n"
        f"| cold open, first | {first_s:.2f} s |\n"
        f"| cold open, from the documents' kept states | {again_s:.2f} s |\n"
    )


def page_search_ms(state: CollectionState, vectors: np.ndarray, allowed: set[str] | None) -> float:
    times = []
    for vector in vectors:
        started = time.perf_counter()
        state.page_vector_hits(vector, 35, allowed)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--chunks-per-page", type=int, default=CHUNKS_PER_PAGE)
    parser.add_argument("--storage", type=Path, help="measure this stored library instead")
    parser.add_argument("--collection", help="with --storage: the collection")
    args = parser.parse_args()
    if args.storage:
        collection = args.collection or ""
        report = library_report(args.storage, collection)
        publish(report, RESULTS / f"state_memory_{collection}.md")
        return
    if shared_data_missing(PDFS):
        return
    with tempfile.TemporaryDirectory() as folder:
        report = run(args.chunks, Path(folder), args.chunks_per_page)
    suffix = "" if args.chunks_per_page == CHUNKS_PER_PAGE else f"_{args.chunks_per_page}pp"
    publish(report, RESULTS / f"state_memory_{args.chunks}{suffix}.md")


if __name__ == "__main__":
    main()
