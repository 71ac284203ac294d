"""One serving process of the scale benchmark, and the other process that writes beside it.

    python -m benchmarks.suites.scale_measure --storage DIR --collection C [--answers 40]
        [--add PDF --question Q] [--writer-process]
    python -m benchmarks.suites.scale_measure --storage DIR --collection C
        --write add|delete --pdf PDF

The first opens the engine as `serve` does (a fresh process: cold open and resident memory are
what a new serving process pays), asks every labelled question once with one client (retrieve
latency and page hits), answers the first N, asks them again from 4 threads at once, then
times the first question after a document is added and after it is deleted: by another OS
process writing through the same stores (`--writer-process`: the same docstore file, keyword
files and Milvus server), or by this process where the deployment admits only one (Milvus Lite
locks its data folder). It prints one JSON object on its last line. The second form is that
other process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.datasets.library import library_questions
from benchmarks.metrics.pages import place_hits
from benchmarks.systems.process import PROJECT, base_environment

KS = (1, 5, 10)
CLIENTS = 4


def memory_mb() -> dict[str, float]:
    """Resident memory now and at its peak (VmRSS, VmHWM), in MB."""
    found = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(("VmRSS:", "VmHWM:")):
                found[line.split(":")[0]] = int(line.split()[1]) / 1024
    return {"rss_mb": found.get("VmRSS", 0.0), "peak_rss_mb": found.get("VmHWM", 0.0)}


def percentiles(values: Sequence[float]) -> list[float]:
    """[p50, p95] (nearest rank), as the earlier records stored them."""
    ordered = sorted(values)
    if not ordered:
        return [0.0, 0.0]
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return [statistics.median(ordered), p95]


def timed(call: Callable[[str], Any], question: str) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call(question)
    return (time.perf_counter() - started) * 1000, result


def concurrent(call: Callable[[str], Any], questions: Sequence[str]) -> dict[str, Any]:
    """Every question once, from `CLIENTS` threads at once: per-call p50/p95 and throughput."""
    started = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as pool:
        spent = [ms for ms, _ in pool.map(lambda q: timed(call, q), questions)]
    wall = time.perf_counter() - started
    return {"ms": percentiles(spent), "per_s": len(questions) / wall if wall else 0.0}


def labelled() -> list[tuple[str, dict[str, Any]]]:
    return [(name, q) for name, qs in library_questions().items() for q in qs]


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.systems.project import engine_retrieve, project_engine

    asked = labelled()
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    engine = project_engine(args.storage)
    engine.embedder.load()
    engine.retrieve(asked[0][1]["question"], args.collection)
    result: dict[str, Any] = {"collection": args.collection, "cold_open_s": 0.0}
    result["cold_open_s"] = time.perf_counter() - started
    result["after_open"] = memory_mb()
    result["chunks"] = engine.vectors.count(args.collection)
    places = engine_retrieve(engine, args.collection)
    spent: list[float] = []
    scored: dict[str, list[dict[int, int]]] = {}
    for set_name, question in asked:
        ms, found = timed(places, question["question"])
        spent.append(ms)
        hits = place_hits(
            [(d, p) for d, p, _ in found], question["document"], question["evidence_pages"], KS
        )
        scored.setdefault(set_name, []).append(hits)
    result["hits"] = {
        name: {**{f"hit@{k}": statistics.fmean(h[k] for h in hs) for k in KS}, "n": len(hs)}
        for name, hs in scored.items()
    }
    result["retrieve_ms"] = percentiles(spent)
    answered = [q["question"] for _, q in asked[: args.answers]]
    result["answered"] = len(answered)

    def answer(question: str) -> Any:
        return engine.query(question, args.collection)

    result["answer_ms"] = percentiles([timed(answer, q)[0] for q in answered])
    questions = [q["question"] for _, q in asked]
    result["clients"] = CLIENTS
    result["retrieve_concurrent"] = concurrent(places, questions)
    result["answer_concurrent"] = concurrent(answer, answered)
    result["after_questions"] = memory_mb()
    if args.add:
        result["changes"] = changes(engine, args)
    engine.close()
    result["load"] = [load_before, os.getloadavg()[0]]
    return result


def changes(engine: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The first question after an add and after a delete, through another process or this one."""
    pdf = Path(args.add)

    def cited() -> tuple[float, bool]:
        started = time.perf_counter()
        hits = engine.retrieve(args.question, args.collection)
        names = {str(h.node.metadata.get("doc_name", "")) for h in hits}
        return time.perf_counter() - started, pdf.name in names

    found: dict[str, Any] = {"pdf": pdf.name, "writer": "this process"}
    for step in ("add", "delete"):
        if args.writer_process:
            found["writer"] = "another process"
            found[f"{step}_s"] = write_elsewhere(args.storage, args.collection, step, pdf)
        else:
            started = time.perf_counter()
            if step == "add":
                write(engine, args.collection, step, pdf)
            else:
                engine.delete(pdf.name, args.collection)
            found[f"{step}_s"] = time.perf_counter() - started
        seconds, seen = cited()
        found[f"first_question_after_{step}_s"] = seconds
        found[f"cited_after_{step}"] = seen
    return found


def write(engine: Any, collection: str, step: str, pdf: Path) -> None:
    """Add `pdf` (its parse taken out of the cache, so the add includes the parse), or delete it."""
    if step == "delete":
        engine.delete(pdf.name, collection)
        return
    from citerag.parse.validate import inspect_pdf

    sha = inspect_pdf(pdf).sha256
    for cached in engine.settings.storage.parse_cache_dir.glob(f"{sha}.*"):
        cached.unlink()
    engine.ingest(pdf, collection)


def write_elsewhere(storage: Path, collection: str, step: str, pdf: Path) -> float:
    """`write` in a separate OS process on the same stores; its seconds from start to exit."""
    command = [sys.executable, "-m", "benchmarks.suites.scale_measure", "--storage", str(storage)]
    command += ["--collection", collection, "--write", step, "--pdf", str(pdf)]
    started = time.perf_counter()
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=PROJECT, env=base_environment()
    )
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()] or ["no output"]
        raise RuntimeError(f"the writer process failed to {step}: {lines[-1]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--storage", type=Path, required=True)
    parser.add_argument("--collection", required=True)
    parser.add_argument("--answers", type=int, default=40)
    parser.add_argument("--add", help="the PDF added and deleted while serving")
    parser.add_argument("--question", default="", help="a question about the added PDF")
    parser.add_argument("--writer-process", action="store_true")
    parser.add_argument("--write", choices=("add", "delete"))
    parser.add_argument("--pdf", type=Path)
    args = parser.parse_args()
    if args.write:
        from benchmarks.systems.project import project_engine

        engine = project_engine(args.storage)
        write(engine, args.collection, args.write, args.pdf)
        engine.close()
        return
    print(json.dumps(measure(args)))


if __name__ == "__main__":
    main()
