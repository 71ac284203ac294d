"""Memory and search time of the embedded keyword index (bm25-files) in a serving process.

Builds a keyword index of N chunks (with their pages) from real 10-K text, exactly as
benchmarks/state_memory.py cuts it (Microsoft and Netflix 10-K pages, 1,000-character chunks,
100-page documents copied until N chunks exist), searches once so that whatever the index keeps
between processes is written, then opens it in a fresh interpreter and measures there: the
Python heap the open index holds (tracemalloc, current and peak over the open and the first
searches), the process's resident memory before and after (RSS, which also counts the pages of
memory-mapped files that searches touched: shared, evictable page cache), and the latency of
chunk searches (top 35) over random queries of the collection's own words, with and without an
allowed-id list. `--dump` writes every search's hits and scores, to compare two versions.
Then MAX_LOOSE + 1 documents are added, so that a new merge is due, and timed: the question that
finds it due (before merges ran in the background, it ran the merge), the questions asked while
the merge runs, and when the new merge is published.

Run: .venv/bin/python -m benchmarks.keyword_memory [--chunks 10000] [--dump hits.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from benchmarks.records import RESULTS
from benchmarks.state_memory import PAGES_PER_DOC, PDFS, document, page_texts
from benchmarks.tables import publish, shared_data_missing
from citerag.eval.machine import describe_machine
from citerag.retrieve.page_evidence import keyword_entries
from citerag.store.bm25_files import MAX_LOOSE, BM25FilesIndex
from citerag.store.keywords import KeywordQuery
from citerag.text.tokens import tokenize

COLLECTION = "big"
SEARCHES = 200


def build(folder: Path, chunks: int) -> None:
    index, texts = BM25FilesIndex(folder), page_texts()
    written, copy = 0, 0
    while written < chunks:
        written, copy = written + add(index, copy, texts), copy + 1
    index.close()


def add(index: BM25FilesIndex, copy: int, texts: list[str]) -> int:
    """The `copy`-th document (100 of the 10-Ks' `texts` from a place of its own); its chunks."""
    first = (copy * PAGES_PER_DOC) % len(texts)
    pages = [texts[(first + i) % len(texts)] for i in range(PAGES_PER_DOC)]
    nodes = document(f"{copy:016x}" + "0" * 48, pages)
    index.add_document(COLLECTION, f"{copy:016x}", keyword_entries(nodes))
    return len(nodes)


def warm(folder: Path) -> dict[str, float]:
    """One search, so that what the index keeps between processes is on disk: the merge,
    timed, with the heap it takes while it runs (it runs again after MAX_LOOSE documents)."""
    index = BM25FilesIndex(folder)
    index.doc_ids(COLLECTION)
    tracemalloc.start()
    started = time.perf_counter()
    index.search(COLLECTION, KeywordQuery("chunk", "revenue", 5))
    published(index)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    index.close()
    return {"merge_s": seconds, "merge_peak_mib": peak / 2**20}


def published(index: BM25FilesIndex, timeout: float | None = None) -> bool:
    """Whether the index's merges are on disk (waiting up to `timeout`); an index that merges
    inside the search (a version before, to compare) has none left when a search returns."""
    wait = getattr(index, "wait_for_merges", None)
    return True if wait is None else bool(wait(timeout))


def merge_due(folder: Path, texts: list[str]) -> tuple[dict[str, float], list[object]]:
    """MAX_LOOSE + 1 documents added, then timed: the question that finds a merge due, those
    asked while it runs, and when it is published; with every question's hits."""
    index = BM25FilesIndex(folder)
    present = len(index.doc_ids(COLLECTION))
    pages = page_texts()
    for copy in range(present, present + MAX_LOOSE + 1):
        add(index, copy, pages)
    started = time.perf_counter()
    hits: list[object] = [index.search(COLLECTION, KeywordQuery("chunk", texts[0], 35))]
    first = time.perf_counter() - started
    during: list[float] = []
    while not published(index, 0) and len(during) < len(texts):
        asked = time.perf_counter()
        hits.append(index.search(COLLECTION, KeywordQuery("chunk", texts[len(during)], 35)))
        during.append(time.perf_counter() - asked)
    published(index)
    merged = time.perf_counter() - started
    hits += [index.search(COLLECTION, KeywordQuery("chunk", t, 35)) for t in texts[: len(hits)]]
    figures = {"due_first_ms": first * 1000, "due_published_s": merged, "due_asked": len(during)}
    if during:
        figures["due_p50_ms"] = statistics.median(during) * 1000
        figures["due_max_ms"] = max(during) * 1000
    return figures, hits


def queries(seed: int = 7) -> list[str]:
    # Words drawn as often as the pages use them: common and rare terms, as questions have.
    words = [t for text in page_texts()[:60] for t in tokenize(text) if len(t) > 3]
    rng = random.Random(seed)
    return [" ".join(rng.sample(words, rng.randint(1, 4))) for _ in range(SEARCHES)]


def resident_mib() -> float:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:  # macOS: no /proc; the peak so far (in bytes there) is what it reports
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def measure(folder: Path, dump: Path | None) -> dict[str, float]:
    texts = queries()
    rss_before = resident_mib()
    tracemalloc.start()
    started = time.perf_counter()
    index = BM25FilesIndex(folder)
    docs = index.doc_ids(COLLECTION)
    for kind in ("chunk", "page"):
        index.search(COLLECTION, KeywordQuery(kind, "revenue", 35))
    open_s = time.perf_counter() - started
    heap, heap_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    some = {f"{d}-{i:05d}" for d in sorted(docs)[::3] for i in range(0, 300, 7)}
    timings: dict[str, list[float]] = {"all": [], "allowed": []}
    hits = []
    for text in texts:
        for name, ids in (("all", None), ("allowed", some)):
            started = time.perf_counter()
            found = index.search(COLLECTION, KeywordQuery("chunk", text, 35, ids))
            timings[name].append(time.perf_counter() - started)
            hits.append(found)
        hits.append(index.search(COLLECTION, KeywordQuery("page", text, 10)))
    due, due_hits = merge_due(folder, texts)
    if dump is not None:
        dump.write_text(json.dumps(hits + due_hits))
    return due | {
        "documents": len(docs),
        "open_s": open_s,
        "heap_mib": heap / 2**20,
        "heap_peak_mib": heap_peak / 2**20,
        "rss_before_mib": rss_before,
        "rss_after_mib": resident_mib(),
        "p50_ms": statistics.median(timings["all"]) * 1000,
        "p95_ms": statistics.quantiles(timings["all"], n=20)[-1] * 1000,
        "allowed_p50_ms": statistics.median(timings["allowed"]) * 1000,
    }


def report(chunks: int, figures: dict[str, float]) -> str:
    rows = [
        ("documents", f"{figures['documents']:.0f}"),
        ("open + first search per kind", f"{figures['open_s']:.2f} s"),
        ("Python heap held after open (tracemalloc)", f"{figures['heap_mib']:.1f} MiB"),
        ("Python heap peak during open (tracemalloc)", f"{figures['heap_peak_mib']:.1f} MiB"),
        ("resident before open / after searches", _pair(figures)),
        (
            "chunk search p50 / p95 (top 35)",
            f"{figures['p50_ms']:.1f} / {figures['p95_ms']:.1f} ms",
        ),
        ("chunk search p50 among allowed ids", f"{figures['allowed_p50_ms']:.1f} ms"),
        (
            "first search after opening the built index, until its merge is published",
            _merge(figures),
        ),
        (
            f"question that finds a merge due ({MAX_LOOSE + 1} documents added)",
            f"{figures['due_first_ms']:.0f} ms",
        ),
        ("questions while that merge runs: asked, p50 / max", _during(figures)),
        ("that merge published after", f"{figures['due_published_s']:.2f} s"),
    ]
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    return (
        f"# Keyword index (bm25-files) in a serving process at {chunks} chunks\n\n"
        f"{describe_machine()} (loaded: other jobs ran beside it).\n\n"
        "| measure | value |\n|---|---:|\n" + table + "\n"
    )


def _merge(figures: dict[str, float]) -> str:
    return f"{figures['merge_s']:.2f} s, heap peak {figures['merge_peak_mib']:.0f} MiB"


def _first(figures: dict[str, float]) -> str:
    return f"{figures['due_first_ms']:.0f} ms"


def _during(figures: dict[str, float]) -> str:
    if not figures["due_asked"]:
        return "none (published when the question returned)"
    return (
        f"{figures['due_asked']:.0f}, {figures['due_p50_ms']:.1f} / {figures['due_max_ms']:.1f} ms"
    )


def _pair(figures: dict[str, float]) -> str:
    return f"{figures['rss_before_mib']:.0f} / {figures['rss_after_mib']:.0f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--dump", type=Path, help="write every search's hits here (JSON)")
    parser.add_argument("--folder", type=Path, help="an index built before (skips the build)")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.folder, args.dump)))
        return
    if shared_data_missing(PDFS):
        return
    with tempfile.TemporaryDirectory() as temporary:
        folder = args.folder or Path(temporary)
        if args.folder is None or not args.folder.exists():
            build(folder, args.chunks)
        merge = warm(folder)
        command = [sys.executable, "-m", "benchmarks.keyword_memory", "--measure"]
        command += ["--folder", str(folder)] + (["--dump", str(args.dump)] if args.dump else [])
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        figures = json.loads(out.splitlines()[-1]) | merge
    publish(report(args.chunks, figures), RESULTS / f"keyword_memory_{args.chunks}.md")


if __name__ == "__main__":
    main()
