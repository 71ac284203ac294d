"""The project as a benchmark system.

Two shapes: the library (every PDF in one collection, ingested by `main.py ingest` in a fresh
process, asked through the engine or through one variant's retriever) and one collection per
PDF (`ProjectSystem`). A variant's retrieve runs what `Engine.retrieve` runs (the hybrid
retriever and the reranker postprocessor) with the variant's settings, so several variants are
measured over the same stored data in one process.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from llama_index.core.schema import QueryBundle

from benchmarks.systems.process import PROJECT, base_environment, timed_run
from benchmarks.systems.profiles import with_finance_words
from benchmarks.systems.stock_llamaindex import RetrievedPassage
from citerag.engine import Engine
from citerag.ingest.pipeline import Ingestor
from citerag.nodes import doc_name_of, page_of
from citerag.query.query_factory import QueryFactory
from citerag.settings import Settings

Place = tuple[str, int, str]  # (document name, 1-based page, chunk text), in rank order
Retrieve = Callable[[str], list[Place]]
# The environment variable that switches rankers off by name (a comma-separated list).
DISABLED_RANKERS = "DISABLED_RANKERS"

# Settings that shape the stored chunks: a variant changing one is ingested into its own
# collections.
INGEST_KEYS = ("chunk_size", "chunk_overlap", "parser", "mineru_tier", "sentence_vectors")


def collection_for(pdf_name: str, tag: str = "") -> str:
    return "b" + hashlib.sha256(f"{pdf_name}{tag}".encode()).hexdigest()[:12]


def ingest_tag(changes: Mapping[str, object]) -> str:
    """'' for the engine's own chunk settings, else a tag naming the changed ones."""
    shaping = sorted((k, v) for k, v in changes.items() if k in INGEST_KEYS)
    return "".join(f":{k}={v}" for k, v in shaping)


def ingest_all(
    engine: Engine, pdfs: Sequence[Path], changes: Mapping[str, object] | None = None
) -> list[tuple[str, int, int, float]]:
    """Ingest each PDF into its own collection, under the engine's settings with `changes`;
    (name, pages, chunks, seconds) per PDF."""
    changes = dict(changes or {})
    tag = ingest_tag(changes)
    ingestor: Engine | Ingestor = engine
    if tag:
        settings = engine.settings.with_overrides(**changes)
        ingestor = Ingestor(settings, engine.stores, engine.embedder)
    rows = []
    for pdf in pdfs:
        outcome = ingestor.ingest(pdf, collection_for(pdf.name, tag))
        rows.append((pdf.name + tag, outcome.pages, outcome.chunks, outcome.seconds))
        print(f"ingested {pdf.name}{tag}: {outcome.status}, {outcome.chunks} chunks")
    return rows


class ProjectSystem:
    def __init__(self, name: str, engine: Engine, settings: Settings, tag: str = "") -> None:
        self.name = name
        self._tag = tag
        self._engine = engine
        self._factory = QueryFactory(
            settings, engine.docstore, engine.vectors, engine.embed_model, engine.embedder
        )

    def retrieve(self, question: str, document: str, top_k: int) -> list[RetrievedPassage]:
        collection = collection_for(document, self._tag)
        state = self._engine.collection_state(collection)
        query = QueryBundle(question)
        nodes = self._factory.retriever(state).retrieve(query)
        reranker = self._factory.postprocessors(collection, top_k).reranker
        ranked = reranker.postprocess_nodes(nodes, query_bundle=query)
        return [
            RetrievedPassage(
                doc_name_of(n.node), page_of(n.node), n.node.get_content(), n.score or 0
            )
            for n in ranked
        ]


def project_variants(
    engine: Engine, variants: Mapping[str, Mapping[str, object]]
) -> list[ProjectSystem]:
    return [
        ProjectSystem(name, engine, engine.settings.with_overrides(**changes), ingest_tag(changes))
        for name, changes in variants.items()
    ]


def project_environment(
    storage: Path, settings: Mapping[str, str], disabled_rankers: Sequence[str] = ()
) -> dict[str, str]:
    """The variables `main.py` and the engine read: the storage, each changed setting under its
    upper-case name, and the rankers switched off."""
    env = {"RAG_STORAGE_DIR": str(storage), **{k.upper(): v for k, v in settings.items()}}
    if disabled_rankers:
        env[DISABLED_RANKERS] = ",".join(disabled_rankers)
    return env


def project_engine(storage: Path, environment: Mapping[str, str] | None = None) -> Engine:
    """The engine as `main.py` opens it (config.py's settings and `environment`), on `storage`,
    with the finance words every suite retrieves with."""
    import config
    from citerag.settings import settings_from_config

    environ = {**os.environ, **(environment or {}), "RAG_STORAGE_DIR": str(storage)}
    return Engine(with_finance_words(settings_from_config(config, environ=environ)))


def timed_library_ingest(
    folders: Sequence[Path], collection: str, environment: Mapping[str, str]
) -> dict[str, Any]:
    """`main.py ingest` of `folders` into one collection, one fresh process timed from outside;
    {seconds, total: the ingest's own summary line}."""
    command = [sys.executable, str(PROJECT / "main.py"), "ingest", *map(str, folders)]
    seconds, stdout = timed_run(
        [*command, "--collection", collection], base_environment(environment)
    )
    return {"seconds": seconds, "total": stdout.strip().splitlines()[-1]}


def engine_retrieve(engine: Engine, collection: str) -> Retrieve:
    """What the engine retrieves for a question, as places."""
    return lambda question: [
        (doc_name_of(hit.node), page_of(hit.node), hit.node.get_content())
        for hit in engine.retrieve(question, collection)
    ]


def variant_retrieve(
    engine: Engine, collection: str, changes: Mapping[str, object], top_k: int
) -> Retrieve:
    """The engine's retrieve over its stores with `changes` to its settings."""
    settings = engine.settings.with_overrides(**changes)
    factory = QueryFactory(
        settings, engine.docstore, engine.vectors, engine.embed_model, engine.embedder
    )
    state = engine.searchable_state(collection)

    def retrieve(question: str) -> list[Place]:
        query = QueryBundle(question)
        nodes = factory.retriever(state).retrieve(query)
        ranked = factory.postprocessors(collection, top_k).reranker.postprocess_nodes(nodes, query)
        return [(doc_name_of(n.node), page_of(n.node), n.node.get_content()) for n in ranked]

    return retrieve
