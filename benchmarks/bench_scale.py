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

    .venv/bin/python -m benchmarks.bench_scale [--sizes 10000 100000] [--questions 40]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.datasets.library import shared_pdfs
from benchmarks.systems.project import project_engine
from benchmarks.tables import RESULTS
from citerag.parse.cache import cache_path
from citerag.parse.validate import inspect_pdf

SHARED = Path(__file__).resolve().parents[2] / "shared" / "eval"
SOURCE = "library"
ADDED_PDF = SHARED / "finance" / "NETFLIX_2020_10K.pdf"  # 95 pages
RESULT_FILE = RESULTS / "scale.md"


def questions(limit: int) -> list[str]:
    sets = [SHARED / "finance" / "finance_qa.json", SHARED / "mmlongbench_dev" / "questions.json"]
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


def run_measure(storage: Path, size: int, count: int) -> dict[str, Any]:
    command = [
        sys.executable,
        __file__,
        "--storage",
        str(storage),
        "--measure",
        f"scale_{size}",
        "--questions",
        str(count),
    ]
    if size == max(SIZES_WITH_ADD or [size]):
        command.append("--add-delete")
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(output.strip().splitlines()[-1]))


SIZES_WITH_ADD: list[int] = []


def render(
    rows: list[dict[str, Any]], build_s: dict[int, float], count: int, disk_gb: float
) -> str:
    lines = [
        "# A library at scale",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, embedded stack (Milvus Lite, SQLite, bm25s files). "
        f"{count} questions (finance and MMLongBench-Doc dev), each asked once per collection "
        "after one warm-up question; every collection measured in a fresh process.",
        "",
        "| chunks | build s | cold open s | retrieve p50 / p95 ms | answer p50 / p95 ms "
        "| RSS MB | add 95-page PDF s | first question after add s | delete s "
        "| first question after delete s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        size = int(row["collection"].split("_")[-1])
        extra = [
            f"{row[k]:.2f}" if k in row else "-"
            for k in (
                "add_s",
                "first_question_after_add_s",
                "delete_s",
                "first_question_after_delete_s",
            )
        ]
        lines.append(
            f"| {row['chunks']:,} | {build_s.get(size, 0):.0f} | {row['cold_open_s']:.1f} "
            f"| {row['retrieve_ms'][0]:.0f} / {row['retrieve_ms'][1]:.0f} "
            f"| {row['answer_ms'][0]:.0f} / {row['answer_ms'][1]:.0f} | {row['rss_mb']:.0f} | "
            + " | ".join(extra)
            + " |"
        )
    lines += ["", million_note(rows, build_s, disk_gb)]
    return "\n".join(lines) + "\n"


def million_note(rows: list[dict[str, Any]], build_s: dict[int, float], disk_gb: float) -> str:
    """Why there is no 1M row: what it would take, scaled from this run's largest collection."""
    size = max(build_s, default=0)
    largest = max(rows, key=lambda row: int(row["chunks"]), default=None)
    if not size or not build_s[size] or largest is None:
        return "1M chunks: not built (no build was timed in this run)."
    scale = 1_000_000 / int(largest["chunks"])
    hours = build_s[size] / size * 1_000_000 / 3600
    return (
        f"1M chunks: not built. Scaled linearly from this run: copying it through the "
        f"project's stores would take about {hours:.1f} hours here, the storage folder would "
        f"hold about {disk_gb * scale:.0f} GB (it holds {disk_gb:.1f} GB now, mostly one "
        f"384-dimension vector per sentence), and a process answering over it would need about "
        f"{largest['rss_mb'] * scale / 1024:.0f} GB resident (collection state, page vectors "
        f"and keyword segments), against 24 GB on this machine."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", type=Path, default=Path("storage/bench_scale"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--add-delete", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    asked = questions(args.questions)
    if args.measure:
        print(json.dumps(measure(args.storage, args.measure, asked, args.add_delete)))
        return
    if not SHARED.is_dir():
        sys.exit(f"{SHARED} is absent: put the shared evaluation data beside the project.")
    SIZES_WITH_ADD.append(max(args.sizes))
    build_s = build(args.storage, args.sizes)
    rows = [run_measure(args.storage, size, len(asked)) for size in args.sizes]
    for row in rows:
        print(json.dumps(row))
    disk = sum(f.stat().st_size for f in args.storage.rglob("*") if f.is_file()) / 1e9
    report = render(rows, build_s, len(asked), disk)
    RESULT_FILE.write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
