"""The project as a benchmark system: one collection per PDF, retrieval through its own parts.

`ProjectSystem.retrieve` runs what `Engine.retrieve` runs (the hybrid retriever and the
reranker postprocessor) with the settings of one variant, so several variants (page evidence
on/off, each reranker) are measured over the same stored data in one process.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from llama_index.core.schema import QueryBundle

from benchmarks.baselines import RetrievedPassage
from citerag.engine import Engine
from citerag.ingest.pipeline import Ingestor
from citerag.nodes import doc_name_of, page_of
from citerag.query.query_factory import QueryFactory
from citerag.settings import Settings

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
