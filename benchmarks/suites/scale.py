"""A library at scale, per serving process: resident memory, cold open, retrieve and answer
latency with 1 and 4 clients, the first question after another process adds or deletes a
document, storage per chunk, and the labelled questions' page hits inside the big library
beside the same questions in their own small library.

The libraries grow realistically (`benchmarks/datasets/realistic_copies.py`): every shared PDF
is ingested once into the source collection `library` (the one the library suite asks), which
goes into each big library unchanged (the labelled documents are inside it), followed by copies
of its documents whose names are renamed per copy, whose years are shifted by a per-copy offset
(text, metadata, cards, trees, document names) and whose sentence, chunk and page vectors carry
Gaussian noise of 0.48 of their norm, normalised again (cosine ~0.90 to the source). Copies are
written in bulk through the project's stores (`benchmarks/datasets/scaled_library.py`), nothing
is embedded again; build time is measured.

Deployments (`--milvus`): `lite`, the embedded default (Milvus Lite, SQLite, keyword files), and
`server`, a Milvus 2.3.5 standalone server started through `devservers.py` (docstore SQLite and
keyword files: no mongod runs here). Every (deployment, size) has its own storage folder, kept
and reused by later runs; a size whose estimated storage exceeds the free disk, or whose serving
process would exceed the available memory (extrapolated from the largest size measured on that
deployment, in this run or the newest earlier record), is refused with one sentence, and each
size's record says what ran. A run keeps the rows of the newest earlier record for the sizes it
does not measure (each says when it was measured):

    python -m benchmarks run --suite scale --milvus lite server --sizes 10000 100000 1000000
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.datasets.library import EVAL, shared_pdfs
from benchmarks.records import Record
from benchmarks.suites import SuiteOptions
from benchmarks.systems.process import PROJECT, base_environment

SOURCE = "library"
ADDED_SET = EVAL / "financebench_dev"  # not in the library: an add is a new document
DISK_MARGIN = 1.25  # the storage estimate's margin over the measured bytes per chunk
DISK_RESERVE = 5e9  # left free for everyone else on the machine
MEASURE_TIMEOUT_S = 3 * 3600
DEPLOYMENTS = {
    "lite": "embedded: Milvus Lite, SQLite docstore, bm25s keyword files",
    "server": "Milvus 2.3.5 standalone server (devservers.py), SQLite docstore, bm25s keyword "
    "files (no BM25 function before Milvus 2.5)",
}


def folder_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else 0


def storage_bytes(storage: Path, server_data: Path | None) -> dict[str, int]:
    """Bytes of each store: the docstore file, Milvus (Lite folder or server data), keywords."""
    docstore = sum(folder_bytes(p) for p in storage.glob("docstore.sqlite*"))
    milvus = folder_bytes(server_data) if server_data else folder_bytes(storage / "milvus.db")
    return {"docstore": docstore, "milvus": milvus, "keywords": folder_bytes(storage / "keywords")}


def added_document() -> tuple[Path, str]:
    """The smallest financebench PDF that one of its questions asks about, and that question."""
    questions = json.loads((ADDED_SET / "questions.json").read_text(encoding="utf-8"))
    asked = {q["document"]: q["question"] for q in reversed(questions)}
    pdfs = [ADDED_SET / "pdfs" / name for name in asked if (ADDED_SET / "pdfs" / name).is_file()]
    smallest = min(pdfs, key=lambda p: p.stat().st_size)
    return smallest, asked[smallest.name]


def ingest_source(source: Path) -> int:
    """The shared PDFs in the source collection (each PDF already there is skipped)."""
    from benchmarks.systems.project import project_engine

    engine = project_engine(source)
    try:
        for pdf in shared_pdfs():
            engine.ingest(pdf, SOURCE)
        return engine.vectors.count(SOURCE)
    finally:
        engine.close()


def refusal(size: int, folder: Path, per_chunk: float, basis: str) -> str:
    """One sentence when the disk cannot hold `size` chunks, else ''."""
    need = per_chunk * size * DISK_MARGIN - folder_bytes(folder)
    free = shutil.disk_usage(folder.parent).free - DISK_RESERVE
    if need <= free:
        return ""
    return (
        f"{size:,} chunks need about {need / 1e9:.0f} GB more on {folder.parent} "
        f"({per_chunk / 1e3:.0f} KB per chunk, {basis}, plus {DISK_MARGIN - 1:.0%}) and it has "
        f"{max(free, 0) / 1e9:.0f} GB free beyond a {DISK_RESERVE / 1e9:.0f} GB reserve; not built."
    )


def memory_refusal(size: int, own: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """One sentence when a serving process of `size` chunks would not fit in this machine's
    available memory, extrapolated linearly from the largest library measured so far; ''
    when nothing was measured yet."""
    ran = [r for r in rows if r.get("status") == "ran"]
    if not ran or "after_questions" not in own:
        return ""
    largest = max(ran, key=lambda r: r["measure"]["chunks"])
    base = own["after_questions"]["rss_mb"]
    per_chunk = (largest["measure"]["after_questions"]["rss_mb"] - base) / max(
        largest["measure"]["chunks"] - own["chunks"], 1
    )
    need = base + per_chunk * size
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        available = next(int(line.split()[1]) for line in meminfo if "MemAvailable" in line) / 1024
    if need <= 0.8 * available:
        return ""
    return (
        f"a process serving {size:,} chunks would hold about {need / 1024:.0f} GB "
        f"({per_chunk * 1024:.0f} KB per chunk from {largest['measure']['chunks']:,} chunks) and "
        f"this machine has {available / 1024:.0f} GB available; not built."
    )


def build(
    source: Path, folder: Path, size: int, milvus_uri: str, server_empty_bytes: int = 0
) -> dict[str, Any]:
    """The big library in `folder` (kept when a finished build of this size is there); on a
    server, what its data folder held before is kept with it."""
    from benchmarks.datasets.scaled_library import build_scaled_library
    from benchmarks.systems.project import project_engine

    marker = folder / "build.json"
    if marker.is_file():
        built: dict[str, Any] = json.loads(marker.read_text())
        if built.get("min_chunks") == size:
            return built
    environment = {"MILVUS_URI": milvus_uri} if milvus_uri else {}
    reader = project_engine(source)
    target = project_engine(folder, environment)
    try:
        summary = build_scaled_library(reader.stores, SOURCE, target.stores, f"scale_{size}", size)
    finally:
        target.close()
        reader.close()
    built = {"min_chunks": size, **vars(summary)}
    if milvus_uri:
        built["server_empty_bytes"] = server_empty_bytes
    marker.write_text(json.dumps(built))
    return built


def flush_server(uri: str, collection: str) -> None:
    """Seal the server's growing segments so that its data folder holds what it stores."""
    from pymilvus import MilvusClient

    from citerag.store.milvus_index import milvus_collection_name

    client = MilvusClient(uri)
    client.flush(milvus_collection_name(collection))
    client.close()


def serve_measure(folder: Path, size: int, milvus_uri: str, options: SuiteOptions) -> Any:
    pdf, question = added_document()
    command = [sys.executable, "-m", "benchmarks.suites.scale_measure", "--storage", str(folder)]
    command += ["--collection", f"scale_{size}", "--answers", str(options.questions)]
    command += ["--add", str(pdf), "--question", question]
    if milvus_uri:
        command.append("--writer-process")
    env = base_environment({"MILVUS_URI": milvus_uri} if milvus_uri else {})
    return child(command, env)


def child(command: list[str], env: dict[str, str]) -> Any:
    """A measuring process's JSON, or {"failed": its last error line}."""
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=PROJECT, env=env, timeout=MEASURE_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return {"failed": f"no result within {MEASURE_TIMEOUT_S} s"}
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        return {"failed": lines[-1] if lines else f"exit status {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def one_size(
    deployment: str,
    size: int,
    root: Path,
    per_chunk: tuple[float, str],
    options: SuiteOptions,
    memory: str = "",
) -> dict[str, Any]:
    from devservers import start_milvus

    folder = root / f"{deployment}_{size}"
    row: dict[str, Any] = {"deployment": deployment, "size": size, "folder": str(folder)}
    refused = refusal(size, folder, *per_chunk) or memory
    if refused:
        print(f"scale: {refused}", flush=True)
        return {**row, "status": "refused", "why": refused}
    folder.mkdir(parents=True, exist_ok=True)
    server = None
    try:
        server = start_milvus(folder / "milvus_server") if deployment == "server" else None
        uri = server.uri if server else ""
        # What the server holds before the library is written (etcd, logs of its own), taken
        # when the library is built: a kept library's server folder already holds it.
        empty = folder_bytes(folder / "milvus_server" / "data") if server else 0
        row["load_before"] = os.getloadavg()[0]
        row["build"] = build(root / "source", folder, size, uri, empty)
        print(f"scale: {deployment} {size:,} built: {row['build']}", flush=True)
        if server:
            flush_server(uri, f"scale_{size}")
        data = folder / "milvus_server" / "data" if server else None
        row["storage_bytes"] = storage_bytes(folder, data)
        row["measure"] = serve_measure(folder, size, uri, options)
        print(f"scale: {deployment} {size:,} measured: {row['measure']}", flush=True)
    except Exception as error:  # a size that cannot be built or served is recorded, not fatal
        return {**row, "status": "failed", "why": f"{type(error).__name__}: {error}"[:500]}
    finally:
        if server:
            server.stop()
    failed = row["measure"].get("failed")
    return {**row, "status": "failed", "why": failed} if failed else {**row, "status": "ran"}


def carried_rows(rows: list[dict[str, Any]], variant: str) -> list[dict[str, Any]]:
    """The rows of the newest earlier scale record for sizes this run did not measure, each
    saying when it was measured: a run of one more size keeps the others in the results file."""
    from benchmarks.records import latest_records

    earlier = [r for r in latest_records().values() if r.suite == "scale" and r.variant == variant]
    if not earlier:
        return []
    record = earlier[0]
    done = {(r["deployment"], r["size"]) for r in rows}
    stamp = f"{record.date} at commit {record.commit}"
    return [
        {**r, "measured": r.get("measured", stamp)}
        for r in record.metrics.get("rows", [])
        if (r["deployment"], r["size"]) not in done
    ]


def run(options: SuiteOptions) -> Record:
    root = options.storage_for("scale")
    source = root / "source"
    started = time.perf_counter()
    source_chunks = ingest_source(source)
    source_s = time.perf_counter() - started
    own = child(
        [sys.executable, "-m", "benchmarks.suites.scale_measure", "--storage", str(source)]
        + ["--collection", SOURCE, "--answers", str(options.questions)],
        base_environment(),
    )
    stored = storage_bytes(source, None)
    per_chunk = (sum(stored.values()) / max(source_chunks, 1), "measured on the source library")
    rows: list[dict[str, Any]] = []
    earlier = carried_rows([], options.variant)
    for deployment in options.milvus:
        for size in options.sizes:
            measured = [r for r in earlier + rows if r["deployment"] == deployment]
            memory = memory_refusal(size, own, measured)
            row = one_size(deployment, size, root, per_chunk, options, memory)
            rows.append(row)
            if row.get("storage_bytes") and row["build"].get("chunks"):
                per_chunk = (
                    sum(row["storage_bytes"].values()) / row["build"]["chunks"],
                    f"measured at {row['build']['chunks']:,} chunks on {deployment}",
                )
    rows += carried_rows(rows, options.variant)
    rows.sort(key=lambda r: (list(DEPLOYMENTS).index(r["deployment"]), r["size"]))
    return Record(
        suite="scale",
        command=options.command,
        variant=options.variant,
        settings=dict(options.settings),
        systems={d: DEPLOYMENTS[d] for d in dict.fromkeys(r["deployment"] for r in rows)},
        datasets={
            "source": f"the shared library ({source_chunks:,} chunks), kept inside every size",
            "questions": "every labelled question of the library suite (10-K finance_qa and "
            f"MMLongBench-Doc dev), the first {options.questions} also answered",
            "added": added_document()[0].name,
        },
        metrics={"rows": rows, "own_library": own, "source_storage_bytes": stored},
        timings={"source_ingest_s": source_s, "load": [round(x, 2) for x in os.getloadavg()]},
    )
