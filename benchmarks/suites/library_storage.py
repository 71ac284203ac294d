"""The library ingested by every system, each ingest timed as a fresh process.

The library and kinds suites ask their questions of the same stored ingests (`--reuse` keeps
them and the timings measured when they were made).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from benchmarks.datasets.library import PDF_FOLDERS, shared_pdfs
from benchmarks.suites import SuiteOptions
from benchmarks.systems.process import base_environment, fresh_cache_home, python_module, timed_run
from benchmarks.systems.project import project_environment, timed_library_ingest

COLLECTION = "library"
STOCK, LEAN, PROJECT_DIR = "stock", "lean", "project"
TIMINGS = "ingest.json"


def lever_settings(lever: str) -> dict[str, str]:
    """'onnx-int8', 'pooled' or both ('onnx-int8+pooled') as the settings that set them."""
    settings: dict[str, str] = {}
    for part in lever.split("+"):
        key = "sentence_vectors" if part in ("separate", "pooled") else "embedding_backend"
        settings[key] = part
    return settings


def settings_label(settings: dict[str, str]) -> str:
    """The embedding settings an ingest ran with, 'auto' named as what it picks here."""
    from citerag.embed.embedder import Embedder
    from citerag.settings import Settings

    backend = settings.get("embedding_backend", "auto")
    if backend == "auto":
        backend = f"auto ({Embedder(backend=backend).backend})"
    vectors = settings.get("sentence_vectors", Settings().embedding.sentence_vectors)
    return f"embedding_backend={backend}, sentence_vectors={vectors}"


def stock_ingest(module: str, persist: Path, pdfs: list[Path]) -> dict[str, Any]:
    command = python_module(module, "--persist", str(persist), *map(str, pdfs))
    seconds, stdout = timed_run(command, base_environment())
    stats = json.loads(stdout.strip().splitlines()[-1])
    print(f"{module}: {seconds:.1f} s ({stats['chunks']} chunks)", flush=True)
    return {"seconds": seconds, **stats}


def project_ingest(
    options: SuiteOptions, folder: Path, settings: dict[str, str], cache: Path
) -> dict[str, Any]:
    env = project_environment(folder, settings, options.disabled_rankers)
    if options.fresh_caches:
        env["XDG_CACHE_HOME"] = str(fresh_cache_home(cache))
    row = timed_library_ingest(PDF_FOLDERS, COLLECTION, env)
    print(f"project ingest ({settings_label(settings)}): {row['seconds']:.1f} s", flush=True)
    return row


def prepared_library(options: SuiteOptions) -> dict[str, Any]:
    """Every system's ingest of the library under `options.storage`, and their timings:
    {system: {seconds, chunks, ...}, "project": {settings label: {seconds, total}}}."""
    storage = options.storage_for("library")
    timings = storage / TIMINGS
    if options.reuse and timings.is_file():
        return dict(json.loads(timings.read_text(encoding="utf-8")))
    shutil.rmtree(storage, ignore_errors=True)
    storage.mkdir(parents=True)
    pdfs = shared_pdfs()
    found: dict[str, Any] = {
        "stock LlamaIndex": stock_ingest(
            "benchmarks.systems.stock_llamaindex", storage / STOCK, pdfs
        ),
        "stock lean": stock_ingest("benchmarks.systems.stock_lean", storage / LEAN, pdfs),
        "project": {},
    }
    own = dict(options.settings)
    found["project"][settings_label(own)] = project_ingest(
        options, storage / PROJECT_DIR, own, storage / "cache-project"
    )
    for lever in options.levers:
        settings = {**own, **lever_settings(lever)}
        row = project_ingest(options, storage / lever, settings, storage / f"cache-{lever}")
        found["project"][settings_label(settings)] = row
        shutil.rmtree(storage / lever, ignore_errors=True)
    for cache in storage.glob("cache-*"):
        shutil.rmtree(cache, ignore_errors=True)
    timings.write_text(json.dumps(found, indent=1), encoding="utf-8")
    return found
