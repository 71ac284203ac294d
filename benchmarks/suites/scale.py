"""A library at scale: answer and retrieve latency, memory, cold open, adding and deleting a
document, on collections of 10k and 100k chunks.

The collections are made of real text: every shared PDF is ingested once into the source
collection `library` (the one `python -m benchmarks run --suite library` builds: point
`--storage` at a copy of its project folder to skip that ingest), then copied (new document ids,
chunk ids and names; the same text, sentence and page vectors) through the project's own stores,
document by document, until the target size is reached
(`benchmarks/datasets/big_collection.py`). Copies repeat text, so answers are not judged here
(the library suite judges quality); only cost is. The added document's parse is taken out of the
parse cache first, so adding it includes its parse.

Each measurement runs in a fresh process, so cold-open time and resident memory are what a new
`serve` or `query` process pays:

    python -m benchmarks run --suite scale [--sizes 10000 100000] [--questions 40]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.datasets.library import EVAL, shared_pdfs
from benchmarks.records import Record
from benchmarks.suites import SuiteOptions
from benchmarks.systems.process import PROJECT, base_environment
from benchmarks.systems.project import project_engine
from citerag.parse.cache import cache_path
from citerag.parse.validate import inspect_pdf

SOURCE = "library"
ADDED_PDF = EVAL / "finance" / "NETFLIX_2020_10K.pdf"  # 95 pages


def questions(limit: int) -> list[str]:
    sets = [EVAL / "finance" / "finance_qa.json", EVAL / "mmlongbench_dev" / "questions.json"]
    found = [q["question"] for path in sets for q in json.loads(path.read_text(encoding="utf-8"))]
    return found[:limit]


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def build(storage: Path, sizes: list[int]) -> dict[int, float]:
    """Ingest the shared PDFs into the source collection (once) and copy them up to each size."""
    from benchmarks.datasets.big_collection import build_big_collection

    engine = project_engine(storage)
    seconds: dict[int, float] = {}
    times_file = storage / "build_seconds.json"
    timed: dict[str, float] = json.loads(times_file.read_text()) if times_file.is_file() else {}
    try:
        for pdf in shared_pdfs():
            engine.ingest(pdf, SOURCE)
        for size in sizes:
            target = f"scale_{size}"
            have = sum(count for count, _ in engine.docstore.chunk_stats(target).values())
            started = time.perf_counter()
            if have < size:
                build_big_collection(engine, [SOURCE], target, min_chunks=size)
                timed[str(size)] = time.perf_counter() - started
                print(f"{target}: built in {timed[str(size)]:.0f} s", flush=True)
            seconds[size] = timed.get(str(size), 0.0)  # a kept collection keeps its build time
    finally:
        engine.close()
        times_file.write_text(json.dumps(timed))
    return seconds


def measure(storage: Path, collection: str, asked: list[str], add_delete: bool) -> dict[str, Any]:
    """One fresh process: cold open, latency, memory, and (optionally) add and delete one PDF."""
    started = time.perf_counter()
    before = rss_mb()
    engine = project_engine(storage)
    engine.embedder.load()
    engine.retrieve(asked[0], collection)
    cold = time.perf_counter() - started
    result: dict[str, Any] = {"collection": collection, "cold_open_s": cold}
    result["chunks"] = engine.vectors.count(collection)
    retrieve_ms, answer_ms = [], []
    for question in asked:
        t0 = time.perf_counter()
        engine.retrieve(question, collection)
        t1 = time.perf_counter()
        engine.query(question, collection)
        t2 = time.perf_counter()
        retrieve_ms.append((t1 - t0) * 1000)
        answer_ms.append((t2 - t1) * 1000)
    result["retrieve_ms"] = percentiles(retrieve_ms)
    result["answer_ms"] = percentiles(answer_ms)
    result["rss_mb"] = rss_mb()
    result["rss_growth_mb"] = result["rss_mb"] - before
    if add_delete:
        result |= add_and_delete(engine, collection, asked[0])
    engine.close()
    return result


def add_and_delete(engine: Any, collection: str, question: str) -> dict[str, float]:
    name = "added_for_scale_benchmark.pdf"
    copy = Path(engine.settings.storage_dir) / name
    copy.write_bytes(ADDED_PDF.read_bytes())
    sha = inspect_pdf(copy).sha256
    cache_path(engine.settings.parse_cache_dir, sha, engine.settings.parser).unlink(missing_ok=True)
    t0 = time.perf_counter()
    engine.ingest(copy, collection)
    t1 = time.perf_counter()
    engine.retrieve(question, collection)  # the state takes in the new document by delta
    t2 = time.perf_counter()
    engine.delete(name, collection)
    t3 = time.perf_counter()
    engine.retrieve(question, collection)
    t4 = time.perf_counter()
    copy.unlink()
    return {
        "add_s": t1 - t0,
        "first_question_after_add_s": t2 - t1,
        "delete_s": t3 - t2,
        "first_question_after_delete_s": t4 - t3,
    }


def run_measure(storage: Path, size: int, count: int, add_delete: bool) -> dict[str, Any]:
    """`measure` in a fresh process, so cold open and memory are what a new process pays."""
    command = [sys.executable, "-m", "benchmarks.suites.scale", "--storage", str(storage)]
    command += ["--measure", f"scale_{size}", "--questions", str(count)]
    if add_delete:
        command.append("--add-delete")
    output = subprocess.run(
        command, check=True, capture_output=True, text=True, cwd=PROJECT, env=base_environment()
    ).stdout
    return dict(json.loads(output.strip().splitlines()[-1]))


def run(options: SuiteOptions) -> Record:
    storage = options.storage_for("scale")
    sizes = options.sizes
    asked = questions(options.questions)
    build_s = build(storage, sizes)
    rows = [run_measure(storage, size, len(asked), size == max(sizes)) for size in sizes]
    disk = sum(f.stat().st_size for f in storage.rglob("*") if f.is_file()) / 1e9
    return Record(
        suite="scale",
        command=options.command,
        variant=options.variant,
        settings=dict(options.settings),
        systems={"project": "embedded stack (Milvus Lite, SQLite, bm25s files)"},
        datasets={
            "questions": f"{len(asked)} questions (finance and MMLongBench-Doc dev)",
            "collections": "the library copied up to " + ", ".join(f"{s:,}" for s in sizes),
        },
        metrics={"rows": rows, "disk_gb": disk},
        timings={"build_s": {str(k): v for k, v in build_s.items()}},
    )


def main() -> None:
    """The child process of `run_measure`."""
    parser = argparse.ArgumentParser(description="Measure one collection in a fresh process.")
    parser.add_argument("--storage", type=Path, required=True)
    parser.add_argument("--measure", required=True)
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--add-delete", action="store_true")
    args = parser.parse_args()
    asked = questions(args.questions)
    print(json.dumps(measure(args.storage, args.measure, asked, args.add_delete)))


if __name__ == "__main__":
    main()
